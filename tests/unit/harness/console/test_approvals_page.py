"""The Approvals page: what a reviewer sees of a held call and every way a decision can go."""

from __future__ import annotations

import html
import json
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from governance import ManualClock, Principal, ToolCall
from harness.cli._options import shipped_policy_path
from harness.console import ConsoleConfig, ConsoleState
from harness.console._approvals_page import what_next
from tests.unit.harness.console.conftest import ORIGIN, TOKEN, sign_in

SCRIPT = "<script>alert(1)</script>"
BREAKOUT = '"><img src=x onerror=alert(1)>'
SECRET = "sk-live-ABCDEF0123456789abcdef"
PASSWORD = "hunter2hunter2"
RULE = "refunds-large-need-approval"
ANN = Principal("ann", "refund-bot", "support")


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def console_state(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, clock: ManualClock
) -> Iterator[ConsoleState]:
    """The shipped policy, with the rule that holds large refunds described by XSS payloads."""
    monkeypatch.delenv("PROCTOR_AUDIT_KEY", raising=False)
    text = shipped_policy_path().read_text()
    original = "description: Drafting a refund over 100 needs a human approval"
    assert original in text
    policy = tmp_path / "policy.yaml"
    policy.write_text(text.replace(original, f"description: '{SCRIPT} {BREAKOUT}'"))
    config = ConsoleConfig(state_dir=tmp_path / "state", token=TOKEN, policy_path=policy)
    with ConsoleState(config, clock=clock) as state:
        yield state


def hold(state: ConsoleState, *, actor: Principal = ANN, call_id: str = "c1") -> str:
    """A refund over the limit, proposed by `actor`, whose reason carries payloads and secrets."""
    reason = f"{SCRIPT} {BREAKOUT} api_key={SECRET} password={PASSWORD}"
    result = state.gateway.firewall.call(
        ToolCall(
            call_id,
            "refunds.create_draft",
            {"order_id": "ORD-0003", "amount": 250.0, "reason": reason},
            "run-1",
            actor,
        )
    )
    assert result.outcome == "held" and result.approval_id is not None
    return result.approval_id


def second(client: TestClient) -> TestClient:
    """Another browser on the same console."""
    return TestClient(client.app, base_url=ORIGIN, follow_redirects=False)


def post_json(client: TestClient, url: str, csrf: str, data: dict[str, str]) -> object:
    return client.post(url, json=data, headers={"X-CSRF-Token": csrf, "Origin": ORIGIN})


def status_of(state: ConsoleState, approval_id: str) -> str:
    return state.gateway.approvals.get(approval_id).status


def assert_no_secret(text: str) -> None:
    assert SECRET not in text and PASSWORD not in text


def test_a_pending_request_shows_tool_redacted_arguments_risk_rules_proposer_run_and_expiry(
    client: TestClient, console_state: ConsoleState
) -> None:
    approval_id = hold(console_state)
    sign_in(client, "bob")
    page = client.get("/approvals")
    assert page.status_code == 200
    body = page.text
    request = console_state.gateway.approvals.get(approval_id)
    for shown in (
        approval_id,
        "refunds.create_draft",
        "risk: ",
        request.risk,
        RULE,
        "ann",
        "refund-bot",
        "support",
        "run-1",
        request.expires_at.isoformat(),  # the countdown's data
        request.expires_at.strftime("%Y-%m-%d %H:%M:%S UTC"),
        html.escape(request.reason),
        "[REDACTED",
    ):
        assert shown in body, shown
    assert 'action="/approvals/apr-1/approve"' in body and 'name="set.amount"' in body
    assert_no_secret(body)


def test_the_proposer_sees_that_another_operator_must_approve(
    client: TestClient, console_state: ConsoleState
) -> None:
    hold(console_state)
    sign_in(client, "ann")
    assert "another operator must approve" in client.get("/approvals").text
    sign_in(client, "bob")
    assert "another operator must approve" not in client.get("/approvals").text


def test_approving_records_the_signed_in_operator_not_a_reviewer_field(
    client: TestClient, console_state: ConsoleState
) -> None:
    approval_id = hold(console_state)
    csrf = sign_in(client, "bob")
    before = console_state.hub.last_id
    response = post_json(
        client,
        f"/approvals/{approval_id}/approve",
        csrf,
        {"reviewer": "mallory", "decided_by": "mallory", "comment": "fine"},
    )
    assert response.status_code == 200, response.text
    assert response.json() == {
        "message": f"{approval_id} approved by bob; run run-1 is waiting for it and continues "
        "by itself",
        "kind": "approved",
    }
    request = console_state.gateway.approvals.get(approval_id)
    assert (request.status, request.decided_by, request.comment) == ("approved", "bob", "fine")
    assert request.approved_arguments is None  # nothing edited: runs as proposed
    events = console_state.hub.after(before).events
    assert [(e.topic, e.data.get("id")) for e in events if e.data.get("id")] == [
        ("approvals", approval_id)
    ]


