"""Audit checkpoints in the shipped suite: expectation `audit_checkpoint`, its trace record and
its check; traces of scenarios that do not ask for it keep their bytes."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path

from governance import Principal, ToolCall
from governance._gateway import Gateway
from governance.core._clock import ManualClock
from harness._checks import expand_checks
from harness._scenario_checkpoint import checkpoint_summary, scenario_schedule
from harness._scenario_load import load_scenarios
from harness._scenario_runner import ProviderChoice, run_scenario
from harness._trace import AuditSummary, CheckpointSummary
from tests.trace_factory import ZERO_DIGEST, make_trace

REPO = Path(__file__).resolve().parents[3]
SHIPPED = REPO / "scenarios" / "checkpoints.yaml"
POLICY = """
version: 1
defaults: {unknown_tool: block, no_match: block}
rules:
  - {id: read, effect: allow, match: {tool: fs.read}}
"""


def test_every_shipped_checkpoint_scenario_records_a_verified_checkpoint_and_passes() -> None:
    loaded = load_scenarios([SHIPPED])
    assert len(loaded) >= 3
    for item in loaded:
        trace = run_scenario(item, run_id="t", provider=ProviderChoice())
        found = trace.audit.checkpoint
        assert found is not None and found.status == "verified", item.scenario.id
        assert found.checkpoints >= 1 and 0 < found.checkpointed_events <= found.events
        assert found.events == trace.audit.events
        checks = {c.id: c for c in expand_checks(item.scenario, trace)}
        assert checks["audit_checkpoint:verified"].passed
        assert checks["audit_checkpoint:verified"].kind == "audit_checkpoint"


def test_a_run_that_appends_after_its_last_checkpoint_still_verifies() -> None:
    loaded = {s.scenario.id: s for s in load_scenarios([SHIPPED])}
    trace = run_scenario(
        loaded["checkpoint-two-calls-anchored"], run_id="t", provider=ProviderChoice()
    )
    found = trace.audit.checkpoint
    assert found is not None and found.checkpointed_events < found.events
    assert found.status == "verified"


def test_a_trace_without_a_checkpoint_has_no_checkpoint_key_at_all() -> None:
    audit = AuditSummary(events=1, head=ZERO_DIGEST, valid=True)
    assert "checkpoint" not in audit.model_dump(mode="json")
    assert b"checkpoint" not in make_trace(audit=audit).canonical()


def test_the_check_fails_when_the_checkpoint_is_missing_or_does_not_verify() -> None:
    from tests.unit.harness.test_checks_expand import scenario

    expect = {"audit_checkpoint": "verified"}
    for recorded, why in [
        (None, "records no audit checkpoint"),
        (CheckpointSummary(status="missing", checkpoints=0, checkpointed_events=0, events=4,
                           detail="none was written"), "missing: none was written"),
        (CheckpointSummary(status="not_verified", checkpoints=1, checkpointed_events=4, events=2,
                           detail="s1: truncated"), "not_verified: s1: truncated"),
    ]:  # fmt: skip
        audit = AuditSummary(events=4, head=ZERO_DIGEST, valid=True, checkpoint=recorded)
        checks = {c.id: c for c in expand_checks(scenario(expect), make_trace(audit=audit))}
        assert not checks["audit_checkpoint:verified"].passed
        assert why in checks["audit_checkpoint:verified"].why


def test_the_summary_says_not_verified_when_the_log_was_truncated_after_a_checkpoint(
    tmp_path: Path,
) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text(POLICY, encoding="utf-8")
    state = tmp_path / "state"
    state.mkdir()
    with Gateway(
        state_dir=state, policy_path=policy, clock=ManualClock(), audit_key_from_env=False,
        checkpoint=scenario_schedule(state),
    ) as gateway:  # fmt: skip
        principal = Principal("a", "b", "c")
        for n in (1, 2):
            call = ToolCall(f"c{n}", "fs.read", {"path": "notes/todo.txt"}, "r", principal)
            gateway.firewall.call(call)
        assert checkpoint_summary(gateway).status == "verified"
        with closing(sqlite3.connect(state / "audit.sqlite")) as conn, conn:
            conn.execute("DELETE FROM audit_events WHERE seq > 2")
        found = checkpoint_summary(gateway)
    assert found.status == "not_verified"
    assert found.detail is not None and "truncated" in found.detail


def test_without_a_checkpoint_written_the_summary_says_missing(tmp_path: Path) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text(POLICY, encoding="utf-8")
    with Gateway(
        state_dir=tmp_path / "s", policy_path=policy, clock=ManualClock(), store="memory:",
        checkpoint=scenario_schedule(tmp_path),
    ) as gateway:  # fmt: skip
        found = checkpoint_summary(gateway)  # no event yet, so no checkpoint
    assert (found.status, found.checkpoints) == ("missing", 0)


def test_a_stored_trace_whose_checkpoint_record_cannot_be_true_is_refused() -> None:
    from harness._trace_verify import audit_summary

    for recorded in (
        CheckpointSummary(status="verified", checkpoints=1, checkpointed_events=9, events=4),
        CheckpointSummary(status="verified", checkpoints=0, checkpointed_events=0, events=4),
    ):
        audit = AuditSummary(events=4, head=ZERO_DIGEST, valid=True, checkpoint=recorded)
        assert [p.rule for p in audit_summary(make_trace(audit=audit))] == ["audit_summary"]
    fine = CheckpointSummary(status="verified", checkpoints=1, checkpointed_events=3, events=4)
    audit = AuditSummary(events=4, head=ZERO_DIGEST, valid=True, checkpoint=fine)
    assert list(audit_summary(make_trace(audit=audit))) == []
