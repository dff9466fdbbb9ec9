"""Cassettes without a network: canonical requests stripped of credentials, the file format and
its errors, replay, misses with a diff, and --record-missing asking only for the gaps."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import pytest

from harness._errors import CassetteError, ProviderError
from harness.providers._base import (
    Message,
    ModelTurn,
    ProposedCall,
    ProviderIdentity,
    ToolSpec,
    Usage,
)
from harness.providers._cassette import (
    CassetteProvider,
    RecordingProvider,
    canonical_request,
    endpoint_host,
    request_diff,
)
from harness.providers._cassette_file import cassette_path, load_cassette
from tests import fake_secrets

KEY = "pk-live-FAKEKEY-0123456789-unshaped"
TOOLS: list[ToolSpec] = [
    {
        "type": "function",
        "function": {
            "name": "fs.read",
            "description": "Read a file.",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
        },
    }
]
ASK: list[Message] = [{"role": "user", "content": "Read notes/config.txt"}]
CALL = ProposedCall("call_1", "fs.read", '{"path": "notes/config.txt"}')


def _after_call(output: str) -> list[Message]:
    return [
        *ASK,
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "fs.read", "arguments": CALL.arguments},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": output},
    ]


class Scripted:
    """A live provider double: answers in order and counts what it was asked."""

    def __init__(self, *turns: ModelTurn | ProviderError) -> None:
        self.turns = list(turns)
        self.asked = 0

    @property
    def identity(self) -> ProviderIdentity:
        return ProviderIdentity("openai-compatible", "gpt-test", live=True)

    def complete(self, messages: Sequence[Message], tools: Sequence[ToolSpec]) -> ModelTurn:
        self.asked += 1
        turn = self.turns.pop(0)
        if isinstance(turn, ProviderError):
            raise turn
        return turn


def _recorder(live: Scripted, directory: Path, *, fill_gaps: bool = False) -> RecordingProvider:
    return RecordingProvider(
        live,
        directory=directory,
        scenario_id="read-config",
        model="gpt-test",
        base_url=f"https://user:{KEY}@api.example.com:8443/v1?key={KEY}",
        api_key=KEY,
        fill_gaps=fill_gaps,
    )


def _two_turns() -> Scripted:
    return Scripted(
        ModelTurn(None, (CALL,), Usage(10, 5), "tool_calls"),
        ModelTurn("The file holds settings.", (), Usage(20, 6), "stop"),
    )


def _record(directory: Path, output: str) -> Scripted:
    live = _two_turns()
    recorder = _recorder(live, directory)
    recorder.complete(ASK, TOOLS)
    recorder.complete(_after_call(output), TOOLS)
    return live


def test_a_recorded_cassette_holds_no_key_and_no_secret_from_a_tool_output(tmp_path: Path) -> None:
    output = fake_secrets.CONFIG_DUMP + f"PROCTOR_LLM_API_KEY={KEY}\nkey again: {KEY}\n"
    _record(tmp_path, output)
    text = cassette_path(tmp_path, "read-config").read_text(encoding="ascii")
    assert fake_secrets.leaked(text, (*fake_secrets.ALL, KEY)) == []
    assert json.loads(text)["endpoint_host"] == "api.example.com"  # no port, no user:key
    assert "notes/config.txt" in text  # the request is kept, only the secrets are cut


def test_canonical_request_masks_what_the_redactor_masks_and_the_key_wherever_it_is() -> None:
    body = {
        "model": "m",
        "messages": [{"role": "tool", "content": f"x {KEY} {fake_secrets.GITHUB}"}],
    }
    canonical = canonical_request(body, secrets=[KEY])
    assert KEY not in json.dumps(canonical) and fake_secrets.GITHUB not in json.dumps(canonical)
    assert canonical_request(body, secrets=[KEY]) == canonical  # stable
    assert canonical_request(canonical, secrets=[KEY]) == canonical  # idempotent


def test_a_placeholder_key_is_not_cut_out_of_ordinary_words() -> None:
    body = {"model": "proctor-stub-1", "messages": []}
    assert canonical_request(body, secrets=["stub"])["model"] == "proctor-stub-1"


def test_the_endpoint_host_keeps_neither_port_path_query_nor_credentials() -> None:
    assert endpoint_host("https://u:tok@api.example.com:8443/v1?key=abc") == "api.example.com"


def test_the_file_is_canonical_json_with_a_header_and_no_time(tmp_path: Path) -> None:
    _record(tmp_path, "plain settings")
    raw = cassette_path(tmp_path, "read-config").read_bytes()
    data = json.loads(raw)
    assert raw.endswith(b"}\n") and not raw.endswith(b"\n\n")
    assert (
        raw == (json.dumps(data, sort_keys=True, indent=2, separators=(",", ": ")) + "\n").encode()
    )
    assert {k for k in data if k != "exchanges"} == {"format", "scenario", "model", "endpoint_host"}
    assert data["format"] == "proctor-cassette/1" and len(data["exchanges"]) == 2


def test_recording_the_same_answers_again_gives_the_same_bytes(tmp_path: Path) -> None:
    _record(tmp_path / "a", "plain settings")
    _record(tmp_path / "b", "plain settings")
    name = "read-config.json"
    assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()


def test_a_replay_answers_as_the_live_provider_did_without_asking_it(tmp_path: Path) -> None:
    _record(tmp_path, "plain settings")
    replay = CassetteProvider(tmp_path, "read-config")
    assert replay.identity == ProviderIdentity(f"cassette:{tmp_path.name}", "gpt-test", False)
    first = replay.complete(ASK, TOOLS)
    assert first.tool_calls == (CALL,) and first.usage == Usage(10, 5)
    second = replay.complete(_after_call("plain settings"), TOOLS)
    assert second.text == "The file holds settings." and second.finish_reason == "stop"


def test_a_changed_request_is_a_miss_naming_scenario_turn_and_a_diff(tmp_path: Path) -> None:
    _record(tmp_path, "plain settings")
    replay = CassetteProvider(tmp_path, "read-config")
    replay.complete(ASK, TOOLS)
    with pytest.raises(ProviderError) as caught:
        replay.complete(_after_call("other settings"), TOOLS)
    error = caught.value
    assert error.kind == "cassette_miss"
    assert "scenario read-config, turn 2" in error.message
    assert '-      "content": "plain settings",' in error.message
    assert '+      "content": "other settings",' in error.message
    assert "--- recorded request, turn 2" in error.message


def test_a_changed_tool_list_is_a_miss_on_the_first_turn(tmp_path: Path) -> None:
    _record(tmp_path, "plain settings")
    with pytest.raises(ProviderError, match="turn 1") as caught:
        CassetteProvider(tmp_path, "read-config").complete(ASK, [])
    assert '-  "tools": [' in caught.value.message


def test_a_turn_beyond_the_cassette_and_a_missing_file_are_misses(tmp_path: Path) -> None:
    live = Scripted(ModelTurn(None, (CALL,), None, "tool_calls"))
    _recorder(live, tmp_path).complete(ASK, TOOLS)
    replay = CassetteProvider(tmp_path, "read-config")
    replay.complete(ASK, TOOLS)
    with pytest.raises(ProviderError, match="1 recorded turns and the run asked for another"):
        replay.complete(_after_call("x"), TOOLS)
    with pytest.raises(ProviderError, match="no cassette file for this scenario"):
        CassetteProvider(tmp_path, "other-scenario").complete(ASK, TOOLS)


def test_a_provider_error_is_recorded_and_replayed_as_the_same_error(tmp_path: Path) -> None:
    failing = ProviderError("server_error", f"HTTP 500 for key {KEY}", status=500)
    with pytest.raises(ProviderError):
        _recorder(Scripted(failing), tmp_path).complete(ASK, TOOLS)
    assert KEY not in cassette_path(tmp_path, "read-config").read_text(encoding="ascii")
    with pytest.raises(ProviderError) as caught:
        CassetteProvider(tmp_path, "read-config").complete(ASK, TOOLS)
    assert (caught.value.kind, caught.value.status) == ("server_error", 500)


def test_record_missing_replays_matching_turns_and_asks_only_for_the_rest(tmp_path: Path) -> None:
    first_only = Scripted(ModelTurn(None, (CALL,), Usage(10, 5), "tool_calls"))
    _recorder(first_only, tmp_path).complete(ASK, TOOLS)
    before = cassette_path(tmp_path, "read-config").read_bytes()
    live = Scripted(ModelTurn("done", (), Usage(20, 6), "stop"))
    filler = _recorder(live, tmp_path, fill_gaps=True)
    assert filler.complete(ASK, TOOLS).tool_calls == (CALL,)
    assert live.asked == 0  # the matching turn came from the cassette
    assert cassette_path(tmp_path, "read-config").read_bytes() == before
    assert filler.complete(_after_call("plain"), TOOLS).text == "done"
    assert live.asked == 1
    loaded = load_cassette(cassette_path(tmp_path, "read-config"), "read-config")
    assert loaded is not None and len(loaded.exchanges) == 2


def test_record_missing_never_re_records_a_turn_whose_request_changed(tmp_path: Path) -> None:
    _record(tmp_path, "plain settings")
    before = cassette_path(tmp_path, "read-config").read_bytes()
    live = _two_turns()
    filler = _recorder(live, tmp_path, fill_gaps=True)
    filler.complete(ASK, TOOLS)
    with pytest.raises(ProviderError, match="cassette_miss|differs"):
        filler.complete(_after_call("other settings"), TOOLS)
    assert live.asked == 0
    assert cassette_path(tmp_path, "read-config").read_bytes() == before


def test_recording_afresh_drops_the_scenario_s_old_file(tmp_path: Path) -> None:
    _record(tmp_path, "plain settings")
    _recorder(_two_turns(), tmp_path)  # a run that asks nothing: no stale exchanges remain
    assert not cassette_path(tmp_path, "read-config").exists()


@pytest.mark.parametrize(
    "scenario_id", ["../escape", "a/b", ".hidden", "..", "", "a\\b", "x" * 200]
)
def test_a_scenario_id_that_could_leave_the_directory_is_refused(
    tmp_path: Path, scenario_id: str
) -> None:
    with pytest.raises(CassetteError, match="cannot name a cassette file"):
        cassette_path(tmp_path, scenario_id)


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (b'{"format": "proctor-cassette/1", "scen', "not valid JSON"),
        (b"\xff\xfe", "not UTF-8"),
        (b"[]", "a cassette is a JSON object"),
        (b'{"format": "proctor-cassette/2"}', "'proctor-cassette/2' is not"),
        (b'{"format": "proctor-cassette/1", "scenario": "read-config"}', "model"),
        (
            b'{"format": "proctor-cassette/1", "scenario": "other", "model": "m", '
            b'"endpoint_host": "h", "exchanges": []}',
            "records scenario 'other'",
        ),
        (
            b'{"format": "proctor-cassette/1", "scenario": "read-config", "model": "m", '
            b'"endpoint_host": "h", "exchanges": [{"request": {}}]}',
            "exactly one of",
        ),
    ],
)
def test_a_broken_cassette_file_is_an_error_naming_it(
    tmp_path: Path, content: bytes, expected: str
) -> None:
    path = tmp_path / "read-config.json"
    path.write_bytes(content)
    with pytest.raises(CassetteError, match=expected) as caught:
        CassetteProvider(tmp_path, "read-config")
    assert str(path) in str(caught.value)


def test_the_diff_of_equal_requests_is_empty_and_a_long_one_is_cut() -> None:
    assert request_diff({"a": 1}, {"a": 1}, 1) == ""
    big = request_diff(
        {"a": [f"x{i}" for i in range(500)]}, {"a": [f"y{i}" for i in range(500)]}, 3
    )
    assert "more diff lines" in big and len(big.splitlines()) <= 121


def test_a_replay_finds_the_key_where_the_recording_cut_it(tmp_path: Path) -> None:
    output = f"the key is {KEY} here"  # no shape, no telling name: only the key cut finds it
    _record(tmp_path, output)
    assert KEY not in cassette_path(tmp_path, "read-config").read_text("ascii")
    replay = CassetteProvider(tmp_path, "read-config")  # knows no key
    replay.complete(ASK, TOOLS)
    assert replay.complete(_after_call(output), TOOLS).text == "The file holds settings."
    replay = CassetteProvider(tmp_path, "read-config")
    replay.complete(ASK, TOOLS)
    with pytest.raises(ProviderError, match="turn 2"):  # a short word is not taken for it
        replay.complete(_after_call("the key is none here"), TOOLS)
