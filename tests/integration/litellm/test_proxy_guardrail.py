"""Proctor's guardrail inside the REAL LiteLLM proxy (its CLI, a config file, the demo MCP
server over stdio behind LiteLLM's MCP gateway, Proctor's vendor stub as the model).

One proxy serves the module (it takes half a minute to start); every test uses its own tool or
arguments, so none depends on another's traffic. The demo server logs each call it receives:
where nothing may have run, the test asserts the server never saw the call.
"""

from __future__ import annotations

import json
import re
import secrets
from collections.abc import Iterator
from pathlib import Path

import pytest

from stubs.openai_stub import running_stub
from tests.integration.litellm import _proxy

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def proxy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[_proxy.Proxy]:
    _proxy.require_litellm()
    workdir = tmp_path_factory.mktemp("litellm")
    state_dir = workdir / "state"
    with running_stub() as stub_url:
        config = _proxy.proxy_config(workdir, stub_url=stub_url, state_dir=state_dir)
        with _proxy.running_proxy(config, workdir, state_dir) as running:
            yield running


def _seen(proxy: _proxy.Proxy, tool: str, **arguments: object) -> int:
    """How many times the demo server received exactly this call (its defaults aside)."""
    return sum(
        1
        for call in proxy.received()
        if call["tool"] == tool
        and all(call["arguments"].get(k) == v for k, v in arguments.items())
    )


def test_an_allowed_call_runs_with_the_arguments_proctor_judged(proxy: _proxy.Proxy) -> None:
    text = f"hello-{secrets.token_hex(4)}"
    reply = proxy.call_rest("echo", {"text": text})
    assert reply.status_code == 200, reply.text
    assert reply.json()["content"][0]["text"] == text
    # The schema default Proctor applied (repeatCount) is what the server received.
    assert [c["arguments"] for c in proxy.received() if c["arguments"].get("text") == text] == [
        {"text": text, "repeatCount": 1}
    ]


def test_a_blocked_call_never_reaches_the_mcp_server(proxy: _proxy.Proxy) -> None:
    reply = proxy.call_rest("env", {})
    assert reply.status_code == 403
    detail = reply.json()["detail"]
    assert detail["status"] == "blocked"
    assert detail["reason"] == "blocked_by_rule"
    assert "nothing was executed" in detail["error"]
    assert _seen(proxy, "env") == 0


def test_the_mcp_endpoint_goes_through_the_same_hook(proxy: _proxy.Proxy) -> None:
    """Pins BerriAI/litellm#25011 (hooks skipped on `/mcp/` tool calls) as fixed in 1.110.x:
    a blocked call over LiteLLM's own MCP endpoint is refused and never reaches the server."""
    refused = proxy.call_mcp("env", {})
    assert refused["isError"] is True
    assert "blocked by Proctor (blocked_by_rule)" in refused["content"][0]["text"]
    assert _seen(proxy, "env") == 0
    text = f"over-mcp-{secrets.token_hex(4)}"
    allowed = proxy.call_mcp("echo", {"text": text})
    assert allowed["isError"] is False
    assert _seen(proxy, "echo", text=text) == 1


def test_a_held_call_waits_then_runs_once_after_a_reviewer_approves(
    proxy: _proxy.Proxy,
) -> None:
    target = f"db-{secrets.token_hex(4)}"
    first = proxy.call_rest("wipe", {"target": target})
    assert first.status_code == 403
    held = first.json()["detail"]
    assert held["status"] == "waiting_approval"
    approval_id = held["approval_id"]
    assert re.fullmatch(r"apr-[0-9]+", approval_id)
    assert f"waiting for approval ({approval_id}); nothing was executed" in held["error"]
    # A retry before any decision is the same request, still waiting: no second request.
    again = proxy.call_rest("wipe", {"target": target}).json()["detail"]
    assert (again["status"], again["approval_id"]) == ("waiting_approval", approval_id)
    assert again["run_id"] == held["run_id"]
    assert _seen(proxy, "wipe", target=target) == 0

    approved = _proxy.proctor(
        "approvals", "approve", approval_id, "--reviewer", "alice",
        "--state-dir", str(proxy.state_dir), "--policy", str(_proxy.POLICY),
    )  # fmt: skip
    assert approved.returncode == 0, approved.stderr
    assert "through the LiteLLM guardrail, by sending the same call again" in approved.stdout

    ran = proxy.call_rest("wipe", {"target": target})
    assert ran.status_code == 200, ran.text
    assert ran.json()["content"][0]["text"] == f"pretended to wipe {target}"
    assert _seen(proxy, "wipe", target=target) == 1
    # The approval was used up: the next identical call is a new request, and waits.
    after = proxy.call_rest("wipe", {"target": target}).json()["detail"]
    assert after["status"] == "waiting_approval"
    assert after["approval_id"] != approval_id
    assert _seen(proxy, "wipe", target=target) == 1

    shown = _proxy.proctor(
        "audit", "show", str(proxy.state_dir / "audit.sqlite"), "--run", held["run_id"]
    )
    kinds = re.findall(r"^\s+\d+\s+(\S+)", shown.stdout, flags=re.MULTILINE)
    assert kinds == [
        "tool.requested",
        "policy.decided",
        "approval.required",
        "approval.approved",
        "policy.rechecked",
        "approval.consumed",
        "execution.started",
        "execution.completed",
    ]


