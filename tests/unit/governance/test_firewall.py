"""The firewall: lifecycle, write-ahead audit, fail-closed paths, result caps."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from governance import (
    AuditWriteError,
    Principal,
    ToolCall,
    ToolDescriptor,
    ToolRegistry,
    ToolResult,
)
from governance._firewall import Firewall, LifecycleEvent, StaticPolicy
from governance.policy._load import PolicyFile, parse_policy
from governance.stores._audit import AuditLog

POLICY = """
version: 1
defaults: {unknown_tool: block, no_match: block}
rules:
  - id: allow-reads
    description: reads are fine
    effect: allow
    match: {action_type: [read]}
  - id: hold-writes
    description: writes need a human
    effect: require_approval
    match: {tool: demo.write}
  - id: no-delete
    description: never delete
    effect: block
    match: {tool: demo.delete}
"""

PRINCIPAL = Principal("ann", "bot", "ops")


class CountingSource:
    """A real source with an observable effect: every execution is appended to `executed`."""

    name = "demo"

    def __init__(self, output: str = "ok", raises: Exception | None = None) -> None:
        self.executed: list[str] = []
        self._output = output
        self._raises = raises

    def list_tools(self) -> list[ToolDescriptor]:
        def make(name: str, action_type: str, reversible: bool = True) -> ToolDescriptor:
            return ToolDescriptor(
                name=name,
                description=name,
                input_schema={
                    "type": "object",
                    "properties": {"path": {"type": "string"}},
                    "additionalProperties": False,
                },
                source="demo",
                action_type=action_type,  # type: ignore[arg-type]
                risk="low",
                reversible=reversible,
                external_side_effect=False,
                idempotent=True,
            )

        return [
            make("demo.read", "read"),
            make("demo.write", "write"),
            make("demo.delete", "destructive", reversible=False),
        ]

    def call(self, call: ToolCall) -> ToolResult:
        self.executed.append(call.tool)
        if self._raises is not None:
            raise self._raises
        return ToolResult(
            call_id=call.call_id, tool=call.tool, outcome="executed", output=self._output
        )


class FailingAudit:
    """Writes to a real log until the named kind, then fails like a full disk."""

    def __init__(self, inner: AuditLog, fail_on: str) -> None:
        self.inner = inner
        self.fail_on = fail_on

    def append(self, run_id: str, kind: str, data: Mapping[str, Any]) -> Any:
        if kind == self.fail_on:
            raise AuditWriteError("disk full")
        return self.inner.append(run_id, kind, data)

    def digest_arguments(self, arguments: Mapping[str, Any]) -> str:
        return self.inner.digest_arguments(arguments)


@pytest.fixture
def audit(tmp_path: Path):  # type: ignore[no-untyped-def]
    log = AuditLog(tmp_path / "audit.sqlite")
    yield log
    log.close()


def _firewall(source: CountingSource, audit: Any, **kwargs: Any) -> tuple[Firewall, list[str]]:
    seen: list[str] = []

    def observe(event: LifecycleEvent) -> None:
        seen.append(event.kind)

    fw = Firewall(
        ToolRegistry([source]),
        StaticPolicy(parse_policy(POLICY)),
        audit,
        observers=(observe,),
        **kwargs,
    )
    return fw, seen


def _call(tool: str, call_id: str = "c1", **arguments: Any) -> ToolCall:
    return ToolCall(call_id, tool, arguments, "run-1", PRINCIPAL)


def test_an_allowed_call_runs_the_whole_lifecycle_in_order(audit: AuditLog) -> None:
    source = CountingSource()
    fw, seen = _firewall(source, audit)
    result = fw.call(_call("demo.read", path="a"))
    assert result.outcome == "executed" and result.output == "ok"
    assert source.executed == ["demo.read"]
    expected = ["tool.requested", "policy.decided", "execution.started", "execution.completed"]
    assert seen == expected
    assert [e.kind for e in audit.events("run-1")] == expected
    assert audit.verify("run-1").ok


def test_a_blocked_call_is_a_result_with_the_reason_and_never_executes(audit: AuditLog) -> None:
    source = CountingSource()
    fw, seen = _firewall(source, audit)
    result = fw.call(_call("demo.delete", path="a"))
    assert result.outcome == "blocked" and not result.ok
    assert result.reason == "blocked_by_rule"
    assert result.decision is not None and result.decision.rule_ids == ("no-delete",)
    assert source.executed == []
    assert seen == ["tool.requested", "policy.decided"]


def test_a_held_call_records_approval_required_and_never_executes(audit: AuditLog) -> None:
    source = CountingSource()
    fw, seen = _firewall(source, audit)
    result = fw.call(_call("demo.write", path="a"))
    assert result.outcome == "held"
    assert source.executed == []
    assert seen == ["tool.requested", "policy.decided", "approval.required"]


def test_an_unknown_tool_never_reaches_a_source(audit: AuditLog) -> None:
    source = CountingSource()
    fw, _ = _firewall(source, audit)
    result = fw.call(_call("demo.ghost"))
    assert result.outcome == "blocked" and result.reason == "unknown_tool"
    assert source.executed == []


@pytest.mark.parametrize("failing_kind", ["tool.requested", "policy.decided", "execution.started"])
def test_when_the_write_ahead_record_fails_nothing_executes(
    audit: AuditLog, failing_kind: str
) -> None:
    source = CountingSource()
    fw, _ = _firewall(source, FailingAudit(audit, failing_kind))
    result = fw.call(_call("demo.read", path="a"))
    assert result.outcome == "failed" and result.reason == "audit_unavailable"
    assert source.executed == []


def test_arguments_that_fail_the_schema_are_refused_before_policy(audit: AuditLog) -> None:
    source = CountingSource()
    fw, seen = _firewall(source, audit)
    result = fw.call(_call("demo.read", path=3))
    assert result.outcome == "failed" and result.reason == "invalid_arguments"
    assert "path" in (result.error or "")
    assert seen == ["tool.requested", "call.rejected"]
    assert source.executed == []


def test_a_source_that_raises_becomes_a_failed_result(audit: AuditLog) -> None:
    fw, seen = _firewall(CountingSource(raises=RuntimeError("boom")), audit)
    result = fw.call(_call("demo.read", path="a"))
    assert result.outcome == "failed" and result.reason == "tool_error"
    assert "boom" in (result.error or "")
    assert seen[-1] == "execution.failed"


def test_oversized_results_are_cut_and_flagged(audit: AuditLog) -> None:
    fw, _ = _firewall(CountingSource(output="x" * 500), audit, max_result_chars=100)
    result = fw.call(_call("demo.read", path="a"))
    assert result.truncated and len(result.output) == 100
    completed = [e for e in audit.events("run-1") if e.kind == "execution.completed"]
    assert completed[0].data["truncated"] is True


def test_a_policy_file_broken_mid_run_blocks_everything(tmp_path: Path, audit: AuditLog) -> None:
    policy_path = tmp_path / "policy.yaml"
    policy_path.write_text(POLICY)
    source = CountingSource()
    fw = Firewall(ToolRegistry([source]), PolicyFile(policy_path), audit)
    assert fw.call(_call("demo.read", path="a")).outcome == "executed"
    policy_path.write_text("version: 1\nrules: [")
    result = fw.call(_call("demo.read", "c2", path="a"))
    assert result.outcome == "blocked" and result.reason == "policy_unavailable"
    assert source.executed == ["demo.read"]


def test_a_policy_edit_applies_on_the_next_call(tmp_path: Path, audit: AuditLog) -> None:
    policy_path = tmp_path / "policy.yaml"
    policy_path.write_text(POLICY)
    fw = Firewall(ToolRegistry([CountingSource()]), PolicyFile(policy_path), audit)
    assert fw.call(_call("demo.read", path="a")).outcome == "executed"
    policy_path.write_text(POLICY.replace("effect: allow", "effect: block"))
    assert fw.call(_call("demo.read", "c2", path="a")).outcome == "blocked"


def test_audited_arguments_are_redacted_but_provable(audit: AuditLog) -> None:
    fw, _ = _firewall(CountingSource(), audit)
    call = _call("demo.read", path="sk-proj-abcdefghijklmnopqrstuvwxyz0123456789")
    fw.call(call)
    requested = audit.events("run-1")[0]
    assert "abcdefghijklmnopqrstuvwxyz0123456789" not in str(requested.data)
    assert requested.data["arguments_digest"] == audit.digest_arguments(call.arguments)


def test_a_quarantined_tool_is_blocked_whatever_the_policy_says(audit: AuditLog) -> None:
    import dataclasses

    class Quarantined(CountingSource):
        def list_tools(self) -> list[ToolDescriptor]:
            return [
                dataclasses.replace(d, quarantine="tool_definition_changed")
                if d.name == "demo.read"
                else d
                for d in super().list_tools()
            ]

    source = Quarantined()
    fw, _ = _firewall(source, audit)
    result = fw.call(_call("demo.read", path="a"))
    assert (result.outcome, result.reason) == ("blocked", "tool_definition_changed")
    assert source.executed == []


def test_a_call_that_ran_is_never_reported_as_not_executed(audit: AuditLog) -> None:
    source = CountingSource()
    fw, _ = _firewall(source, FailingAudit(audit, "execution.completed"))
    result = fw.call(_call("demo.read", path="a"))
    assert source.executed == ["demo.read"]
    assert (result.outcome, result.reason) == ("executed", "audit_incomplete")
    assert "executed, but the audit log could not record" in (result.error or "")


def test_arguments_that_cannot_be_digested_are_refused_not_raised(audit: AuditLog) -> None:
    source = CountingSource()
    fw, _ = _firewall(source, audit)
    result = fw.call(_call("demo.read", path=float("nan")))
    assert (result.outcome, result.reason) == ("failed", "invalid_arguments")
    assert source.executed == []


def test_a_firewall_nobody_observes_builds_no_lifecycle_event_but_writes_every_record(
    audit: AuditLog, monkeypatch: pytest.MonkeyPatch
) -> None:
    import governance._firewall as firewall_module

    built: list[str] = []
    real = firewall_module.LifecycleEvent

    def counted(*values: Any, **fields: Any) -> LifecycleEvent:
        built.append(values[0] if values else fields["kind"])
        return real(*values, **fields)

    monkeypatch.setattr(firewall_module, "LifecycleEvent", counted)
    fw = Firewall(ToolRegistry([CountingSource()]), StaticPolicy(parse_policy(POLICY)), audit)
    assert fw.call(_call("demo.read", path="a")).outcome == "executed"
    assert built == []
    kinds = [event.kind for event in audit.events("run-1")]
    assert kinds == ["tool.requested", "policy.decided", "execution.started", "execution.completed"]
    # ...and an observer still sees each event once it is written, in order.
    seen: list[str] = []
    fw.add_observer(lambda event: seen.append(event.kind))
    fw.call(_call("demo.read", "c2", path="b"))
    assert seen == built == kinds
