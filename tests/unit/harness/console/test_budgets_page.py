"""The Budgets page: usage per scope key, and the two-person reset from two browsers."""

from __future__ import annotations

import html
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from governance import Principal, ToolCall
from harness.console import ConsoleConfig, ConsoleState
from harness.console._budget_resets import ResetDesk, ResetRefused
from tests.unit.harness.console.conftest import ORIGIN, TOKEN, sign_in

SCRIPT = "<script>alert(1)</script>"
BREAKOUT = '"><img src=x onerror=alert(1)>'
POLICY = """
version: 1
rules:
  - {id: delete-notes, effect: allow, match: {tool: fs.delete}}
budgets:
  - id: one-per-run
    description: 'One deletion per run DESCRIPTION'
    scope: agent_run
    limit: 1
    window_seconds: 3600
""".replace("DESCRIPTION", BREAKOUT.replace("'", "''"))
ANN = Principal("ann", "cleaner", "ops")


@pytest.fixture
def console_state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ConsoleState]:
    """One budget (one deletion per run), spent by ann's run-1."""
    monkeypatch.delenv("PROCTOR_AUDIT_KEY", raising=False)
    policy = tmp_path / "policy.yaml"
    policy.write_text(POLICY)
    config = ConsoleConfig(state_dir=tmp_path / "state", token=TOKEN, policy_path=policy)
    with ConsoleState(config) as state:
        result = state.gateway.firewall.call(
            ToolCall("c1", "fs.delete", {"path": "notes/todo.txt"}, "run-1", ANN)
        )
        assert result.decision is not None and result.decision.effect == "allow"
        yield state


def other_browser(client: TestClient) -> TestClient:
    return TestClient(client.app, base_url=ORIGIN, follow_redirects=False)


def post(client: TestClient, url: str, csrf: str, data: dict[str, str]) -> object:
    return client.post(url, json=data, headers={"X-CSRF-Token": csrf, "Origin": ORIGIN})


def used(state: ConsoleState) -> int:
    rows = state.gateway.budgets.status(state.gateway.policy.current().budgets)
    assert [(r.budget_id, r.key) for r in rows] == [("one-per-run", "run-1")]
    return rows[0].used


ASK = {"scope": "agent_run", "key": "run-1", "budget": "one-per-run", "reason": "loop fixed"}


def test_usage_per_budget_and_key_flags_an_exhausted_one(
    client: TestClient, console_state: ConsoleState
) -> None:
    sign_in(client, "dana")
    body = client.get("/budgets").text
    assert 'data-budget="one-per-run" data-key="run-1" class="exhausted"' in body
    assert "1 / 1" in body and "EXHAUSTED" in body and "1h" in body and "never" in body
    rows = client.get("/budgets.json").json()["rows"]
    assert [(r["budget"], r["key"], r["used"], r["limit"], r["remaining"]) for r in rows] == [
        ("one-per-run", "run-1", 1, 1, 0)
    ]


def test_a_reset_needs_a_second_operator_who_confirms_it(
    client: TestClient, console_state: ConsoleState
) -> None:
    dana = sign_in(client, "dana")
    before = console_state.hub.last_id
    asked = post(client, "/budgets/resets", dana, ASK)
    assert asked.status_code == 200 and asked.json()["kind"] == "requested"
    assert used(console_state) == 1  # asking releases nothing
    erin_browser = other_browser(client)
    erin = sign_in(erin_browser, "erin")
    pending = erin_browser.get("/budgets.json").json()["pending"]
    assert [(p["id"], p["requested_by"], p["reason"]) for p in pending] == [
        ("reset-1", "dana", "loop fixed")
    ]
    confirmed = post(erin_browser, "/budgets/resets/reset-1/confirm", erin, {})
    assert confirmed.status_code == 200, confirmed.text
    assert confirmed.json()["message"] == (
        "reset one-per-run for agent_run=run-1 (by dana, approved by erin)"
    )
    assert used(console_state) == 0
    (made,) = console_state.gateway.budgets.resets()
    assert (made.by, made.approved_by, made.reason) == ("dana", "erin", "loop fixed")
    assert len(console_state.gateway.budgets.ledger("one-per-run", "run-1")) == 1  # evidence
    assert client.get("/budgets.json").json()["pending"] == []
    topics = [e.topic for e in console_state.hub.after(before).events]
    assert topics.count("budgets") == 2  # asked, then reset: every open page refreshes
    page = client.get("/budgets").text
    assert "EXHAUSTED" not in page and "0 / 1" in page


def test_the_operator_who_asked_cannot_confirm_their_own_reset(
    client: TestClient, console_state: ConsoleState
) -> None:
    dana = sign_in(client, "dana")
    post(client, "/budgets/resets", dana, ASK)
    refused = post(client, "/budgets/resets/reset-1/confirm", dana, {})
    assert refused.status_code == 403 and refused.json()["kind"] == "same_person"
    assert "cannot both request and approve a reset" in refused.json()["error"]
    assert used(console_state) == 1 and console_state.gateway.budgets.resets() == []
    assert [p["id"] for p in client.get("/budgets.json").json()["pending"]] == ["reset-1"]
    page = client.post(
        "/budgets/resets/reset-1/confirm", data={"csrf": dana}, headers={"Origin": ORIGIN}
    )
    assert page.status_code == 403 and "a second person must approve" in page.text


def test_a_person_charged_to_the_budget_cannot_release_it(
    client: TestClient, console_state: ConsoleState
) -> None:
    dana = sign_in(client, "dana")
    post(client, "/budgets/resets", dana, ASK)
    ann_browser = other_browser(client)
    ann = sign_in(ann_browser, "ann")
    refused = post(ann_browser, "/budgets/resets/reset-1/confirm", ann, {})
    assert refused.status_code == 403 and refused.json()["kind"] == "self_release"
    assert used(console_state) == 1