def test_a_plain_form_without_script_approves_and_shows_the_outcome(
    client: TestClient, console_state: ConsoleState
) -> None:
    approval_id = hold(console_state)
    csrf = sign_in(client, "bob")
    response = client.post(
        f"/approvals/{approval_id}/approve",
        data={"csrf": csrf, "comment": "", "set.amount": "", "reviewer": "mallory"},
        headers={"Origin": ORIGIN},
    )
    assert response.status_code == 200
    assert "text/html" in response.headers["content-type"]
    assert f"{approval_id} approved by bob" in response.text
    assert status_of(console_state, approval_id) == "approved"
    assert console_state.gateway.approvals.get(approval_id).decided_by == "bob"
    assert_no_secret(response.text)


def test_the_proposer_cannot_approve_their_own_call(
    client: TestClient, console_state: ConsoleState
) -> None:
    approval_id = hold(console_state)
    csrf = sign_in(client, "ann")
    response = post_json(client, f"/approvals/{approval_id}/approve", csrf, {})
    assert response.status_code == 403
    assert response.json()["kind"] == "self_approval"
    assert "proposed by 'ann', who cannot approve it" in response.json()["error"]
    assert status_of(console_state, approval_id) == "pending"
    page = client.post(
        f"/approvals/{approval_id}/approve", data={"csrf": csrf}, headers={"Origin": ORIGIN}
    )
    assert page.status_code == 403 and "who cannot approve it" in page.text
    assert status_of(console_state, approval_id) == "pending"


def test_an_edit_sends_only_the_changed_keys_and_keeps_the_sealed_raw_values(
    client: TestClient, console_state: ConsoleState
) -> None:
    approval_id = hold(console_state)
    raw_reason = console_state.gateway.approvals.get(approval_id).arguments["reason"]
    csrf = sign_in(client, "bob")
    response = post_json(
        client, f"/approvals/{approval_id}/approve", csrf, {"set.amount": "80", "set.reason": ""}
    )
    assert response.status_code == 200, response.text
    assert "with edited arguments" in response.json()["message"]
    request = console_state.gateway.approvals.get(approval_id)
    assert request.approved_arguments == {
        "order_id": "ORD-0003",
        "amount": 80,
        "reason": raw_reason,  # the secret the reviewer only saw redacted, as proposed
    }
    page = client.get("/approvals").text
    assert "&#34;amount&#34;: 80" in page  # the decided list shows the edit, redacted
    assert_no_secret(page)


def test_a_bare_word_edit_is_text_as_with_the_cli_set_option(
    client: TestClient, console_state: ConsoleState
) -> None:
    approval_id = hold(console_state)
    csrf = sign_in(client, "bob")
    response = post_json(
        client,
        f"/approvals/{approval_id}/approve",
        csrf,
        {"set.amount": "80", "set.reason": "damaged in transit"},
    )
    assert response.status_code == 200, response.text
    edited = console_state.gateway.approvals.get(approval_id).approved_arguments
    assert edited is not None and edited["reason"] == "damaged in transit"


def test_a_refused_edit_says_why_and_the_request_stays_pending(
    client: TestClient, console_state: ConsoleState
) -> None:
    approval_id = hold(console_state)
    csrf = sign_in(client, "bob")
    before = console_state.hub.last_id
    response = post_json(
        client, f"/approvals/{approval_id}/approve", csrf, {"set.order_id": "ORD-9"}
    )
    assert response.status_code == 422
    body = response.json()
    assert body["kind"] == "edit_refused"
    assert body["error"].startswith("edit refused (") and "stays pending" in body["error"]
    assert "order_id" in body["error"]
    assert status_of(console_state, approval_id) == "pending"
    assert not [e for e in console_state.hub.after(before).events if e.data.get("id")]
    form = client.post(
        f"/approvals/{approval_id}/approve",
        data={"csrf": csrf, "set.order_id": "ORD-9"},
        headers={"Origin": ORIGIN},
    )
    assert form.status_code == 422 and "edit refused" in form.text
    assert status_of(console_state, approval_id) == "pending"


def test_an_edit_the_tool_schema_refuses_is_refused_with_the_request_pending(
    client: TestClient, console_state: ConsoleState
) -> None:
    approval_id = hold(console_state)
    csrf = sign_in(client, "bob")
    response = post_json(client, f"/approvals/{approval_id}/approve", csrf, {"set.amount": "-5"})
    assert response.status_code == 422 and response.json()["kind"] == "edit_refused"
    assert status_of(console_state, approval_id) == "pending"


