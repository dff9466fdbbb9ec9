"""Cassette requests: tool definitions and request parameters compared verbatim (only the
conversation is redacted), the key's re-cut on replay confined to where a recording can have
cut it, nothing derived from a masked secret kept, and `--record` replacing a damaged file."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from harness._errors import CassetteError, ProviderError
from harness.cli._cassette_options import check_cassette_files
from harness.providers._base import ModelTurn, ToolSpec, Usage
from harness.providers._cassette import CassetteProvider, canonical_request
from harness.providers._cassette_file import cassette_path
from tests.unit.harness.test_cassette_provider import (
    ASK,
    KEY,
    TOOLS,
    Scripted,
    _after_call,
    _record,
    _recorder,
)


def _tools_with(prop: str, kind: str) -> list[ToolSpec]:
    tools = copy.deepcopy(TOOLS)
    parameters = tools[0]["function"]["parameters"]
    parameters["properties"][prop] = {"type": kind, "description": f"the {prop}"}
    return tools


@pytest.mark.parametrize(
    "prop", ["session_id", "token", "password", "auth_mode", "credentials", "cookie"]
)
def test_a_tool_schema_change_under_a_secret_sounding_name_is_a_miss(
    tmp_path: Path, prop: str
) -> None:
    live = Scripted(ModelTurn("ok", (), Usage(1, 1), "stop"))
    _recorder(live, tmp_path).complete(ASK, _tools_with(prop, "string"))
    replay = CassetteProvider(tmp_path, "read-config")
    with pytest.raises(ProviderError, match="turn 1") as caught:
        replay.complete(ASK, _tools_with(prop, "integer"))
    assert '"integer"' in caught.value.message  # the diff shows the change itself


def test_request_parameters_and_tool_definitions_are_kept_verbatim() -> None:
    body = {
        "model": "gpt-test",
        "temperature": 0.2,
        "tool_choice": {"type": "function", "function": {"name": "token_issue"}},
        "tools": _tools_with("password", "string"),
        "messages": [],
    }
    assert canonical_request(body) == body


def test_conversation_content_is_still_redacted_in_texts_arguments_and_results() -> None:
    secret = "sk-FakeConversation0123456789abcdef"
    body = {
        "model": "m",
        "messages": [
            {"role": "user", "content": f"use {secret}"},
            {"role": "user", "content": [{"type": "text", "text": f"password: {secret}"}]},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "mail.send", "arguments": json.dumps({"t": secret})},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "call_1", "content": f"sent {secret}"},
        ],
    }
    canonical = canonical_request(body)
    assert secret not in json.dumps(canonical)
    assert canonical["messages"][2]["tool_calls"][0]["function"]["name"] == "mail.send"


def test_nothing_derived_from_a_masked_secret_is_kept(tmp_path: Path) -> None:
    # Limit by choice: no digest of what was masked (it would let a committed cassette confirm
    # guesses of a low-entropy secret), so two secrets give the same bytes.
    _record(tmp_path / "a", "password: hunter2!")
    _record(tmp_path / "b", "password: hunter3!")
    first = cassette_path(tmp_path / "a", "read-config").read_bytes()
    assert first == cassette_path(tmp_path / "b", "read-config").read_bytes()
    assert b"hunter" not in first


def _tamper(directory: Path, edit: str) -> None:
    path = cassette_path(directory, "read-config")
    data = json.loads(path.read_text("ascii"))
    request = data["exchanges"][1]["request"]
    if edit == "model":  # `gpt-test` is 8 non-space characters: a key's worth
        request["model"] = "[REDACTED:api_key]"
    else:  # a second, different "key" in the conversation, consistently in both its places
        text = json.dumps(request["messages"]).replace("notes/config.txt", "[REDACTED:api_key]")
        request["messages"] = json.loads(text)
    path.write_text(json.dumps(data), encoding="ascii")


@pytest.mark.parametrize("edit", ["model", "second_key"])
def test_a_key_mask_a_recording_could_not_have_cut_matches_nothing(
    tmp_path: Path, edit: str
) -> None:
    output = f"the key is {KEY} here"
    _record(tmp_path, output)
    _tamper(tmp_path, edit)
    replay = CassetteProvider(tmp_path, "read-config")
    replay.complete(ASK, TOOLS)
    with pytest.raises(ProviderError, match="turn 2"):
        replay.complete(_after_call(output), TOOLS)


@pytest.mark.parametrize(
    "damage", [b"{not json", b'{"format": "proctor-cassette/9", "exchanges": []}', b"\xff\xfe"]
)
def test_a_fresh_record_replaces_a_damaged_file_without_reading_it(
    tmp_path: Path, damage: bytes
) -> None:
    path = cassette_path(tmp_path, "read-config")
    path.write_bytes(damage)
    live = Scripted(ModelTurn("ok", (), Usage(1, 1), "stop"))
    assert _recorder(live, tmp_path).complete(ASK, TOOLS).text == "ok"
    assert json.loads(path.read_text("ascii"))["format"] == "proctor-cassette/1"
    path.write_bytes(damage)
    with pytest.raises(CassetteError, match="read-config.json"):  # filling must read it
        _recorder(Scripted(), tmp_path, fill_gaps=True)


def test_record_missing_checks_every_file_first_and_names_the_way_out(tmp_path: Path) -> None:
    cassette_path(tmp_path, "b").write_bytes(b"{truncated")
    with pytest.raises(CassetteError) as caught:
        check_cassette_files(tmp_path, ["a", "b"], filling=True)
    message = str(caught.value)
    assert "b.json" in message and "without --record-missing" in message
    assert "delete this file" in message
