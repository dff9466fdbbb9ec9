"""The Audit page: runs on the gateway's chain, filters, one run's events, verification."""

from __future__ import annotations

import html
import re
import sqlite3
from pathlib import Path

from starlette.testclient import TestClient

from governance import Principal, ToolCall
from harness.console import ConsoleConfig, ConsoleState, create_app
from harness.console import _audit_view as view
from tests.unit.harness.console.conftest import ORIGIN, TOKEN, sign_in

ANN = Principal("ann", "cleaner", "ops")
SCRIPT = "<script>alert(1)</script>"
ATTR = '"><img src=x onerror=alert(1)>'


def _call(state: ConsoleState, run_id: str, call_id: str, tool: str, arguments: dict) -> None:
    state.gateway.firewall.call(ToolCall(call_id, tool, arguments, run_id, ANN))


def _two_runs(state: ConsoleState) -> None:
    """run-read: one allowed read (executes or fails on a missing file); run-secret: a read
    under secrets/ that the shipped policy blocks, and a search it allows."""
    _call(state, "run-read", "c-read", "fs.read", {"path": "notes/todo.txt"})
    _call(state, "run-secret", "c-block", "fs.read", {"path": "secrets/key.txt"})
    _call(state, "run-secret", "c-search", "fs.search", {"query": "x", "path": "notes/"})


def _tamper(state: ConsoleState, run_id: str, seq: int) -> None:
    """Change a stored row's data behind the log's back, as someone with the file would."""
    path = state.config.state_dir / "audit.sqlite"
    with sqlite3.connect(path) as conn:
        (data,) = conn.execute(
            "SELECT data FROM audit_events WHERE run_id = ? AND seq = ?", (run_id, seq)
        ).fetchone()
        changed = data.replace("secrets/key.txt", "notes/ok.txt")
        assert changed != data
        conn.execute(
            "UPDATE audit_events SET data = ? WHERE run_id = ? AND seq = ?", (changed, run_id, seq)
        )


def _run_ids(page: str) -> list[str]:
    return re.findall(r'<tr data-run-id="([^"]*)">', page)


def test_the_audit_page_needs_a_session(client: TestClient) -> None:
    response = client.get("/audit", headers={"Accept": "text/html"})
    assert response.status_code == 303
    assert response.headers["location"].startswith("/login")
    assert client.get("/audit/verify", headers={"Accept": "application/json"}).status_code == 401


def test_the_runs_list_shows_every_run_with_its_count_times_and_verdict(
    client: TestClient, console_state: ConsoleState
) -> None:
    _two_runs(console_state)
    sign_in(client)
    page = client.get("/audit").text
    assert sorted(_run_ids(page)) == ["run-read", "run-secret"]
    secret_events = len(console_state.gateway.audit.events("run-secret"))
    row = page[page.index('data-run-id="run-secret"') :].split("</tr>")[0]
    assert f"<td>{secret_events}</td>" in row
    first = console_state.gateway.audit.events("run-secret")[0].ts
    assert first in row
    assert "verifies" in row and "BROKEN" not in page


def test_an_empty_log_says_so(client: TestClient) -> None:
    sign_in(client)
    page = client.get("/audit").text
    assert "The audit log has no events yet." in page
    assert _run_ids(page) == []


def test_filtering_by_outcome_keeps_the_runs_with_such_a_call(
    client: TestClient, console_state: ConsoleState
) -> None:
    _two_runs(console_state)
    sign_in(client)
    assert _run_ids(client.get("/audit?outcome=block").text) == ["run-secret"]
    assert _run_ids(client.get("/audit?outcome=require_approval").text) == []


def test_filtering_by_tool_and_by_run_id(client: TestClient, console_state: ConsoleState) -> None:
    _two_runs(console_state)
    sign_in(client)
    assert _run_ids(client.get("/audit?tool=fs.search").text) == ["run-secret"]
    assert sorted(_run_ids(client.get("/audit?tool=fs.read").text)) == ["run-read", "run-secret"]
    assert _run_ids(client.get("/audit?run=read").text) == ["run-read"]
    assert _run_ids(client.get("/audit?tool=fs.delete").text) == []


def test_an_unknown_outcome_is_refused_naming_the_known_ones(client: TestClient) -> None:
    sign_in(client)
    response = client.get("/audit?outcome=allowed")
    assert response.status_code == 400
    assert "unknown outcome" in response.text and "require_approval" in response.text


def test_a_run_page_lists_its_events_in_seq_order_with_tool_and_call(
    client: TestClient, console_state: ConsoleState
) -> None:
    _two_runs(console_state)
    sign_in(client)
    page = client.get("/audit/run?id=run-secret").text
    events = console_state.gateway.audit.events("run-secret")
    seqs = [int(s) for s in re.findall(r'<tr data-seq="(\d+)"', page)]
    assert seqs == [e.seq for e in events] == sorted(seqs)
    assert "policy.decided" in page and "c-block" in page and "fs.search" in page
    choices = re.search(r'<datalist id="audit-tools">(.*?)</datalist>', page, re.S)
    assert choices is not None
    assert re.findall(r'<option value="([^"]*)">', choices.group(1)) == ["fs.read", "fs.search"]
    assert "chain verifies" in page


def test_a_run_page_filtered_by_outcome_shows_only_that_calls_events(
    client: TestClient, console_state: ConsoleState
) -> None:
    _two_runs(console_state)
    sign_in(client)
    page = client.get("/audit/run?id=run-secret&outcome=block").text
    assert "c-block" in page
    assert "c-search" not in page
    assert 'data-seq="' in page


