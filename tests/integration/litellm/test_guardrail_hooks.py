"""Proctor's guardrail hooks called with LiteLLM 1.110's own objects (in a child process:
LiteLLM is heavy): every response shape the post-call hooks can receive, the MCP arguments
LiteLLM would execute, the settings that would undo the guardrail, and what a client learns
when the store is down."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.integration import _node
from tests.integration.litellm import _proxy

PROBE = Path(__file__).with_name("_hook_probe.py")


@pytest.fixture(scope="module")
def seen(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    _proxy.require_litellm()
    root = tmp_path_factory.mktemp("hooks")
    done = subprocess.run(
        [sys.executable, str(PROBE), str(root)],
        capture_output=True,
        text=True,
        env=_node.clean_env(LITELLM_LOCAL_MODEL_COST_MAP="True", PYTHONPATH=str(_proxy.ROOT)),
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    observed: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    observed["log"] = done.stderr
    return observed


def test_a_client_never_learns_the_store_url_when_the_store_is_down(
    seen: dict[str, Any],
) -> None:
    answer = seen["unavailable"]
    assert answer["status"] == 503
    assert answer["detail"]["error"] == "Proctor's stores are unavailable; nothing was executed"
    assert answer["detail"]["code"] == "proctor_unavailable"
    shown = json.dumps(answer)
    for secret in ("s3cr", "zzet", "db.internal", "proctor@", "5432"):
        assert secret not in shown
    # the server log has the detail, with the incident id the client got, but no password
    assert answer["detail"]["incident"] in seen["log"]
    assert "db.internal" in seen["log"]
    assert "s3cr" not in seen["log"]


@pytest.mark.parametrize("label", ["list", "string", "number"])
def test_mcp_arguments_that_are_not_an_object_are_refused_before_judging(
    seen: dict[str, Any], label: str
) -> None:
    answer = seen["mcp"][label]
    assert answer["status"] == 403
    assert answer["detail"]["code"] == "arguments_not_an_object"
    assert seen["mcp"]["audited_runs"] == []  # never judged as `{}`, never handed over


def test_judged_arguments_litellm_would_read_as_unchanged_are_never_executed(
    seen: dict[str, Any],
) -> None:
    # LiteLLM runs the raw arguments when `modified_arguments` is empty
    assert seen["mcp"]["empty_judged_nonempty_raw"]["status"] == 403
    assert seen["mcp"]["withdrawn"] == ["judged_arguments_inexpressible"]
    assert seen["mcp"]["empty_both"] == {"status": 200, "modified": {}}


@pytest.mark.parametrize(
    ("label", "what"),
    [
        ("post_call_only", "leaves out pre_mcp_call"),
        ("pre_call_only", "leaves out pre_mcp_call"),
        ("run_in_parallel", "run_in_parallel: true is not supported"),
        ("scan_raw_request", "scan_raw_request: true is not supported"),
    ],
)
def test_settings_that_skip_or_undo_the_decision_stop_the_guardrail(
    seen: dict[str, Any], label: str, what: str
) -> None:
    assert what in seen["config"][label]


def test_a_legacy_function_call_in_a_chat_completion_is_withheld(seen: dict[str, Any]) -> None:
    choice = seen["responses"]["legacy"]
    assert choice["message"]["function_call"] is None
    assert "the call to delete_everything was withheld" in choice["message"]["content"]
    assert choice["finish_reason"] == "stop"


def test_a_responses_api_response_keeps_only_the_allowed_function_call(
    seen: dict[str, Any],
) -> None:
    output = seen["responses"]["responses"]
    assert [(item["type"], item.get("name")) for item in output] == [
        ("function_call", "lookup"),
        ("message", None),
    ]
    assert "delete_everything was withheld" in output[-1]["content"][0]["text"]


def test_an_anthropic_message_loses_its_withheld_tool_use(seen: dict[str, Any]) -> None:
    message = seen["responses"]["messages"]
    assert [block["type"] for block in message["content"]] == ["text"]
    assert message["stop_reason"] == "end_turn"


def test_a_tool_call_in_a_shape_proctor_does_not_know_withholds_the_response(
    seen: dict[str, Any],
) -> None:
    answer = seen["responses"]["unrecognised"]
    assert answer["status"] == 502
    assert answer["detail"]["code"] == "proctor_unrecognised_tool_call"


def test_a_streamed_legacy_function_call_is_withheld(seen: dict[str, Any]) -> None:
    chunks = seen["responses"]["stream"]
    assert all(not c["choices"][0]["delta"].get("function_call") for c in chunks)
    text = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks)
    assert "the call to delete_everything was withheld" in text
    assert chunks[-1]["choices"][0]["finish_reason"] == "stop"


def test_key_and_team_opt_outs_switch_proctor_off_for_neither_mcp_calls_nor_responses(
    seen: dict[str, Any],
) -> None:
    # [pre_mcp_call, post_call]: the non-streamed and the streamed post-call paths both ask
    assert seen["opt_outs"] == {"disabled": [True, True], "opted_out": [True, True]}