@pytest.mark.parametrize(
    "payload",
    [{"set.": "1"}, {"comment": 5}, ["set.amount", "80"], "not an object"],
    ids=["nameless-edit", "non-text-value", "a-list", "a-string"],
)
def test_malformed_decisions_are_refused_and_change_nothing(
    client: TestClient, console_state: ConsoleState, payload: object
) -> None:
    approval_id = hold(console_state)
    csrf = sign_in(client, "bob")
    response = client.post(
        f"/approvals/{approval_id}/approve",
        json=payload,
        headers={"X-CSRF-Token": csrf, "Origin": ORIGIN},
    )
    assert response.status_code == 400 and response.json()["kind"] == "bad_input"
    assert status_of(console_state, approval_id) == "pending"


def test_a_body_that_is_not_json_is_refused(
    client: TestClient, console_state: ConsoleState
) -> None:
    approval_id = hold(console_state)
    csrf = sign_in(client, "bob")
    response = client.post(
        f"/approvals/{approval_id}/approve",
        content=b"{not json",
        headers={"X-CSRF-Token": csrf, "Origin": ORIGIN, "Content-Type": "application/json"},
    )
    assert response.status_code == 400
    assert status_of(console_state, approval_id) == "pending"


def test_a_rejection_needs_a_comment_and_records_it_with_the_operator(
    client: TestClient, console_state: ConsoleState
) -> None:
    approval_id = hold(console_state)
    csrf = sign_in(client, "bob")
    for empty in ({}, {"comment": "   "}):
        response = post_json(client, f"/approvals/{approval_id}/reject", csrf, empty)
        assert response.status_code == 400 and response.json()["kind"] == "comment_required"
        assert status_of(console_state, approval_id) == "pending"
    response = post_json(
        client,
        f"/approvals/{approval_id}/reject",
        csrf,
        {"comment": "refund too large", "reviewer": "mallory"},
    )
    assert response.status_code == 200
    request = console_state.gateway.approvals.get(approval_id)
    assert (request.status, request.decided_by, request.comment) == (
        "rejected",
        "bob",
        "refund too large",
    )
    decided = client.get("/approvals").text
    assert "refund too large" in decided and "Nothing is waiting for a decision" in decided


def test_deciding_what_someone_else_decided_first_is_a_conflict(
    client: TestClient, console_state: ConsoleState
) -> None:
    approval_id = hold(console_state)
    csrf = sign_in(client, "bob")
    other = second(client)
    other_csrf = sign_in(other, "carol")
    assert post_json(other, f"/approvals/{approval_id}/approve", other_csrf, {}).status_code == 200
    for action, data in (("approve", {}), ("reject", {"comment": "no"})):
        response = post_json(client, f"/approvals/{approval_id}/{action}", csrf, data)
        assert response.status_code == 409
        assert response.json()["kind"] == "conflict"
        assert "already approved by carol" in response.json()["error"]
    request = console_state.gateway.approvals.get(approval_id)
    assert (request.status, request.decided_by) == ("approved", "carol")


def test_an_expired_request_cannot_be_approved_and_is_listed_as_expired(
    client: TestClient, console_state: ConsoleState, clock: ManualClock
) -> None:
    approval_id = hold(console_state)
    csrf = sign_in(client, "bob")
    expires = console_state.gateway.approvals.get(approval_id).expires_at
    clock.advance((expires - clock.now()).total_seconds() + 1)
    response = post_json(client, f"/approvals/{approval_id}/approve", csrf, {})
    assert response.status_code == 409 and "has expired" in response.json()["error"]
    assert status_of(console_state, approval_id) == "expired"
    page = client.get("/approvals").text
    assert "Nothing is waiting for a decision" in page and "expired" in page


def test_an_unknown_request_is_not_found(client: TestClient, console_state: ConsoleState) -> None:
    csrf = sign_in(client, "bob")
    response = post_json(client, "/approvals/apr-404/approve", csrf, {})
    assert response.status_code == 404 and response.json()["kind"] == "not_found"


@pytest.mark.parametrize(
    "headers, form",
    [
        ({}, {}),  # neither the header nor the field
        ({"X-CSRF-Token": "forged"}, {}),
        ({}, {"csrf": "forged"}),
    ],
    ids=["no-csrf", "wrong-header", "wrong-field"],
)
def test_a_forged_decision_without_the_csrf_value_changes_nothing(
    client: TestClient,
    console_state: ConsoleState,
    headers: dict[str, str],
    form: dict[str, str],
) -> None:
    approval_id = hold(console_state)
    sign_in(client, "bob")
    before = console_state.hub.last_id
    for action in ("approve", "reject"):
        response = client.post(
            f"/approvals/{approval_id}/{action}",
            data={**form, "comment": "forged"},
            headers={"Origin": ORIGIN, **headers},
        )
        assert response.status_code == 403
    assert status_of(console_state, approval_id) == "pending"
    assert console_state.hub.last_id == before


