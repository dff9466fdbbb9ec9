"""The rule-based model: which tool it picks, how it fills arguments, how it summarises results."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from starlette.testclient import TestClient

from stubs.openai_stub import create_app
from stubs.openai_stub._model import build_arguments, choose_tool, looks_refused, words
from stubs.openai_stub._validate import FunctionTool

AUTH = {"Authorization": "Bearer test"}
ORDER_ID = {"type": "string", "pattern": "^ORD-\\d{4}$"}


def _tool(name: str, description: str, properties: dict[str, Any], *required: str) -> Any:
    parameters = {"type": "object", "properties": properties, "required": list(required)}
    return {
        "type": "function",
        "function": {"name": name, "description": description, "parameters": parameters},
    }


ORDERS = _tool("orders_lookup", "Look up an order by its id.", {"order_id": ORDER_ID}, "order_id")
EMAIL = _tool(
    "email_send",
    "Send an email message to a recipient.",
    {"to": {"type": "string"}, "subject": {"type": "string"}, "body": {"type": "string"}},
    "to",
    "subject",
    "body",
)
FS_READ = _tool("fs_read", "Read a text file.", {"path": {"type": "string"}}, "path")
FS_DELETE = _tool("fs_delete", "Delete a file.", {"path": {"type": "string"}}, "path")
TOOLS = [ORDERS, EMAIL, FS_READ, FS_DELETE]


@pytest.fixture
def client() -> Iterator[TestClient]:
    with TestClient(create_app()) as c:
        yield c


def _ask(client: TestClient, messages: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    body = {"model": "proctor-stub-1", "messages": messages, "tools": TOOLS, **extra}
    response = client.post("/v1/chat/completions", headers=AUTH, json=body)
    assert response.status_code == 200, response.text
    choice: dict[str, Any] = response.json()["choices"][0]
    return choice


def _user(text: str) -> list[dict[str, Any]]:
    return [{"role": "user", "content": text}]


def _calls(choice: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    calls = choice["message"].get("tool_calls") or []
    return [(c["function"]["name"], json.loads(c["function"]["arguments"])) for c in calls]


def _spec(tool: Any) -> FunctionTool:
    f = tool["function"]
    return FunctionTool(f["name"], f["description"], f["parameters"])


def test_the_model_calls_the_tool_whose_name_matches_the_request(client: TestClient) -> None:
    choice = _ask(client, _user("Please look up order ORD-0003 for me"))
    assert _calls(choice) == [("orders_lookup", {"order_id": "ORD-0003"})]
    assert choice["finish_reason"] == "tool_calls"
    assert choice["message"]["content"] is None


def test_the_model_proposes_exactly_one_call(client: TestClient) -> None:
    choice = _ask(client, _user("read the file notes.txt and delete the file old.txt"))
    assert len(_calls(choice)) == 1


def test_a_request_matching_no_tool_gets_a_plain_text_answer(client: TestClient) -> None:
    choice = _ask(client, _user("What is the weather like in Paris?"))
    assert _calls(choice) == []
    assert choice["finish_reason"] == "stop"
    assert choice["message"]["content"].startswith("I cannot help with that")
    assert "orders_lookup" in choice["message"]["content"]


def test_stop_words_alone_never_select_a_tool() -> None:
    tools = [_spec(_tool("get_it", "Get it for me", {}))]
    assert choose_tool("Can you get it for me please?", tools) is None


def test_name_words_outweigh_description_words() -> None:
    reader = _spec(_tool("fs_read", "Open a document", {}))
    opener = _spec(_tool("doc_open", "Read a document", {}))
    # "open" and "read": each tool has one in its name and one in its description.
    assert choose_tool("read it", [opener, reader]) == reader
    assert choose_tool("open it", [opener, reader]) == opener


def test_ties_go_to_the_alphabetically_first_name() -> None:
    zeta = _spec(_tool("zeta_file", "", {}))
    alpha = _spec(_tool("alpha_file", "", {}))
    assert choose_tool("file", [zeta, alpha]) == alpha
    assert choose_tool("file", [alpha, zeta]) == alpha


def test_words_are_case_insensitive_split_on_separators_and_singular() -> None:
    expected = ["order", "lookup", "fs", "read", "file", "address"]
    assert words("Orders.LOOKUP fs_read-file ADDRESS") == expected
    assert words("the and please") == []


def test_a_pattern_property_takes_the_matching_token() -> None:
    schema = {"type": "object", "properties": {"id": ORDER_ID}, "required": ["id"]}
    assert build_arguments(schema, "status of ORD-12 or ORD-0042?") == {"id": "ORD-0042"}


def test_an_email_property_takes_the_address_and_quoted_strings_fill_the_rest(
    client: TestClient,
) -> None:
    request = 'Email cfo@example.com the subject "Q3" saying "Numbers attached."'
    choice = _ask(client, _user(request))
    assert _calls(choice) == [
        ("email_send", {"to": "cfo@example.com", "subject": "Q3", "body": "Numbers attached."})
    ]


def test_a_path_property_takes_the_path_in_the_request(client: TestClient) -> None:
    choice = _ask(client, _user("read the file reports/q3.txt."))
    assert _calls(choice) == [("fs_read", {"path": "reports/q3.txt"})]


def test_numbers_fill_number_and_integer_properties() -> None:
    schema = {
        "type": "object",
        "properties": {"amount": {"type": "number"}, "count": {"type": "integer"}},
        "required": ["amount", "count"],
    }
    assert build_arguments(schema, "refund 12.5 dollars, 3 times, on ORD-0003") == {
        "amount": 12.5,
        "count": 3,
    }


def test_only_required_properties_are_filled() -> None:
    schema = {
        "type": "object",
        "properties": {"a": {"type": "string"}, "b": {"type": "string"}},
        "required": ["b"],
    }
    assert build_arguments(schema, 'use "x"') == {"b": "x"}


def test_an_enum_value_named_in_the_request_wins_over_the_default() -> None:
    reason = {"type": "string", "enum": ["damaged", "late", "other"], "default": "other"}
    schema = {"type": "object", "properties": {"reason": reason}, "required": ["reason"]}
    assert build_arguments(schema, "it arrived LATE") == {"reason": "late"}
    assert build_arguments(schema, "no reason given") == {"reason": "other"}


def test_without_evidence_the_default_then_a_typed_placeholder_is_used() -> None:
    properties = {
        "s": {"type": "string"},
        "d": {"type": "string", "default": "fallback"},
        "i": {"type": "integer", "minimum": 1},
        "n": {"type": ["null", "number"]},
        "b": {"type": "boolean"},
        "a": {"type": "array"},
        "o": {"type": "object"},
        "c": {"const": "fixed"},
        "p": {"type": "string", "pattern": "^X\\d$"},
    }
    schema = {"type": "object", "properties": properties, "required": list(properties)}
    assert build_arguments(schema, "nothing useful here") == {
        "s": "example",
        "d": "fallback",
        "i": 1,
        "n": 0,
        "b": False,
        "a": [],
        "o": {},
        "c": "fixed",
        "p": "example",
    }


def test_a_query_property_gets_the_request_text() -> None:
    schema = {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}
    assert build_arguments(schema, "  refund policy for damaged goods ") == {
        "query": "refund policy for damaged goods"
    }


def test_tool_choice_none_answers_in_text(client: TestClient) -> None:
    choice = _ask(client, _user("look up order ORD-0003"), tool_choice="none")
    assert _calls(choice) == []
    assert "tool_choice=none" in choice["message"]["content"]


def test_tool_choice_required_calls_a_tool_even_without_overlap(client: TestClient) -> None:
    choice = _ask(client, _user("what is the weather?"), tool_choice="required")
    assert [name for name, _ in _calls(choice)] == ["email_send"]


def test_a_named_tool_choice_forces_that_tool(client: TestClient) -> None:
    forced = {"type": "function", "function": {"name": "fs_delete"}}
    choice = _ask(client, _user("look up order ORD-0003"), tool_choice=forced)
    assert [name for name, _ in _calls(choice)] == ["fs_delete"]


def test_without_tools_the_model_says_it_cannot_help(client: TestClient) -> None:
    body = {"model": "proctor-stub-1", "messages": _user("look up ORD-0003")}
    response = client.post("/v1/chat/completions", headers=AUTH, json=body)
    assert "no tools are available" in response.json()["choices"][0]["message"]["content"]


def _round_trip(result: str, call: tuple[str, str] = ("orders_lookup", "{}")) -> list[Any]:
    name, arguments = call
    return [
        *_user("look up order ORD-0003"),
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": name, "arguments": arguments}}
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": result},
    ]


def test_after_a_tool_result_the_model_summarises_and_quotes_it(client: TestClient) -> None:
    choice = _ask(client, _round_trip('{"order_id": "ORD-0003", "status": "shipped"}'))
    text = choice["message"]["content"]
    assert _calls(choice) == []
    assert choice["finish_reason"] == "stop"
    assert 'orders_lookup returned: "{"order_id": "ORD-0003", "status": "shipped"}"' in text
    assert "NOT" not in text


@pytest.mark.parametrize(
    "result",
    [
        "blocked by policy rule no-deletes",
        '{"outcome": "held", "reason": "require_approval"}',
        "Error: file not found",
        "refused: budget exhausted",
    ],
)
def test_a_refused_or_failed_result_is_reported_as_not_done(
    client: TestClient, result: str
) -> None:
    text = _ask(client, _round_trip(result, ("fs_delete", '{"path": "a"}')))["message"]["content"]
    assert "fs_delete did NOT succeed" in text
    assert "is NOT done" in text
    assert "success" not in text.replace("succeed", "")


def test_ordinary_results_do_not_look_refused() -> None:
    assert not looks_refused('{"is_error": false, "errors": 0, "status": "shipped"}')


def test_every_result_since_the_last_user_message_is_quoted(client: TestClient) -> None:
    calls = [
        {"id": f"c{i}", "type": "function", "function": {"name": n, "arguments": "{}"}}
        for i, n in ((1, "fs_read"), (2, "orders_lookup"))
    ]
    messages = [
        *_round_trip("old result"),
        {"role": "assistant", "content": "done"},
        *_user("now both"),
        {"role": "assistant", "tool_calls": calls},
        {"role": "tool", "tool_call_id": "c1", "content": "file text"},
        {"role": "tool", "tool_call_id": "c2", "content": "denied"},
    ]
    text = _ask(client, messages)["message"]["content"]
    assert "(2 results)" in text
    assert 'fs_read returned: "file text"' in text
    assert 'orders_lookup did NOT succeed (refused, blocked, held or failed): "denied"' in text
    assert "old result" not in text


def test_a_long_result_is_quoted_briefly(client: TestClient) -> None:
    text = _ask(client, _round_trip("word " * 200))["message"]["content"]
    assert "..." in text
    assert len(text) < 400


def test_a_new_user_message_after_results_starts_a_new_proposal(client: TestClient) -> None:
    messages = [
        *_round_trip("shipped"),
        {"role": "assistant", "content": "It shipped."},
        *_user("now read notes.txt"),
    ]
    assert _calls(_ask(client, messages)) == [("fs_read", {"path": "notes.txt"})]


def test_usage_counts_request_and_reply_words(client: TestClient) -> None:
    body = {"model": "proctor-stub-1", "messages": _user("look up order ORD-0003"), "tools": TOOLS}
    usage = client.post("/v1/chat/completions", headers=AUTH, json=body).json()["usage"]
    # 4 request words; reply: the name (1) + '{"order_id": "ORD-0003"}' (2).
    assert usage == {"prompt_tokens": 4, "completion_tokens": 3, "total_tokens": 7}
