"""`proctor ask --live --otel` against the vendor stub (the real openai SDK over loopback HTTP)
into a real OTLP/HTTP receiver: the run span, the model turns with their token usage, the
governed calls; a held call resumed by `proctor approvals resume --otel` in another process
joins the same trace."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness import _exit_codes as codes
from stubs.openai_stub import DEFAULT_MODEL, running_stub
from tests.otel_receiver import OtlpReceiver

pytestmark = pytest.mark.slow

# Requests phrased for the stub's word-overlap tool chooser (stubs/openai_stub/_model.py).
LOOKUP = "Look up order ORD-0001 and tell me its status."
EMAIL = 'Send an email to bob@example.com with the subject "Hello" saying hello.'
API_KEY = "sk-proctor-otel-test-0123456789abcdef"


@pytest.fixture(scope="module")
def stub_url() -> Iterator[str]:
    with running_stub() as url:
        yield url


@pytest.fixture
def receiver(tmp_path: Path) -> Iterator[OtlpReceiver]:
    with OtlpReceiver(tmp_path) as started:
        yield started


def _proctor(tmp_path: Path, stub_url: str, endpoint: str, *args: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PROCTOR_", "OTEL_"))}
    env.update(
        PROCTOR_LLM_BASE_URL=stub_url,
        PROCTOR_LLM_MODEL=DEFAULT_MODEL,
        PROCTOR_LLM_API_KEY=API_KEY,
        OTEL_EXPORTER_OTLP_ENDPOINT=endpoint,
    )
    done = subprocess.run(
        [sys.executable, "-m", "harness", *args, "--state-dir", str(tmp_path / "state")],
        cwd=tmp_path,  # no .env of the checkout's
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == codes.OK, done.stdout + done.stderr
    return done.stdout


def _named(spans: list[dict[str, Any]], prefix: str) -> list[dict[str, Any]]:
    return sorted((s for s in spans if s["name"].startswith(prefix)), key=lambda s: s["start_ns"])


def test_a_live_ask_exports_its_run_its_turns_with_token_usage_and_its_call(
    tmp_path: Path, stub_url: str, receiver: OtlpReceiver
) -> None:
    _proctor(tmp_path, stub_url, receiver.endpoint, "ask", "--live", "--otel", LOOKUP,
             "--run-id", "r-lookup")  # fmt: skip
    spans = receiver.spans()
    (run,) = _named(spans, "invoke_agent ")
    turns, calls = _named(spans, "chat "), _named(spans, "execute_tool ")
    assert len(turns) + len(calls) + 1 == len(spans)
    assert {s["trace_id"] for s in spans} == {run["trace_id"]}
    assert {s["parent_span_id"] for s in turns + calls} == {run["span_id"]}
    assert {s["resource"]["proctor.role"] for s in spans} == {"ask"}
    assert run["attributes"]["proctor.run.id"] == "r-lookup"
    assert run["attributes"]["proctor.run.status"] == "completed"
    assert [t["name"] for t in turns] == [f"chat {DEFAULT_MODEL}"] * 2
    for turn in turns:
        attributes = turn["attributes"]
        assert attributes["gen_ai.request.model"] == DEFAULT_MODEL
        assert attributes["gen_ai.usage.input_tokens"] > 0
        assert attributes["gen_ai.usage.output_tokens"] > 0
        assert turn["start_ns"] < turn["end_ns"]
    assert [t["attributes"]["gen_ai.response.finish_reasons"] for t in turns] == [
        ["tool_calls"],
        ["stop"],
    ]
    (call,) = calls
    assert call["attributes"]["gen_ai.tool.name"] == "orders.lookup"
    assert call["attributes"]["proctor.decision.effect"] == "allow"
    assert call["attributes"]["proctor.outcome"] == "executed"
    # The turns are timed around each HTTP exchange: the call runs between the two.
    assert turns[0]["end_ns"] <= call["start_ns"] <= call["end_ns"] <= turns[1]["start_ns"]
    assert API_KEY not in receiver.raw_text()


def test_a_held_call_resumed_by_another_process_joins_the_trace_of_its_run(
    tmp_path: Path, stub_url: str, receiver: OtlpReceiver
) -> None:
    _proctor(tmp_path, stub_url, receiver.endpoint, "ask", "--live", "--otel", EMAIL,
             "--run-id", "r-mail")  # fmt: skip
    _proctor(tmp_path, stub_url, receiver.endpoint, "approvals", "approve", "apr-1",
             "--reviewer", "rita")  # fmt: skip
    _proctor(tmp_path, stub_url, receiver.endpoint, "approvals", "resume", "r-mail", "--otel")
    spans = receiver.spans()
    held, resumed = _named(spans, "invoke_agent ")
    assert {s["trace_id"] for s in spans} == {held["trace_id"]}
    assert held["span_id"] != resumed["span_id"]
    assert held["attributes"]["proctor.run.status"] == "waiting_approval"
    assert resumed["attributes"]["proctor.run.status"] == "completed"
    first, then = _named(spans, "execute_tool ")
    assert first["parent_span_id"] == held["span_id"]
    assert then["parent_span_id"] == resumed["span_id"]
    assert [c["attributes"]["proctor.outcome"] for c in (first, then)] == ["held", "executed"]
    assert [c["attributes"]["proctor.approval.id"] for c in (first, then)] == ["apr-1"] * 2
    (after,) = [t for t in _named(spans, "chat ") if t["parent_span_id"] == resumed["span_id"]]
    assert after["attributes"]["gen_ai.usage.input_tokens"] > 0
