"""The Policies page over HTTP: the file rendered as text, validation and explain as JSON, a save
that applies on the gateway's next call or changes nothing, made by the session's operator."""

from __future__ import annotations

import html
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from harness.cli._options import shipped_policy_path
from harness.console import ConsoleConfig, ConsoleState, create_app
from harness.console._policy_edit import CHANGED, CHANGES_RUN, REFUSED
from harness.console._providers import ScriptProviders
from tests.unit.harness.console.conftest import ORIGIN, TOKEN, sign_in
from tests.unit.harness.console.policy_editing import POLICY, read_notes

BLOCKING = POLICY.replace("effect: allow", "effect: block")
SCRIPT = "<script>alert(1)</script>"
IMG = '"><img src=x onerror=alert(2)>'
NOTES = '{"path": "notes/todo.txt"}'


@pytest.fixture
def policy_file(console_state: ConsoleState) -> Path:
    """The console's own policy file, holding a rule whose description carries markup."""
    path = console_state.config.policy_path
    assert path is not None
    path.write_text(POLICY, encoding="utf-8")
    return path


def _headers(csrf: str) -> dict[str, str]:
    return {"X-CSRF-Token": csrf, "Origin": ORIGIN}


def _digest(page: str) -> str:
    found = re.search(r'id="policies" data-digest="([^"]*)"', page)
    assert found is not None
    return found.group(1)


def _textarea(page: str) -> str:
    found = re.search(r'<textarea id="policy-text"[^>]*>\n(.*?)</textarea>', page, re.S)
    assert found is not None
    return found.group(1)


def _topics(state: ConsoleState) -> list[tuple[str, Any]]:
    return [(event.topic, dict(event.data)) for event in state.hub.after(0).events]


def _audited(state: ConsoleState) -> list[tuple[str, dict[str, Any]]]:
    return [(event.kind, dict(event.data)) for event in state.gateway.audit.events(CHANGES_RUN)]


def _save(client: TestClient, csrf: str, text: str, digest: str | None, **extra: Any) -> Any:
    body = {"text": text, "digest": digest, **extra}
    return client.post("/policies/save", json=body, headers=_headers(csrf))


# -- the page ------------------------------------------------------------------------------------


def test_the_page_shows_the_file_as_escaped_text_with_its_digest(
    client: TestClient, console_state: ConsoleState, policy_file: Path
) -> None:
    sign_in(client)
    page = client.get("/policies")
    assert page.status_code == 200
    shown = _textarea(page.text)
    assert html.unescape(shown) == POLICY
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in shown and "&#34;&gt;&lt;img" in shown
    assert SCRIPT not in page.text and "<img src=x" not in page.text
    assert _digest(page.text).startswith("sha256:")
    for descriptor in console_state.gateway.registry.descriptors():
        assert f'<option value="{descriptor.name}">' in page.text
    assert 'id="policy-save">Save' in page.text  # not disabled
    assert 'id="read-only"' not in page.text


def test_a_policy_file_with_problems_is_shown_with_them_at_their_lines_escaped(
    client: TestClient, policy_file: Path
) -> None:
    policy_file.write_text(POLICY.replace("tool: fs.read", f"tool: '{IMG}'"), encoding="utf-8")
    sign_in(client)
    page = client.get("/policies").text
    assert re.search(r'data-line="9"><span class="where">line 9</span> <span class="badge">'
                     r"contract</span>", page)  # fmt: skip
    assert "<img src=x" not in page
    assert "tool &#39;&#34;&gt;&lt;img src=x onerror=alert(2)&gt;&#39; is not a known tool" in page


def test_the_page_needs_a_session(client: TestClient) -> None:
    response = client.get("/policies", headers={"Accept": "text/html"})
    assert response.status_code == 303
    assert response.headers["location"].startswith("/login")
    assert client.get("/policies/current").status_code == 401


def test_the_current_file_comes_back_as_json_for_a_reload(
    client: TestClient, policy_file: Path
) -> None:
    sign_in(client)
    body = client.get("/policies/current").json()
    assert body["text"] == POLICY
    assert body["digest"] == _digest(client.get("/policies").text)
    assert body["editable"] is True


# -- validation ----------------------------------------------------------------------------------


def test_validating_a_good_draft_says_ok_with_its_rules(
    client: TestClient, policy_file: Path
) -> None:
    csrf = sign_in(client)
    response = client.post("/policies/validate", json={"text": BLOCKING}, headers=_headers(csrf))
    assert response.status_code == 200
    body = response.json()
    assert (body["ok"], body["problems"], body["rules"]) == (True, [], 1)


