"""The Agent page over HTTP: a turn starts as the signed-in operator and only with the CSRF
value, every model, tool and user string renders as text, secrets stay redacted, and unknown
runs are 404s. Turns are waited for on the hub, never by sleeping."""

from __future__ import annotations

import html
import re
import shutil
import time
from collections.abc import Callable, Collection, Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from governance.tools import outbox_rows
from harness._errors import HarnessError
from harness.cli._options import shipped_policy_path
from harness.console import ConsoleConfig, ConsoleState, create_app
from harness.console._providers import ProviderFactory, ScriptProviders, TurnProvider
from tests.unit.harness.console.conftest import BOUND, ORIGIN, TOKEN, sign_in

SCRIPT_TAG = "<script>alert(1)</script>"
ATTRIBUTE_BREAK = '"><img src=x onerror=alert(1)>'
PAYLOADS = (SCRIPT_TAG, ATTRIBUTE_BREAK)
SECRET = "sk-abcdefghijklmnopqrstuvwxyz0123456789"

# The model writes a file whose text is the payloads, reads it back (so a tool output carries
# them), then answers with them.
XSS_SCRIPT: list[Any] = [
    {"calls": [{"tool": "fs.write",
                "args": {"path": "reports/x.md", "content": f"{SCRIPT_TAG} {ATTRIBUTE_BREAK}"}}]},
    {"calls": [{"tool": "fs.read", "args": {"path": "reports/x.md"}}]},
    {"answer": f"Done: {SCRIPT_TAG} and {ATTRIBUTE_BREAK}"},
]  # fmt: skip


def wait_until(state: ConsoleState, run_id: str, statuses: Collection[str]) -> dict[str, Any]:
    """The run's view once its status is one of `statuses` (waiting on the hub, bounded)."""
    deadline = time.monotonic() + BOUND
    while True:
        view = state.sessions.view(run_id)
        if view["status"] in statuses:
            return view
        left = deadline - time.monotonic()
        assert left > 0, f"{run_id} is still {view['status']}"
        state.hub.wait_after(view["hub_id"], left)


def start(client: TestClient, csrf: str, request: str) -> str:
    response = client.post("/agent", data={"csrf": csrf, "request": request},
                           headers={"Origin": ORIGIN})  # fmt: skip
    assert response.status_code == 303, response.text
    location = response.headers["location"]
    assert location.startswith("/agent/")
    return location.removeprefix("/agent/")


@pytest.fixture
def open_client(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Callable[[ProviderFactory], tuple[TestClient, ConsoleState]]]:
    """A console app whose turns get their model from the factory given."""
    monkeypatch.delenv("PROCTOR_AUDIT_KEY", raising=False)
    opened: list[tuple[TestClient, ConsoleState]] = []

    def make(providers: ProviderFactory) -> tuple[TestClient, ConsoleState]:
        policy = tmp_path / "policy.yaml"
        shutil.copyfile(shipped_policy_path(), policy)
        config = ConsoleConfig(state_dir=tmp_path / "state", token=TOKEN, policy_path=policy)
        state = ConsoleState(config, providers=providers)
        client = TestClient(create_app(state), base_url=ORIGIN, follow_redirects=False)
        client.__enter__()
        opened.append((client, state))
        return client, state

    yield make
    for client, state in reversed(opened):
        client.__exit__(None, None, None)
        state.close()


def test_a_turn_started_from_the_page_runs_as_the_signed_in_operator(
    client: TestClient, console_state: ConsoleState
) -> None:
    csrf = sign_in(client, "ann")
    run_id = start(client, csrf, "mail the CFO the Q3 numbers")
    view = wait_until(console_state, run_id, {"waiting_approval"})
    requested = [e for e in console_state.gateway.audit.events(run_id)
                 if e.kind == "tool.requested"]  # fmt: skip
    assert requested[0].data["principal"]["actor"] == "ann"
    assert view["operator"] == "ann"
    page = client.get(f"/agent/{run_id}")
    assert page.status_code == 200
    assert 'id="held-banner"' in page.text and "Waiting for approval" in page.text
    assert view["held"]["approval_id"] in page.text and 'href="/approvals"' in page.text
    listed = client.get("/agent.json").json()["runs"]
    assert [(r["run_id"], r["operator"], r["status"]) for r in listed] == [
        (run_id, "ann", "waiting_approval")
    ]


