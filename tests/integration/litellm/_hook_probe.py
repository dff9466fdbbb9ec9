"""Run in a child process (LiteLLM is heavy): Proctor's guardrail hooks called directly with
LiteLLM 1.110's own request and response objects. Prints one JSON object of observations."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from fastapi import HTTPException
from litellm.proxy._types import UserAPIKeyAuth
from litellm.types.guardrails import GuardrailEventHooks
from litellm.types.llms.openai import ResponsesAPIResponse
from litellm.types.utils import ModelResponse, ModelResponseStream

from governance.core._errors import ConfigError
from governance.litellm import GoAhead, ProctorGuardrail

POLICY = """\
version: 1
defaults: {unknown_tool: block, no_match: block}
rules:
  - {id: lookup, effect: allow, match: {tool: fn.lookup}}
  - {id: echo, effect: allow, match: {tool: mcp.demo.echo}}
"""
KEY = UserAPIKeyAuth(api_key="k" * 64, user_id="ann")
MODES = ["pre_mcp_call", "post_call"]


def guardrail(state: Path, **extra: Any) -> ProctorGuardrail:
    policy = state.parent / "probe-policy.yaml"
    policy.write_text(POLICY, encoding="utf-8")
    params: dict[str, Any] = dict(
        guardrail_name="proctor",
        event_hook=MODES,
        default_on=True,
        proctor_policy=str(policy),
        proctor_state_dir=str(state),
        proctor_tools={
            "fn.lookup": {
                "action_type": "read",
                "risk": "low",
                "reversible": True,
                "external_side_effect": False,
            }
        },
    )
    params.update(extra)
    return ProctorGuardrail(**params)


def refused(awaitable: Any) -> Any:
    try:
        result = asyncio.run(awaitable)
    except HTTPException as exc:
        return {"status": exc.status_code, "detail": exc.detail}
    return {"status": 200, "result": result}


def config_errors(state: Path) -> dict[str, str]:
    seen: dict[str, str] = {}
    for label, extra in {
        "post_call_only": {"event_hook": ["post_call"]},
        "pre_call_only": {"event_hook": "pre_call"},
    }.items():
        try:
            guardrail(state, **extra)
            seen[label] = "started"
        except ConfigError as exc:
            seen[label] = str(exc)
    for flag in ("run_in_parallel", "scan_raw_request"):
        built = guardrail(state)
        try:
            setattr(built, flag, True)  # what LiteLLM's registry does after construction
            seen[flag] = "accepted"
        except ConfigError as exc:
            seen[flag] = str(exc)
    return seen


class EmptyJudgement:
    """A governor whose firewall judged the call's arguments to be `{}`."""

    def __init__(self) -> None:
        self.withdrawn_reasons: list[str] = []

    async def before(self, call: Any) -> GoAhead:
        return GoAhead({})

    async def withdrawn(self, correlation: str, error: str, reason: str) -> None:
        self.withdrawn_reasons.append(reason)


def mcp_calls(state: Path) -> dict[str, Any]:
    g = guardrail(state)
    seen: dict[str, Any] = {}
    for label, arguments in {"list": ["rm", "-rf"], "string": "rm -rf /", "number": 7}.items():
        data = {"mcp_tool_name": "echo", "mcp_server_name": "demo", "mcp_arguments": arguments}
        seen[label] = refused(g.async_pre_call_hook(KEY, None, data, "call_mcp_tool"))
    seen["audited_runs"] = g._governor.gateway.audit.run_ids() if g._governor else None
    fake = EmptyJudgement()
    g._governor = fake
    for label, raw in {"empty_judged_nonempty_raw": {"text": "x"}, "empty_both": {}}.items():
        data = {"mcp_tool_name": "echo", "mcp_server_name": "demo", "mcp_arguments": raw}
        outcome = refused(g.async_pre_call_hook(KEY, None, data, "call_mcp_tool"))
        if outcome["status"] == 200:
            outcome = {"status": 200, "modified": outcome["result"].get("modified_arguments")}
        seen[label] = outcome
    seen["withdrawn"] = fake.withdrawn_reasons
    return seen