def test_validating_a_bad_draft_lists_its_problems_with_lines_and_kinds(
    client: TestClient, policy_file: Path
) -> None:
    csrf = sign_in(client)
    draft = POLICY.replace("effect: allow", "effect: maybe").replace("fs.read", "fs.nope")
    body = client.post("/policies/validate", json={"text": draft}, headers=_headers(csrf)).json()
    assert body["ok"] is False
    assert [(p["line"], p["kind"]) for p in body["problems"]] == [(7, "schema")]
    yaml = client.post("/policies/validate", json={"text": "rules: [\n"}, headers=_headers(csrf))
    [problem] = yaml.json()["problems"]
    assert problem["kind"] == "yaml" and problem["line"] is not None
    assert policy_file.read_text(encoding="utf-8") == POLICY


def test_validating_an_unknown_tool_is_a_contract_problem_at_its_line(
    client: TestClient, policy_file: Path
) -> None:
    csrf = sign_in(client)
    draft = POLICY.replace("tool: fs.read", "tool: fs.nope")
    body = client.post("/policies/validate", json={"text": draft}, headers=_headers(csrf)).json()
    assert [(p["line"], p["kind"]) for p in body["problems"]] == [(9, "contract")]


@pytest.mark.parametrize(
    "body",
    [
        b"not json",
        b"[1, 2]",
        b'{"text": 3}',
        b"{}",
        b'{"text": null}',
        b"[" * 100_000 + b"]" * 100_000,
    ],
)
def test_a_malformed_validation_request_is_a_400_naming_the_problem(
    client: TestClient, body: bytes
) -> None:
    csrf = sign_in(client)
    response = client.post(
        "/policies/validate",
        content=body,
        headers={**_headers(csrf), "Content-Type": "application/json"},
    )
    assert response.status_code == 400
    assert response.json()["error"]


# -- explain -------------------------------------------------------------------------------------


def test_explain_shows_the_decision_and_rules_as_the_editor_gives_them(
    client: TestClient, console_state: ConsoleState, policy_file: Path
) -> None:
    from harness.console._policy_edit import PolicyEditor, SampleCall

    csrf = sign_in(client)
    request = {"tool": "fs.read", "arguments": NOTES, "actor": "ann", "agent": "a", "team": "t"}
    response = client.post("/policies/explain", json=request, headers=_headers(csrf))
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    body = response.json()
    editor = PolicyEditor.for_gateway(console_state.gateway, policy_file)
    expected = editor.explain(
        SampleCall("fs.read", {"path": "notes/todo.txt"}, actor="ann", agent="a", team="t")
    )
    assert body == expected
    explanation = body["explanation"]
    assert (explanation["effect"], explanation["rule_ids"]) == ("allow", ["read-notes"])
    assert SCRIPT in explanation["message"]  # JSON carries the text; the page sets it as text


def test_explain_under_the_draft_leaves_the_file_alone(
    client: TestClient, policy_file: Path
) -> None:
    csrf = sign_in(client)
    request = {"tool": "fs.read", "arguments": NOTES, "draft": BLOCKING}
    body = client.post("/policies/explain", json=request, headers=_headers(csrf)).json()
    assert body["explanation"]["effect"] == "block"
    assert body["explanation"]["reason"] == "blocked_by_rule"
    assert policy_file.read_text(encoding="utf-8") == POLICY


def test_explain_under_a_draft_that_does_not_parse_returns_its_problems(
    client: TestClient, policy_file: Path
) -> None:
    csrf = sign_in(client)
    request = {"tool": "fs.read", "arguments": "{}", "draft": "version: 1\nrules: [x]\n"}
    body = client.post("/policies/explain", json=request, headers=_headers(csrf)).json()
    assert body["ok"] is False
    assert body["problems"] and body["problems"][0]["line"] == 2


@pytest.mark.parametrize(
    ("request_body", "says"),
    [
        ({"tool": "fs.read", "arguments": "{not json"}, "not valid JSON"),
        ({"tool": "fs.read", "arguments": "[1]"}, "JSON object"),
        ({"tool": "fs.read", "arguments": {"path": "x"}}, "JSON text"),
        ({"tool": "", "arguments": "{}"}, "choose a tool"),
        ({"tool": "fs.read", "tokens_used": "-1"}, "whole number"),
        ({"tool": "fs.read", "tokens_used": "1e3"}, "whole number"),
        ({"tool": "fs.read", "tainted": "yes"}, "true or false"),
        ({"tool": "fs.read", "actor": "x" * 201}, "at most"),
        ({"tool": "fs.read", "draft": 7}, "policy text"),
    ],
)
def test_a_bad_explain_request_is_a_400_saying_why(
    client: TestClient, request_body: dict[str, Any], says: str
) -> None:
    csrf = sign_in(client)
    response = client.post("/policies/explain", json=request_body, headers=_headers(csrf))
    assert response.status_code == 400
    assert says in response.json()["error"]