def test_the_page_subscribes_from_the_id_its_view_was_read_at_not_a_later_one(
    client: TestClient, console_state: ConsoleState, monkeypatch: pytest.MonkeyPatch
) -> None:
    csrf = sign_in(client, "ann")
    run_id = start(client, csrf, "mail the CFO")
    view = wait_until(console_state, run_id, {"waiting_approval"})
    read = console_state.sessions.view

    def view_then_more(run: str) -> dict[str, Any]:
        seen = read(run)
        console_state.hub.publish("run", {"run_id": run, "seq": 99})  # while the page renders
        return seen

    monkeypatch.setattr(console_state.sessions, "view", view_then_more)
    page = client.get(f"/agent/{run_id}").text
    hub_id = re.search(r'data-hub-id="(\d+)"', page)
    assert hub_id is not None and int(hub_id.group(1)) == view["hub_id"]
    rendered = [int(s) for s in re.findall(r'<li class="event[^"]*" data-seq="(\d+)"', page)]
    assert rendered == [e["seq"] for e in view["events"]]


def test_the_turn_continues_after_another_operator_approves_and_the_page_shows_the_answer(
    client: TestClient, console_state: ConsoleState
) -> None:
    csrf = sign_in(client, "ann")
    run_id = start(client, csrf, "mail the CFO")
    approval_id = wait_until(console_state, run_id, {"waiting_approval"})["held"]["approval_id"]
    console_state.gateway.firewall.approve(approval_id, "bob")
    wait_until(console_state, run_id, {"completed"})
    turn = client.get(f"/agent/{run_id}.json").json()
    assert turn["final_answer"] == "Sent as message 1." and turn["held"] is None
    labels = [e["label"] for e in turn["events"]]
    assert "decision: approved by bob" in labels and "executed" in labels
    page = client.get(f"/agent/{run_id}").text
    assert "Sent as message 1." in page and 'id="held-banner"' not in page


def test_a_forged_post_without_the_csrf_value_starts_nothing(
    client: TestClient, console_state: ConsoleState
) -> None:
    sign_in(client, "ann")
    no_csrf = client.post("/agent", data={"request": "mail the CFO"}, headers={"Origin": ORIGIN})
    wrong = client.post("/agent", data={"csrf": "forged", "request": "mail the CFO"},
                        headers={"Origin": ORIGIN})  # fmt: skip
    assert (no_csrf.status_code, wrong.status_code) == (403, 403)
    assert console_state.sessions.runs() == []
    assert outbox_rows(console_state.gateway.workspace) == []


def test_a_post_from_another_origin_starts_nothing_even_with_the_csrf_value(
    client: TestClient, console_state: ConsoleState
) -> None:
    csrf = sign_in(client, "ann")
    response = client.post("/agent", data={"csrf": csrf, "request": "mail the CFO"},
                           headers={"Origin": "http://evil.example"})  # fmt: skip
    assert response.status_code == 403
    assert console_state.sessions.runs() == []


def test_signed_out_the_page_redirects_and_the_json_refuses(client: TestClient) -> None:
    assert client.get("/agent", headers={"Accept": "text/html"}).status_code == 303
    assert client.get("/agent.json", headers={"Accept": "application/json"}).status_code == 401


def test_a_blank_request_is_shown_as_an_error_on_the_page_and_starts_nothing(
    client: TestClient, console_state: ConsoleState
) -> None:
    csrf = sign_in(client, "ann")
    response = client.post("/agent", data={"csrf": csrf, "request": "   "},
                           headers={"Origin": ORIGIN})  # fmt: skip
    assert response.status_code == 400
    assert 'id="agent-error"' in response.text and "the request is empty" in response.text
    assert console_state.sessions.runs() == []


def test_a_provider_that_cannot_be_built_is_shown_on_the_page_not_a_500(
    open_client: Callable[[ProviderFactory], tuple[TestClient, ConsoleState]],
) -> None:
    def no_provider() -> TurnProvider:
        raise HarnessError("the live provider needs PROCTOR_LLM_API_KEY")

    client, state = open_client(no_provider)
    csrf = sign_in(client, "ann")
    response = client.post("/agent", data={"csrf": csrf, "request": "hello"},
                           headers={"Origin": ORIGIN})  # fmt: skip
    assert response.status_code == 400
    assert "no model provider" in response.text and "PROCTOR_LLM_API_KEY" in response.text
    assert "hello</textarea>" in response.text  # what was typed is kept
    assert state.sessions.runs() == []


def test_model_tool_and_user_strings_render_as_text_on_the_page_and_in_the_json(
    open_client: Callable[[ProviderFactory], tuple[TestClient, ConsoleState]],
) -> None:
    client, state = open_client(ScriptProviders(XSS_SCRIPT))
    csrf = sign_in(client, "ann")
    run_id = start(client, csrf, f"write {SCRIPT_TAG} then {ATTRIBUTE_BREAK}")
    view = wait_until(state, run_id, {"completed"})
    tool_outputs = [m["content"] for m in view["messages"] if m["role"] == "tool"]
    assert any(SCRIPT_TAG in c and ATTRIBUTE_BREAK in c for c in tool_outputs)  # it is there
    assert SCRIPT_TAG in view["final_answer"] and SCRIPT_TAG in view["request"]
    for path in (f"/agent/{run_id}", "/agent"):
        page = client.get(path).text
        for payload in PAYLOADS:
            assert payload not in page, path
        assert "<img" not in page and "<script>alert" not in page
    page = client.get(f"/agent/{run_id}").text
    assert html.escape(SCRIPT_TAG) in page  # shown, as text
    # In the JSON the payloads are data, not markup: the script sets them as textContent.
    response = client.get(f"/agent/{run_id}.json")
    assert response.headers["content-type"].startswith("application/json")
    assert SCRIPT_TAG in response.json()["final_answer"]