def test_an_approval_does_not_run_other_arguments(proxy: _proxy.Proxy) -> None:
    target = f"db-{secrets.token_hex(4)}"
    held = proxy.call_rest("wipe", {"target": target}).json()["detail"]
    approved = _proxy.proctor(
        "approvals", "approve", held["approval_id"], "--reviewer", "bob",
        "--state-dir", str(proxy.state_dir), "--policy", str(_proxy.POLICY),
    )  # fmt: skip
    assert approved.returncode == 0, approved.stderr
    other = proxy.call_rest("wipe", {"target": target + "-and-more"}).json()["detail"]
    assert other["status"] == "waiting_approval"
    assert other["approval_id"] != held["approval_id"]
    assert _seen(proxy, "wipe", target=target + "-and-more") == 0


def test_a_budget_stops_the_call_past_its_limit(proxy: _proxy.Proxy) -> None:
    for _ in range(2):
        assert proxy.call_rest("big", {"chars": 5}).status_code == 200
    third = proxy.call_rest("big", {"chars": 5})
    assert third.status_code == 403
    detail = third.json()["detail"]
    assert detail["reason"] == "budget_exhausted:actor"
    assert "big-per-actor" in detail["error"]
    assert _seen(proxy, "big", chars=5) == 2


def test_a_model_response_keeps_allowed_tool_calls_and_withholds_the_rest(
    proxy: _proxy.Proxy,
) -> None:
    env_tool = {
        "type": "function",
        "function": {
            "name": "demo-env",
            "description": "Return the environment variables of the server",
            "parameters": {"type": "object", "properties": {}},
        },
    }
    echo_tool = {
        "type": "function",
        "function": {
            "name": "demo-echo",
            "description": "Echo the text back",
            "parameters": {"type": "object", "properties": {"text": {"type": "string"}}},
        },
    }
    withheld = proxy.chat("Show the environment variables", [env_tool, echo_tool])
    message = withheld["choices"][0]["message"]
    assert not message.get("tool_calls")
    # blocked_by_rule once mcp.demo.env was seen over MCP, unknown_tool before: blocked either way
    assert "the call to demo-env was withheld (block: " in message["content"]
    kept = proxy.chat("Echo the text 'hi' back", [env_tool, echo_tool])
    calls = kept["choices"][0]["message"]["tool_calls"]
    assert [call["function"]["name"] for call in calls] == ["demo-echo"]
    # The model only proposed them: the MCP server ran neither.
    assert _seen(proxy, "env") == 0


def test_a_streamed_response_withholds_the_same_calls(proxy: _proxy.Proxy) -> None:
    tools = [
        {
            "type": "function",
            "function": {
                "name": name,
                "description": description,
                "parameters": {"type": "object", "properties": {}},
            },
        }
        for name, description in (
            ("demo-env", "Return the environment variables of the server"),
            ("demo-echo", "Echo the text back"),
        )
    ]
    text, calls = proxy.chat_stream("Show the environment variables", tools)
    assert calls == []
    assert "the call to demo-env was withheld (block: " in text
    text, calls = proxy.chat_stream("Echo the text 'hi' back", tools)
    assert calls == ["demo-echo"]


ANTHROPIC_TOOLS = [
    {"name": "demo-env", "description": "Return the environment variables of the server",
     "input_schema": {"type": "object", "properties": {}}},
    {"name": "demo-echo", "description": "Echo the text back",
     "input_schema": {"type": "object", "properties": {"text": {"type": "string"}}}},
]  # fmt: skip


def test_an_anthropic_messages_response_withholds_the_same_calls(proxy: _proxy.Proxy) -> None:
    withheld = proxy.messages("Show the environment variables", ANTHROPIC_TOOLS)
    assert [b["type"] for b in withheld["content"]] == ["text"] or all(
        b["type"] != "tool_use" for b in withheld["content"]
    )
    assert "the call to demo-env was withheld (block: " in json.dumps(withheld)
    assert withheld["stop_reason"] != "tool_use"
    kept = proxy.messages("Echo the text 'hi' back", ANTHROPIC_TOOLS)
    assert [b["name"] for b in kept["content"] if b["type"] == "tool_use"] == ["demo-echo"]
    assert _seen(proxy, "env") == 0