# -- save ----------------------------------------------------------------------------------------


def test_a_save_applies_on_the_next_call_without_a_restart(
    client: TestClient, console_state: ConsoleState, policy_file: Path
) -> None:
    csrf = sign_in(client)
    assert read_notes(console_state.gateway, "c1") == "executed"
    digest = _digest(client.get("/policies").text)
    response = _save(client, csrf, BLOCKING, digest)
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["outcome"] == "saved"
    assert body["digest"] != digest and body["old_digest"] == digest
    assert "-    effect: allow\n+    effect: block\n" in body["diff"]
    assert policy_file.read_text(encoding="utf-8") == BLOCKING
    assert read_notes(console_state.gateway, "c2") == "blocked"
    assert _digest(client.get("/policies").text) == body["digest"]


def test_the_saver_is_the_sessions_operator_whatever_the_request_says(
    client: TestClient, console_state: ConsoleState, policy_file: Path
) -> None:
    csrf = sign_in(client, "dana")
    digest = _digest(client.get("/policies").text)
    response = _save(client, csrf, BLOCKING, digest, operator="mallory", reviewer="mallory")
    assert response.json()["outcome"] == "saved"
    [(kind, data)] = _audited(console_state)
    assert (kind, data["operator"]) == (CHANGED, "dana")
    [policy] = [data for topic, data in _topics(console_state) if topic == "policy"]
    assert policy["operator"] == "dana"
    assert policy["digest"] == response.json()["digest"]
    assert "mallory" not in repr(_audited(console_state)) + repr(_topics(console_state))


def test_a_save_is_announced_live_so_other_pages_know_their_text_is_stale(
    client: TestClient, console_state: ConsoleState, policy_file: Path
) -> None:
    csrf = sign_in(client)
    digest = _digest(client.get("/policies").text)
    body = _save(client, csrf, BLOCKING, digest).json()
    assert _topics(console_state) == [
        (
            "policy",
            {
                "operator": "ann",
                "digest": body["digest"],
                "old_digest": digest,
                "policy_digest": body["policy_digest"],
                "event_seq": body["event_seq"],
            },
        ),
        ("audit", {"run_id": CHANGES_RUN, "seq": body["event_seq"]}),
    ]


def test_a_save_over_a_stale_digest_is_a_409_and_writes_nothing(
    client: TestClient, console_state: ConsoleState, policy_file: Path
) -> None:
    csrf = sign_in(client)
    stale = _digest(client.get("/policies").text)
    edited = POLICY + "# edited by someone else\n"
    policy_file.write_text(edited, encoding="utf-8")  # the CLI, vim, another console
    response = _save(client, csrf, BLOCKING, stale)
    assert response.status_code == 409
    body = response.json()
    assert (body["outcome"], body["reason"]) == ("refused", "conflict")
    assert body["digest"] == _digest(client.get("/policies").text) != stale
    assert policy_file.read_text(encoding="utf-8") == edited
    assert read_notes(console_state.gateway, "c1") == "executed"
    assert [topic for topic, _ in _topics(console_state)] == ["audit"]  # no `policy` event
    assert [kind for kind, _ in _audited(console_state)] == [REFUSED]


def test_the_second_of_two_saves_from_one_loaded_digest_is_refused(
    client: TestClient, policy_file: Path
) -> None:
    csrf = sign_in(client)
    digest = _digest(client.get("/policies").text)
    assert _save(client, csrf, BLOCKING, digest).status_code == 200
    second = POLICY.replace("effect: allow", "effect: require_approval")
    response = _save(client, csrf, second, digest)
    assert response.status_code == 409
    assert policy_file.read_text(encoding="utf-8") == BLOCKING


@pytest.mark.parametrize(
    ("draft", "reason"),
    [
        (POLICY.replace("effect: allow", "effect: maybe"), "invalid"),
        ("rules: [\n", "invalid"),
        ("# nothing but a comment\n", "empty"),
        ("", "empty"),
    ],
)
def test_a_draft_that_does_not_validate_is_a_422_and_the_old_policy_stays_in_force(
    client: TestClient, console_state: ConsoleState, policy_file: Path, draft: str, reason: str
) -> None:
    csrf = sign_in(client)
    before = policy_file.read_bytes()
    digest = _digest(client.get("/policies").text)
    response = _save(client, csrf, draft, digest)
    assert response.status_code == 422
    body = response.json()
    assert (body["outcome"], body["reason"]) == ("refused", reason)
    assert body["problems"] or reason == "empty"
    assert policy_file.read_bytes() == before
    assert read_notes(console_state.gateway, "c1") == "executed"
    assert "policy" not in [topic for topic, _ in _topics(console_state)]