def test_a_secret_typed_in_the_request_is_never_shown(
    client: TestClient, console_state: ConsoleState
) -> None:
    csrf = sign_in(client, "ann")
    run_id = start(client, csrf, f"mail the CFO my key {SECRET}")
    wait_until(console_state, run_id, {"waiting_approval"})
    for path in (f"/agent/{run_id}", f"/agent/{run_id}.json", "/agent", "/agent.json"):
        body = client.get(path).text
        assert SECRET not in body, path
        assert "[REDACTED" in body, path


def test_an_unknown_run_is_a_404_as_a_page_and_as_json(client: TestClient) -> None:
    sign_in(client, "ann")
    page = client.get("/agent/console-000000000000")
    assert page.status_code == 404 and "No such turn" in page.text
    assert client.get("/agent/console-000000000000.json").status_code == 404
    assert client.get("/agent/..json").status_code == 404
    assert client.get(f"/agent/{SCRIPT_TAG}").text.count("<script>alert") == 0


def test_the_json_of_another_run_id_is_a_404_not_someone_elses_turn(
    client: TestClient, console_state: ConsoleState
) -> None:
    csrf = sign_in(client, "ann")
    run_id = start(client, csrf, "mail the CFO")
    wait_until(console_state, run_id, {"waiting_approval"})
    assert client.get(f"/agent/{run_id}.json").status_code == 200
    other = client.get(f"/agent/{run_id}x.json")
    assert other.status_code == 404 and "mail the CFO" not in other.text


def test_the_pages_own_form_post_starts_a_turn_though_the_browser_sends_origin_null(
    client: TestClient, console_state: ConsoleState
) -> None:
    # Under `Referrer-Policy: no-referrer` a browser's same-origin form POST carries
    # `Origin: null`; Sec-Fetch-Site says where it really came from.
    csrf = sign_in(client, "ann")
    response = client.post("/agent", data={"csrf": csrf, "request": "mail the CFO"},
                           headers={"Origin": "null", "Sec-Fetch-Site": "same-origin"})  # fmt: skip
    assert response.status_code == 303
    run_id = response.headers["location"].removeprefix("/agent/")
    wait_until(console_state, run_id, {"waiting_approval"})


def test_a_cross_site_form_post_starts_nothing_whatever_its_origin_says(
    client: TestClient, console_state: ConsoleState
) -> None:
    csrf = sign_in(client, "ann")
    for origin in ("null", ORIGIN):
        headers = {"Origin": origin, "Sec-Fetch-Site": "cross-site"}
        form = {"csrf": csrf, "request": "mail the CFO"}
        response = client.post("/agent", data=form, headers=headers)
        assert response.status_code == 403
    assert console_state.sessions.runs() == []


def test_a_secret_written_with_json_escapes_in_tool_arguments_is_never_shown(
    open_client: Callable[[ProviderFactory], tuple[TestClient, ConsoleState]],
) -> None:
    # `\u0049` is "I": the arguments decode to an AWS key id, which the redactor knows only
    # once the JSON text is read.
    escaped = '{"path": "notes/AKIA\\u0049OSFODNN7EXAMPLE.txt"}'
    decoded = "AKIAIOSFODNN7EXAMPLE"
    script: list[Any] = [
        {"calls": [{"tool": "fs.read", "raw_args": escaped}]},
        {"answer": "done"},
    ]
    client, state = open_client(ScriptProviders(script))
    csrf = sign_in(client, "ann")
    run_id = start(client, csrf, "read the notes")
    view = wait_until(state, run_id, {"completed", "failed"})
    shown = [client.get(p).text for p in (f"/agent/{run_id}", f"/agent/{run_id}.json")]
    shown.append(repr([e.data for e in state.hub.after(0).events]))
    for body in shown:
        assert decoded not in body
        assert "AKIA\\\\u0049OSFODNN7EXAMPLE" not in body and "u0049OSFODNN7" not in body
    assert any("[REDACTED" in str(m) for m in view["messages"])


@pytest.mark.parametrize("path", ["/agent/%00", "/agent/%00.json", "/agent/a%00b.json"])
def test_a_run_id_with_a_nul_byte_is_a_404_not_a_server_error(
    client: TestClient, path: str
) -> None:
    sign_in(client, "ann")
    assert client.get(path).status_code == 404
