"""Free text the model or the caller chooses (a proposed tool's name, the agent's
name) reaches the backend only as the audit chain keeps it - redacted."""

from __future__ import annotations

from pathlib import Path

import pytest

from governance import Gateway, ManualClock, Principal, ToolCall
from governance.telemetry import Telemetry, telemetry_config
from tests.fake_secrets import AWS, GITHUB
from tests.otel_receiver import OtlpReceiver

pytestmark = pytest.mark.slow

POLICY = """\
version: 1
defaults: {unknown_tool: block, no_match: block}
rules:
  - {id: r, effect: allow, match: {tool: kb.read}}
"""


def _export(tmp_path: Path, calls: list[ToolCall]) -> tuple[str, str]:
    """(everything the receiver got, the audit chain's text) after `calls`."""
    policy = tmp_path / "policy.yaml"
    policy.write_text(POLICY)
    (tmp_path / "otel").mkdir()
    with OtlpReceiver(tmp_path / "otel") as receiver:
        config = telemetry_config(flag=False, environ={"PROCTOR_OTEL_ENDPOINT": receiver.endpoint})
        assert config is not None
        telemetry = Telemetry.start(config, service_role="serve")
        with Gateway(
            state_dir=tmp_path / "state", policy_path=policy, clock=ManualClock(),
            builtin=False, telemetry=telemetry, audit_key_from_env=False,
        ) as opened:  # fmt: skip
            opened.firewall.record_run_event("run-1", "run.started", {"provider": "replay"})
            for call in calls:
                assert opened.firewall.call(call).outcome == "blocked"
            opened.firewall.record_run_event("run-1", "run.finished", {"status": "completed"})
            audit = repr([dict(e.data) for c in calls for e in opened.audit.events(c.run_id)])
            telemetry.shutdown(timeout_seconds=20)
        assert receiver.wait_for(lambda r: len(r.spans()) > len(calls))
        return receiver.raw_text(), audit


def test_a_proposed_tool_name_holding_a_secret_reaches_the_backend_redacted(
    tmp_path: Path,
) -> None:
    call = ToolCall("c1", AWS, {}, "run-1", Principal("ann", "bot", "ops"))
    received, audit = _export(tmp_path, [call])
    assert AWS not in audit  # the audit chain redacts the tool name...
    assert AWS not in received  # ...the span name and gen_ai.tool.name must too


def test_an_agent_name_holding_a_secret_reaches_the_backend_redacted(tmp_path: Path) -> None:
    call = ToolCall("c1", "no.such", {}, "run-1", Principal("ann", GITHUB, "ops"))
    received, audit = _export(tmp_path, [call])
    assert GITHUB not in audit
    assert GITHUB not in received


def test_a_model_name_holding_a_secret_reaches_neither_spans_nor_metrics(tmp_path: Path) -> None:
    from governance.telemetry import TurnRecord

    (tmp_path / "otel").mkdir()
    with OtlpReceiver(tmp_path / "otel") as receiver:
        config = telemetry_config(flag=False, environ={"PROCTOR_OTEL_ENDPOINT": receiver.endpoint})
        assert config is not None
        telemetry = Telemetry.start(config, service_role="ask")
        telemetry.model_turn(
            TurnRecord(
                run_id="run-1", started_ns=1, ended_ns=2, provider="openai", model=AWS,
                live=True, input_tokens=3, output_tokens=4, finish_reason="stop",
                tool_calls=0, error_kind=None,
            )  # fmt: skip
        )
        telemetry.shutdown(timeout_seconds=20)
        assert receiver.wait_for(lambda r: bool(r.spans()) and bool(r.metrics()))
        received = receiver.raw_text()
    assert "gen_ai.client.token.usage" in received  # the metrics did arrive
    assert AWS not in received