def test_an_unknown_run_is_a_404_page(client: TestClient) -> None:
    sign_in(client)
    response = client.get("/audit/run?id=nope")
    assert response.status_code == 404
    assert "no run &#39;nope&#39; on the audit log" in response.text


def test_verify_all_passes_on_an_untouched_log(
    client: TestClient, console_state: ConsoleState
) -> None:
    _two_runs(console_state)
    sign_in(client)
    page = client.get("/audit/verify").text
    assert "OK: 2 chain(s) verify." in page
    assert "BROKEN" not in page


def test_verify_names_the_first_bad_seq_of_a_tampered_row(
    client: TestClient, console_state: ConsoleState
) -> None:
    _two_runs(console_state)
    events = console_state.gateway.audit.events("run-secret")
    target = next(e.seq for e in events if "secrets/key.txt" in str(e.data))
    _tamper(console_state, "run-secret", target)
    sign_in(client)
    for url in ("/audit/verify", "/audit/verify?run=run-secret"):
        page = client.get(url).text
        assert "BROKEN" in page
        summary = re.search(r'id="verify-summary">(.*?)</p>', page, re.S)
        assert summary is not None
        assert f"first bad seq {target} " in summary.group(1)
        assert "run-secret" in summary.group(1) and "run-read" not in summary.group(1)
    listing = client.get("/audit").text
    assert f"BROKEN at seq {target}" in listing
    run_page = client.get("/audit/run?id=run-secret").text
    assert f"chain BROKEN at seq {target}" in run_page
    assert f'<tr data-seq="{target}" class="bad-row">' in run_page


def test_a_row_whose_data_is_not_json_is_shown_as_broken_not_a_500(
    client: TestClient, console_state: ConsoleState
) -> None:
    _two_runs(console_state)
    with sqlite3.connect(console_state.config.state_dir / "audit.sqlite") as conn:
        conn.execute("UPDATE audit_events SET data = '[1' WHERE run_id = 'run-read' AND seq = 1")
    sign_in(client)
    listing = client.get("/audit")
    assert listing.status_code == 200
    assert "BROKEN at seq 1" in listing.text
    run_page = client.get("/audit/run?id=run-read")
    assert run_page.status_code == 200
    assert "cannot be read" in run_page.text


def test_verify_of_an_unknown_run_is_a_404(client: TestClient) -> None:
    sign_in(client)
    assert client.get("/audit/verify?run=ghost").status_code == 404


def test_markup_in_an_argument_renders_as_text(
    client: TestClient, console_state: ConsoleState
) -> None:
    for i, payload in enumerate((SCRIPT, ATTR)):
        _call(console_state, f"run-{payload}", f"c-{i}-{payload}", "fs.read", {"path": payload})
    sign_in(client)
    pages = [client.get("/audit").text, client.get("/audit/verify").text]
    for payload in (SCRIPT, ATTR):
        pages.append(client.get("/audit/run", params={"id": f"run-{payload}"}).text)
        pages.append(client.get("/audit", params={"tool": payload, "run": payload}).text)
    for page in pages:
        assert SCRIPT not in page
        assert "<img" not in page
        assert "onerror=alert(1)>" not in page
    joined = "".join(pages)
    assert html.escape(SCRIPT) in joined
    assert "&#34;&gt;&lt;img src=x onerror=alert(1)&gt;" in joined


def test_long_runs_are_paged_and_say_so(client: TestClient, console_state: ConsoleState) -> None:
    audit = console_state.gateway.audit
    total = view.EVENTS_PER_PAGE + 5
    audit.append_many("run-long", [("run.started", {"n": i}) for i in range(total)])
    sign_in(client)
    first = client.get("/audit/run?id=run-long").text
    assert len(re.findall(r'<tr data-seq="', first)) == view.EVENTS_PER_PAGE
    assert f"of {total}" in first and f"at most {view.EVENTS_PER_PAGE} a page" in first
    assert 'id="page-next"' in first and 'id="page-prev"' not in first
    second = client.get(f"/audit/run?id=run-long&offset={view.EVENTS_PER_PAGE}").text
    seqs = [int(s) for s in re.findall(r'<tr data-seq="(\d+)"', second)]
    assert seqs == [e.seq for e in audit.events("run-long")][view.EVENTS_PER_PAGE :]
    assert 'id="page-prev"' in second and 'id="page-next"' not in second
    assert client.get("/audit/run?id=run-long&offset=x").status_code == 400


def test_outcome_of_names_decisions_and_endings() -> None:
    from governance.stores import AuditEvent

    def event(kind: str, **data: object) -> AuditEvent:
        return AuditEvent("r", 1, kind, "t", dict(data), "sha256", "", "")

    assert view.outcome_of(event("policy.decided", effect="require_approval")) == (
        "require_approval"
    )
    assert view.outcome_of(event("policy.decided", effect="<b>")) is None
    assert view.outcome_of(event("execution.completed")) == "executed"
    assert view.outcome_of(event("approval.rejected")) == "reviewer_rejected"
    assert view.outcome_of(event("tool.requested")) is None


def test_the_pages_read_whatever_store_the_gateway_uses(tmp_path: Path) -> None:
    config = ConsoleConfig(state_dir=tmp_path / "state", token=TOKEN, store="memory:")
    with ConsoleState(config) as state:
        assert "Memory" in type(state.gateway.audit).__name__
        _two_runs(state)
        with TestClient(create_app(state), base_url=ORIGIN, follow_redirects=False) as client:
            sign_in(client)
            assert sorted(_run_ids(client.get("/audit").text)) == ["run-read", "run-secret"]
            assert "OK: 2 chain(s) verify." in client.get("/audit/verify").text
            assert "c-block" in client.get("/audit/run?id=run-secret").text
    assert not (tmp_path / "state" / "audit.sqlite").exists()