def test_the_operators_are_the_signed_in_names_never_form_fields(
    client: TestClient, console_state: ConsoleState
) -> None:
    dana = sign_in(client, "dana")
    post(client, "/budgets/resets", dana, {**ASK, "by": "mallory", "requested_by": "mallory"})
    erin_browser = other_browser(client)
    erin = sign_in(erin_browser, "erin")
    response = erin_browser.post(
        "/budgets/resets/reset-1/confirm",
        data={"csrf": erin, "approved_by": "mallory", "by": "mallory"},
        headers={"Origin": ORIGIN},
    )
    assert response.status_code == 200
    (made,) = console_state.gateway.budgets.resets()
    assert (made.by, made.approved_by) == ("dana", "erin")


@pytest.mark.parametrize(
    "change, code",
    [
        ({"reason": "  "}, "missing_reason"),
        ({"key": ""}, "missing_key"),
        ({"scope": "galaxy"}, "bad_scope"),
        ({"scope": "team", "budget": ""}, "no_such_budget"),
        ({"budget": "no-such"}, "no_such_budget"),
    ],
)
def test_an_incomplete_reset_request_is_refused_and_nothing_waits(
    client: TestClient, console_state: ConsoleState, change: dict[str, str], code: str
) -> None:
    dana = sign_in(client, "dana")
    response = post(client, "/budgets/resets", dana, {**ASK, **change})
    assert response.status_code == 400 and response.json()["kind"] == code
    assert client.get("/budgets.json").json()["pending"] == []


def test_the_same_reset_cannot_be_asked_twice(
    client: TestClient, console_state: ConsoleState
) -> None:
    dana = sign_in(client, "dana")
    assert post(client, "/budgets/resets", dana, ASK).status_code == 200
    again = post(client, "/budgets/resets", dana, ASK)
    assert again.status_code == 400 and again.json()["kind"] == "duplicate"


def test_a_reset_confirmed_or_withdrawn_already_cannot_be_confirmed(
    client: TestClient, console_state: ConsoleState
) -> None:
    dana = sign_in(client, "dana")
    post(client, "/budgets/resets", dana, ASK)
    withdrawn = post(client, "/budgets/resets/reset-1/cancel", dana, {})
    assert withdrawn.status_code == 200
    erin_browser = other_browser(client)
    erin = sign_in(erin_browser, "erin")
    late = post(erin_browser, "/budgets/resets/reset-1/confirm", erin, {})
    assert late.status_code == 404 and late.json()["kind"] == "not_found"
    assert post(erin_browser, "/budgets/resets/reset-1/cancel", erin, {}).status_code == 404
    assert used(console_state) == 1


@pytest.mark.parametrize(
    "headers, form",
    [({}, {}), ({"X-CSRF-Token": "forged"}, {}), ({}, {"csrf": "forged"})],
    ids=["no-csrf", "wrong-header", "wrong-field"],
)
def test_a_forged_reset_without_the_csrf_value_changes_nothing(
    client: TestClient,
    console_state: ConsoleState,
    headers: dict[str, str],
    form: dict[str, str],
) -> None:
    dana = sign_in(client, "dana")
    post(client, "/budgets/resets", dana, ASK)
    erin_browser = other_browser(client)
    sign_in(erin_browser, "erin")
    for url in ("/budgets/resets", "/budgets/resets/reset-1/confirm"):
        response = erin_browser.post(
            url, data={**form, **ASK}, headers={"Origin": ORIGIN, **headers}
        )
        assert response.status_code == 403
    assert used(console_state) == 1 and console_state.gateway.budgets.resets() == []
    assert [p["id"] for p in client.get("/budgets.json").json()["pending"]] == ["reset-1"]


def test_payloads_in_a_reason_key_and_description_render_as_text(
    client: TestClient, console_state: ConsoleState
) -> None:
    dana = sign_in(client, "dana")
    post(client, "/budgets/resets", dana, {**ASK, "reason": f"{SCRIPT} {BREAKOUT}"})
    post(client, "/budgets/resets", dana, {**ASK, "budget": "", "key": SCRIPT, "reason": "x"})
    for url in ("/budgets", "/budgets/fragment"):
        body = client.get(url).text
        assert SCRIPT not in body and BREAKOUT not in body and "<img" not in body
        assert html.escape(SCRIPT) in body
        assert "&#34;&gt;&lt;img src=x onerror=alert(1)&gt;" in body


def test_the_page_has_no_inline_script_or_style(
    client: TestClient, console_state: ConsoleState
) -> None:
    sign_in(client, "dana")
    body = client.get("/budgets").text
    assert "<script>" not in body and " style=" not in body and " onclick=" not in body
    assert '<script src="/static/budgets.js" defer></script>' in body


def test_a_reset_confirmed_by_many_at_once_is_made_exactly_once(
    console_state: ConsoleState,
) -> None:
    desk = ResetDesk(console_state.gateway, console_state.clock)
    asked = desk.request(scope="agent_run", key="run-1", budget_id=None, reason="fixed", by="dana")
    outcomes: list[str] = []
    start = threading.Barrier(6)

    def confirm(who: str) -> None:
        start.wait()
        try:
            desk.confirm(asked.id, by=who)
            outcomes.append("done")
        except ResetRefused as exc:
            outcomes.append(exc.code)

    threads = [threading.Thread(target=confirm, args=(f"op{i}",)) for i in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(outcomes) == ["done"] + ["not_found"] * 5
    assert len(console_state.gateway.budgets.resets()) == 1
    assert desk.pending() == []
