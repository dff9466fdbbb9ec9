"""Console shutdown and restart: a waiting turn's request is withdrawn and audited, never
left runnable, and a restarted console still shows every turn."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from governance import ManualClock
from governance.tools import outbox_rows
from harness._errors import HarnessError
from harness._loop import AgentLoop
from harness._run_store import RunStore
from harness.console._providers import ScriptProviders
from tests.unit.harness.console.conftest import EMAIL_SCRIPT, Console, wait_for


def _turn_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("console-turn-")]


def test_close_while_waiting_withdraws_the_request_and_nothing_executes(
    console: Console,
) -> None:
    sessions = console.open(EMAIL_SCRIPT)
    run_id = sessions.start("mail the CFO", "alice")
    approval_id = wait_for(console, run_id, {"waiting_approval"})["held"]["approval_id"]

    sessions.close()

    assert not _turn_threads()
    request = console.gateway.approvals.get(approval_id)
    assert (request.status, request.decided_by) == ("cancelled", "console")
    cancelled = [e for e in console.gateway.audit.events(run_id) if e.kind == "approval.cancelled"]
    assert len(cancelled) == 1 and cancelled[0].data["approval_id"] == approval_id
    assert outbox_rows(console.gateway.workspace) == []
    view = sessions.view(run_id)
    assert view["status"] == "cancelled" and view["held"] is None
    assert "withdrawn" in view["final_answer"]
    assert console.gateway.audit.verify(run_id).ok


def test_a_withdrawn_turn_is_stored_so_that_nothing_can_resume_it(console: Console) -> None:
    sessions = console.open(EMAIL_SCRIPT)
    run_id = sessions.start("mail the CFO", "alice")
    approval_id = wait_for(console, run_id, {"waiting_approval"})["held"]["approval_id"]
    sessions.close()
    stored = RunStore(console.state_dir).load(run_id)
    assert stored.state.held is None and stored.state.status == "failed"
    loop = AgentLoop(ScriptProviders(EMAIL_SCRIPT)().provider, console.gateway.firewall)
    try:
        loop.resume(stored.state)
    except HarnessError as exc:
        assert "not waiting for approval" in str(exc)
    else:
        raise AssertionError("a withdrawn turn was resumed")
    # and its request cannot be approved into running any more
    assert console.gateway.approvals.get(approval_id).status == "cancelled"
    assert outbox_rows(console.gateway.workspace) == []


def test_close_with_several_turns_waiting_withdraws_each_one(console: Console) -> None:
    sessions = console.open(EMAIL_SCRIPT)
    runs = [sessions.start("mail the CFO", name) for name in ("alice", "carol", "erin")]
    held = [wait_for(console, r, {"waiting_approval"})["held"]["approval_id"] for r in runs]
    sessions.close()
    assert [console.gateway.approvals.get(a).status for a in held] == ["cancelled"] * 3
    assert [sessions.view(r)["status"] for r in runs] == ["cancelled"] * 3
    assert not _turn_threads()


def test_close_twice_is_harmless(console: Console) -> None:
    sessions = console.open(EMAIL_SCRIPT)
    run_id = sessions.start("mail the CFO", "alice")
    wait_for(console, run_id, {"waiting_approval"})
    sessions.close()
    sessions.close()
    assert sessions.view(run_id)["status"] == "cancelled"


def test_a_restarted_console_lists_and_shows_earlier_turns_with_their_events(
    make_console: Callable[..., Console], clock: ManualClock
) -> None:
    first = make_console(clock)
    sessions = first.open(EMAIL_SCRIPT, prefix="early")
    done = sessions.start("mail the CFO", "alice")
    approval_id = wait_for(first, done, {"waiting_approval"})["held"]["approval_id"]
    first.gateway.firewall.approve(approval_id, "bob")
    wait_for(first, done, {"completed"})
    waiting = sessions.start("mail the CFO again", "carol")
    wait_for(first, waiting, {"waiting_approval"})
    before = [e["name"] for e in sessions.view(done)["events"] if e["kind"] == "call"]
    first.close()

    second = make_console(clock, first.state_dir)
    later = second.open(EMAIL_SCRIPT, prefix="late")
    listed = {r["run_id"]: r["status"] for r in later.runs()}
    assert listed == {done: "completed", waiting: "cancelled"}
    view = later.view(done)
    assert view["status"] == "completed" and view["live"] is False
    assert view["final_answer"] == "Sent as message 1."
    shown = [e["name"] for e in view["events"] if e["kind"] == "call"]
    assert shown == before  # the audit chain holds every call event, in the same order
    assert all(e["hub_id"] is None for e in view["events"])
    assert view["hub_id"] == second.hub.last_id


def test_a_turn_whose_console_died_reads_back_as_interrupted(
    make_console: Callable[..., Console], clock: ManualClock
) -> None:
    from harness.console._journal import SessionJournal, SessionRecord

    first = make_console(clock)
    SessionJournal(first.state_dir).save(
        SessionRecord(
            run_id="gone-1",
            operator="alice",
            request="mail",
            started_at=clock.now(),
            status="waiting_approval",
        )
    )
    sessions = first.open(EMAIL_SCRIPT)
    assert [(r["run_id"], r["status"]) for r in sessions.runs()] == [("gone-1", "interrupted")]
    view: dict[str, Any] = sessions.view("gone-1")
    assert view["status"] == "interrupted" and view["held"] is None and view["messages"] == []


def _closed_within_bound(sessions: Any) -> bool:
    """close() in a thread, joined with a bound far below the request's 300 s expiry."""
    closer = threading.Thread(target=sessions.close)
    closer.start()
    closer.join(60)
    return not closer.is_alive()