def test_a_streamed_anthropic_messages_response_withholds_the_same_calls(
    proxy: _proxy.Proxy,
) -> None:
    events = proxy.messages("Show the environment variables", ANTHROPIC_TOOLS, stream=True)
    starts = [e["content_block"] for e in events if e.get("type") == "content_block_start"]
    assert all(block["type"] != "tool_use" for block in starts)
    assert "the call to demo-env was withheld (block: " in json.dumps(events)
    assert [e["index"] for e in events if e.get("type") == "content_block_start"] == list(
        range(len(starts))
    )
    events = proxy.messages("Echo the text 'hi' back", ANTHROPIC_TOOLS, stream=True)
    names = [
        e["content_block"]["name"]
        for e in events
        if e.get("type") == "content_block_start" and e["content_block"]["type"] == "tool_use"
    ]
    assert names == ["demo-echo"]


RESPONSES_TOOLS = [
    {
        "type": "function",
        "name": tool["name"],
        "description": tool["description"],
        "parameters": tool["input_schema"],
    }
    for tool in ANTHROPIC_TOOLS
]


def test_a_responses_api_response_withholds_the_same_calls(proxy: _proxy.Proxy) -> None:
    withheld = proxy.responses("Show the environment variables", RESPONSES_TOOLS)
    assert all(item["type"] != "function_call" for item in withheld["output"])
    assert "the call to demo-env was withheld (block: " in json.dumps(withheld["output"])
    kept = proxy.responses("Echo the text 'hi' back", RESPONSES_TOOLS)
    calls = [item["name"] for item in kept["output"] if item["type"] == "function_call"]
    assert calls == ["demo-echo"]
    assert _seen(proxy, "env") == 0


def test_a_streamed_responses_api_response_withholds_the_same_calls(proxy: _proxy.Proxy) -> None:
    events = proxy.responses("Show the environment variables", RESPONSES_TOOLS, stream=True)
    items = [e["item"] for e in events if isinstance(e.get("item"), dict)]
    assert all(item["type"] != "function_call" for item in items)
    assert not [e for e in events if "function_call_arguments" in e.get("type", "")]
    assert "the call to demo-env was withheld (block: " in json.dumps(events)
    events = proxy.responses("Echo the text 'hi' back", RESPONSES_TOOLS, stream=True)
    names = {
        e["item"]["name"]
        for e in events
        if isinstance(e.get("item"), dict) and e["item"]["type"] == "function_call"
    }
    assert names == {"demo-echo"}


def test_every_audit_chain_the_proxy_wrote_verifies(proxy: _proxy.Proxy) -> None:
    assert proxy.call_rest("echo", {"text": "for the record"}).status_code == 200
    verified = _proxy.proctor("audit", "verify", str(proxy.state_dir / "audit.sqlite"))
    assert verified.returncode == 0, verified.stdout + verified.stderr
    runs = [line.split() for line in verified.stdout.splitlines() if line.startswith("litellm-")]
    assert len(runs) >= 8
    assert all(run[-1] == "ok" for run in runs), verified.stdout


def test_a_misconfigured_guardrail_stops_the_proxy_from_starting(tmp_path: Path) -> None:
    _proxy.require_litellm()
    config = _proxy.proxy_config(
        tmp_path,
        stub_url="http://127.0.0.1:9/v1",
        state_dir=tmp_path / "state",
        extra={"proctor_polcy": "typo.yaml"},
    )
    code, output = _proxy.run_proxy_to_exit(config, tmp_path, timeout=_proxy.STARTUP_SECONDS)
    assert code != 0
    assert "unknown setting 'proctor_polcy'" in output
    assert "proctor_policy" in output


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"run_in_parallel": True}, "run_in_parallel: true is not supported"),
        ({"mode": ["post_call"]}, "leaves out pre_mcp_call"),
    ],
)
def test_settings_that_would_skip_or_undo_proctor_stop_the_proxy_from_starting(
    tmp_path: Path, extra: dict[str, object], message: str
) -> None:
    _proxy.require_litellm()
    config = _proxy.proxy_config(
        tmp_path, stub_url="http://127.0.0.1:9/v1", state_dir=tmp_path / "state", extra=extra
    )
    code, output = _proxy.run_proxy_to_exit(config, tmp_path, timeout=_proxy.STARTUP_SECONDS)
    assert code != 0
    assert message in output


def test_an_unavailable_store_refuses_every_call_until_it_returns(tmp_path: Path) -> None:
    _proxy.require_litellm()
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("a file where the store's directory should be\n", encoding="utf-8")
    store = blocker / "stores"
    with running_stub() as stub_url:
        config = _proxy.proxy_config(
            tmp_path,
            stub_url=stub_url,
            state_dir=tmp_path / "state",
            store_url=f"sqlite://{store.as_posix()}",
        )
        with _proxy.running_proxy(config, tmp_path, tmp_path / "state") as proxy:
            refused = proxy.call_rest("echo", {"text": "while the store is down"})
            assert refused.status_code == 503
            assert refused.json()["detail"]["code"] == "proctor_unavailable"
            assert "nothing was executed" in refused.json()["detail"]["error"]
            assert proxy.received() == []
            blocker.unlink()  # the store's place is back
            back = proxy.call_rest("echo", {"text": "store is back"})
            assert back.status_code == 200, back.text
            assert _seen(proxy, "echo", text="store is back") == 1
            assert (store / "audit.sqlite").exists()