def unavailable(state: Path) -> Any:
    # Well formed (a malformed URL is refused before the guardrail exists), unreachable.
    url = "postgresql://proctor:s3cr-zzet@db.internal:5432/proctor"
    g = guardrail(state, proctor_store_url=url)
    data = {"mcp_tool_name": "echo", "mcp_server_name": "demo", "mcp_arguments": {"text": "hi"}}
    return refused(g.async_pre_call_hook(KEY, None, data, "call_mcp_tool"))


def responses(state: Path) -> dict[str, Any]:
    g = guardrail(state)
    seen: dict[str, Any] = {}
    legacy = ModelResponse(
        choices=[
            {
                "index": 0,
                "finish_reason": "function_call",
                "message": {
                    "role": "assistant",
                    "content": None,
                    "function_call": {"name": "delete_everything", "arguments": "{}"},
                },
            }
        ]
    )
    out = refused(g.async_post_call_success_hook({}, KEY, legacy))["result"]
    seen["legacy"] = out.model_dump()["choices"][0]
    both = [
        {
            "type": "function_call",
            "id": f"fc_{n}",
            "call_id": f"c{n}",
            "name": name,
            "arguments": "{}",
            "status": "completed",
        }
        for n, name in enumerate(["delete_everything", "lookup"])
    ]
    resp = ResponsesAPIResponse(
        **{
            "id": "resp_1",
            "created_at": 0,
            "object": "response",
            "model": "m",
            "status": "completed",
            "output": both,
            "parallel_tool_calls": True,
            "tool_choice": "auto",
            "tools": [],
        }
    )
    out = refused(g.async_post_call_success_hook({}, KEY, resp))["result"]
    seen["responses"] = json.loads(out.model_dump_json())["output"]
    message = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "m",
        "content": [{"type": "tool_use", "id": "tu_1", "name": "delete_everything", "input": {}}],
        "stop_reason": "tool_use",
    }
    seen["messages"] = refused(g.async_post_call_success_hook({}, KEY, message))["result"]
    gemini = {"candidates": [{"content": {"parts": [{"functionCall": {"name": "rm"}}]}}]}
    seen["unrecognised"] = refused(g.async_post_call_success_hook({}, KEY, gemini))

    async def stream() -> list[Any]:
        async def chunks() -> Any:
            for name, arguments in (("delete_everything", ""), ("", "{}")):
                yield ModelResponseStream(
                    choices=[
                        {
                            "index": 0,
                            "delta": {
                                "role": "assistant",
                                "function_call": {"name": name, "arguments": arguments},
                            },
                        }
                    ]
                )
            yield ModelResponseStream(
                choices=[{"index": 0, "delta": {}, "finish_reason": "function_call"}]
            )

        return [
            c.model_dump()
            async for c in g.async_post_call_streaming_iterator_hook(KEY, chunks(), {})
        ]

    seen["stream"] = asyncio.run(stream())
    return seen


def opt_outs(state: Path) -> dict[str, list[bool]]:
    g = guardrail(state)
    verdicts = {}
    for label, admin in {
        "disabled": {"disable_global_guardrails": True},
        "opted_out": {"opted_out_global_guardrails": ["proctor"]},
    }.items():
        data = {"metadata": {"user_api_key_metadata": admin}}
        verdicts[label] = [
            bool(g.should_run_guardrail(data=data, event_type=hook))
            for hook in (GuardrailEventHooks.pre_mcp_call, GuardrailEventHooks.post_call)
        ]
    return verdicts


def main() -> None:
    root = Path(sys.argv[1])
    seen = {
        "config": config_errors(root / "c"),
        "mcp": mcp_calls(root / "m"),
        "unavailable": unavailable(root / "u"),
        "responses": responses(root / "r"),
        "opt_outs": opt_outs(root / "o"),
    }
    print(json.dumps(seen, default=str))


if __name__ == "__main__":
    main()