def test_close_does_not_wait_for_the_request_to_expire(console: Console) -> None:
    sessions = console.open(EMAIL_SCRIPT)
    run_id = sessions.start("mail the CFO", "alice")
    wait_for(console, run_id, {"waiting_approval"})
    assert _closed_within_bound(sessions)
    assert sessions.view(run_id)["status"] == "cancelled"


class _Gated:
    """A model that blocks in its first call until released, proposing a write; a second call
    must never happen once the console is closing."""

    def __init__(self) -> None:
        from harness.providers import ProviderIdentity

        self.identity = ProviderIdentity(name="gated", model="g", live=False)
        self.entered = threading.Event()
        self.release = threading.Event()
        self.calls = 0

    def complete(self, messages: Any, tools: Any) -> Any:
        from harness.providers import ModelTurn, ProposedCall

        self.calls += 1
        if self.calls > 1:
            return ModelTurn(text="done", tool_calls=())
        self.entered.set()
        self.release.wait(60)
        args = '{"path": "reports/g.md", "content": "x"}'
        return ModelTurn(text=None, tool_calls=(ProposedCall("p1", "fs.write", args),))


def test_a_turn_running_at_close_ends_at_its_next_model_call(console: Console) -> None:
    from harness._run_store import ProviderSpec
    from harness.console._providers import TurnProvider

    gated = _Gated()
    spec = ProviderSpec(kind="replay", script=[])
    sessions = console.open(lambda: TurnProvider(gated, spec))
    run_id = sessions.start("write", "alice")
    assert gated.entered.wait(60)
    sessions.stop()
    gated.release.set()
    assert _closed_within_bound(sessions)
    view = sessions.view(run_id)
    assert view["status"] == "provider_error" and gated.calls == 1
    assert "shutting down" in view["final_answer"]
    assert not _turn_threads()


def test_an_unknown_run_is_a_clear_error(console: Console) -> None:
    import pytest

    from harness.console._sessions import SessionError

    sessions = console.open(EMAIL_SCRIPT)
    with pytest.raises(SessionError, match="no console run"):
        sessions.view("nope")
    with pytest.raises(SessionError):
        sessions.view("../etc/passwd")
