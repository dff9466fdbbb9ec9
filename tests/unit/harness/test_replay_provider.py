"""The replay provider is a pure function of the transcript: position and branches from results."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import TypeAdapter

from harness._errors import ProviderError
from harness.providers._replay import ReplayProvider, ScriptStep

STEPS: TypeAdapter[list[ScriptStep]] = TypeAdapter(list[ScriptStep])


def _script(data: list[dict[str, Any]]) -> ReplayProvider:
    return ReplayProvider(STEPS.validate_python(data))


def _assistant(call_id: str, name: str, args: str = "{}") -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": call_id, "type": "function", "function": {"name": name, "arguments": args}}
        ],
    }


def _tool(call_id: str, status: str, output: str = "") -> dict[str, Any]:
    payload: dict[str, Any] = {"status": status}
    if status == "executed":
        payload["output"] = output
    return {"role": "tool", "tool_call_id": call_id, "content": json.dumps(payload)}


USER = [{"role": "user", "content": "delete everything please"}]

BRANCHING = [
    {"calls": [{"tool": "fs.delete", "args": {"path": "a"}}]},
    {
        "branch": {
            "executed": [{"answer": "deleted"}],
            "blocked": [{"calls": [{"tool": "tickets.create", "args": {"title": "t"}}]}],
        }
    },
    {"answer": "asked a human instead: {{tool:tickets.create#id}}"},
]


def test_the_first_turn_is_the_first_scripted_turn() -> None:
    turn = _script(BRANCHING).complete(USER, [])
    assert [(c.name, json.loads(c.arguments)) for c in turn.tool_calls] == [
        ("fs.delete", {"path": "a"})
    ]
    assert turn.finish_reason == "tool_calls"


@pytest.mark.parametrize(
    ("outcome", "expected_tool", "expected_answer"),
    [("executed", None, "deleted"), ("blocked", "tickets.create", None)],
)
def test_a_branch_follows_the_outcome_of_the_previous_call(
    outcome: str, expected_tool: str | None, expected_answer: str | None
) -> None:
    history = [*USER, _assistant("call_1_1", "fs.delete"), _tool("call_1_1", outcome, "ok")]
    turn = _script(BRANCHING).complete(history, [])
    assert (turn.tool_calls[0].name if turn.tool_calls else None) == expected_tool
    assert turn.text == expected_answer


def test_an_outcome_without_a_branch_is_an_error_not_a_silent_stop() -> None:
    history = [*USER, _assistant("call_1_1", "fs.delete"), _tool("call_1_1", "held")]
    with pytest.raises(ProviderError) as err:
        _script(BRANCHING).complete(history, [])
    assert err.value.kind == "script_exhausted" and "'held'" in str(err.value)


def test_running_out_of_script_is_an_error() -> None:
    script = _script([{"calls": [{"tool": "orders.lookup", "args": {"order_id": "ORD-0001"}}]}])
    history = [*USER, _assistant("call_1_1", "orders.lookup"), _tool("call_1_1", "executed")]
    with pytest.raises(ProviderError, match="script_exhausted"):
        script.complete(history, [])


def test_answers_quote_earlier_tool_results_by_tool_and_field() -> None:
    history = [
        *USER,
        _assistant("call_1_1", "fs.delete"),
        _tool("call_1_1", "blocked"),
        _assistant("call_2_1", "tickets.create"),
        _tool("call_2_1", "executed", json.dumps({"id": 7, "title": "t"})),
    ]
    turn = _script(BRANCHING).complete(history, [])
    assert turn.text == "asked a human instead: 7"


def test_the_users_words_never_change_the_choice() -> None:
    a = _script(BRANCHING).complete([{"role": "user", "content": "please do not delete"}], [])
    b = _script(BRANCHING).complete([{"role": "user", "content": "delete it all"}], [])
    assert a == b


def test_raw_args_are_sent_verbatim_so_malformed_json_can_be_scripted() -> None:
    turn = _script([{"calls": [{"tool": "fs.read", "raw_args": '{"path": '}]}]).complete(USER, [])
    assert turn.tool_calls[0].arguments == '{"path": '


def test_a_turn_must_say_something() -> None:
    with pytest.raises(ValueError, match="calls"):
        STEPS.validate_python([{}])