def test_a_cross_site_decision_with_the_right_csrf_value_changes_nothing(
    client: TestClient, console_state: ConsoleState
) -> None:
    approval_id = hold(console_state)
    csrf = sign_in(client, "bob")
    response = client.post(
        f"/approvals/{approval_id}/approve",
        json={},
        headers={"X-CSRF-Token": csrf, "Origin": "http://evil.example"},
    )
    assert response.status_code == 403
    assert status_of(console_state, approval_id) == "pending"


def test_nobody_signed_in_can_see_or_decide(
    client: TestClient, console_state: ConsoleState
) -> None:
    approval_id = hold(console_state)
    assert client.get("/approvals", headers={"Accept": "text/html"}).status_code == 303
    assert client.get("/approvals.json", headers={"Accept": "application/json"}).status_code == 401
    response = client.post(f"/approvals/{approval_id}/approve", json={}, headers={"Origin": ORIGIN})
    assert response.status_code == 401
    assert status_of(console_state, approval_id) == "pending"


def test_payloads_in_arguments_rule_descriptions_and_comments_render_as_text(
    client: TestClient, console_state: ConsoleState
) -> None:
    first = hold(console_state)
    hold(console_state, call_id="c2")
    csrf = sign_in(client, "bob")
    post_json(client, f"/approvals/{first}/reject", csrf, {"comment": f"{SCRIPT} {BREAKOUT}"})
    for url in ("/approvals", "/approvals/fragment"):
        body = client.get(url).text
        assert SCRIPT not in body and BREAKOUT not in body
        assert "<img" not in body
        assert html.escape(SCRIPT) in body  # the rule description, the comment
        assert "&#34;&gt;&lt;img src=x onerror=alert(1)&gt;" in body  # description, comment
        assert "\\&#34;&gt;&lt;img src=x onerror=alert(1)&gt;" in body  # inside the arguments


def test_a_raw_secret_argument_is_in_no_response(
    client: TestClient, console_state: ConsoleState
) -> None:
    first = hold(console_state)
    second_id = hold(console_state, call_id="c2")
    assert SECRET in json.dumps(console_state.gateway.approvals.get(first).arguments)
    csrf = sign_in(client, "bob")
    responses = [
        client.get("/approvals"),
        client.get("/approvals/fragment"),
        client.get("/approvals.json"),
        post_json(client, f"/approvals/{first}/approve", csrf, {"set.amount": "80"}),
        client.post(
            f"/approvals/{second_id}/approve",
            data={"csrf": csrf, "set.order_id": "ORD-9"},
            headers={"Origin": ORIGIN},
        ),
        client.get("/approvals"),
        client.get("/approvals.json"),
    ]
    for response in responses:
        assert_no_secret(response.text)
    listed = client.get("/approvals.json").json()
    assert [r["id"] for r in listed["pending"]] == [second_id]
    assert "[REDACTED" in listed["pending"][0]["arguments"]["reason"]


def test_the_fragment_is_the_lists_alone_for_the_page_script_to_swap_in(
    client: TestClient, console_state: ConsoleState
) -> None:
    approval_id = hold(console_state)
    sign_in(client, "bob")
    fragment = client.get("/approvals/fragment").text
    assert fragment.lstrip().startswith('<div id="approval-lists">')
    assert "<html" not in fragment and f'data-approval-id="{approval_id}"' in fragment


def test_the_page_has_no_inline_script_or_style(
    client: TestClient, console_state: ConsoleState
) -> None:
    hold(console_state)
    sign_in(client, "bob")
    body = client.get("/approvals").text
    assert "<script>" not in body and " style=" not in body and " onclick=" not in body
    assert '<script src="/static/approvals.js" defer></script>' in body


def test_an_approval_says_who_runs_the_call_next(console_state: ConsoleState) -> None:
    approval_id = hold(console_state)
    awaited = console_state.gateway.approvals.get(approval_id)
    assert what_next(console_state, awaited) == (
        "run run-1 is waiting for it and continues by itself"
    )
    # A detached request with no stored run: its client runs it, as the CLI says.
    detached = replace(awaited, waiter=None)
    assert "run run-1 is not a stored run: the client that made the call runs it" in what_next(
        console_state, detached
    )