def test_saving_the_same_text_is_unchanged_and_announces_nothing(
    client: TestClient, console_state: ConsoleState, policy_file: Path
) -> None:
    csrf = sign_in(client)
    digest = _digest(client.get("/policies").text)
    response = _save(client, csrf, POLICY, digest)
    assert response.status_code == 200
    assert response.json()["outcome"] == "unchanged"
    assert _topics(console_state) == []


@pytest.mark.parametrize(
    "body", [b"not json", b'{"text": 1, "digest": "x"}', b'{"text": "version: 1", "digest": 5}']
)
def test_a_malformed_save_is_a_400_and_writes_nothing(
    client: TestClient, console_state: ConsoleState, policy_file: Path, body: bytes
) -> None:
    csrf = sign_in(client)
    response = client.post(
        "/policies/save",
        content=body,
        headers={**_headers(csrf), "Content-Type": "application/json"},
    )
    assert response.status_code == 400
    assert policy_file.read_text(encoding="utf-8") == POLICY
    assert _audited(console_state) == []


# -- forged requests -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "forgery",
    ["no csrf", "wrong csrf", "csrf of another session", "cross-site origin", "form post"],
)
def test_a_forged_save_changes_nothing(
    client: TestClient, console_state: ConsoleState, policy_file: Path, forgery: str
) -> None:
    csrf = sign_in(client)
    digest = _digest(client.get("/policies").text)
    before = policy_file.read_bytes()
    headers: dict[str, str] = {"Origin": ORIGIN}
    if forgery == "wrong csrf":
        headers["X-CSRF-Token"] = csrf + "x"
    elif forgery == "csrf of another session":
        with TestClient(client.app, base_url=ORIGIN, follow_redirects=False) as other:
            headers["X-CSRF-Token"] = sign_in(other, "eve")
    elif forgery == "cross-site origin":
        headers = {"X-CSRF-Token": csrf, "Origin": "http://evil.example"}
    if forgery == "form post":  # what a cross-site <form> can send: no header, no csrf field
        response = client.post(
            "/policies/save", data={"text": BLOCKING, "digest": digest}, headers=headers
        )
    else:
        response = client.post(
            "/policies/save", json={"text": BLOCKING, "digest": digest}, headers=headers
        )
    assert response.status_code == 403
    assert policy_file.read_bytes() == before
    assert read_notes(console_state.gateway, "c1") == "executed"
    assert _audited(console_state) == [] and _topics(console_state) == []


def test_a_save_without_a_session_is_refused(
    client: TestClient, console_state: ConsoleState, policy_file: Path
) -> None:
    response = client.post(
        "/policies/save", json={"text": BLOCKING, "digest": None}, headers={"Origin": ORIGIN}
    )
    assert response.status_code == 401
    assert policy_file.read_text(encoding="utf-8") == POLICY
    assert _audited(console_state) == []


# -- the shipped policy is read-only ---------------------------------------------------------


@pytest.fixture
def shipped_client(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[TestClient]:
    """A console started without --policy: it runs on the shipped policy."""
    monkeypatch.delenv("PROCTOR_AUDIT_KEY", raising=False)
    config = ConsoleConfig(state_dir=tmp_path / "state", token=TOKEN, policy_path=None)
    with ConsoleState(config, providers=ScriptProviders([])) as state:
        with TestClient(create_app(state), base_url=ORIGIN, follow_redirects=False) as client:
            yield client


def test_on_the_shipped_policy_the_page_is_read_only_and_says_how_to_edit(
    shipped_client: TestClient,
) -> None:
    sign_in(shipped_client)
    page = shipped_client.get("/policies").text
    assert 'id="read-only"' in page
    assert "--policy FILE" in page
    assert re.search(r'<button type="button" id="policy-save" disabled>', page)
    assert 'data-editable="false"' in page
    shipped = shipped_policy_path().read_text(encoding="utf-8")
    assert html.unescape(_textarea(page)) == shipped


def test_on_the_shipped_policy_a_save_is_a_403_and_the_file_is_untouched(
    shipped_client: TestClient,
) -> None:
    csrf = sign_in(shipped_client)
    shipped = shipped_policy_path()
    before = shipped.read_bytes()
    digest = _digest(shipped_client.get("/policies").text)
    draft = before.decode("utf-8") + "# mine\n"
    response = _save(shipped_client, csrf, draft, digest)
    assert response.status_code == 403
    assert response.json()["reason"] == "read_only"
    assert shipped.read_bytes() == before


def test_explain_arguments_nested_past_the_parsers_depth_are_a_400(client: TestClient) -> None:
    csrf = sign_in(client)
    deep = "[" * 100_000 + "]" * 100_000
    request = {"tool": "fs.read", "arguments": deep, "actor": "ann", "agent": "a", "team": "t"}
    response = client.post("/policies/explain", json=request, headers=_headers(csrf))
    assert response.status_code == 400
