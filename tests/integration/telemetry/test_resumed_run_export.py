"""A held call resumed later by another process joins the run's trace: the resumed call's span
names the drive its approval opens as parent before that drive's span exists, and the drive's
span gets exactly that id."""

from __future__ import annotations

from pathlib import Path

import pytest

from governance.telemetry import Telemetry, telemetry_config
from governance.telemetry._ids import run_span_id, run_trace_id
from tests.integration.telemetry.governed_session import CALLS, RUN_ID, drive, gateway
from tests.otel_receiver import OtlpReceiver

pytestmark = pytest.mark.slow


def _telemetry(endpoint: str, role: str) -> Telemetry:
    config = telemetry_config(flag=False, environ={"PROCTOR_OTEL_ENDPOINT": endpoint})
    assert config is not None
    return Telemetry.start(config, service_role=role)


def test_a_resumed_call_and_its_drive_join_the_trace_of_the_run_that_held_it(
    tmp_path: Path,
) -> None:
    held = next(call for call in CALLS if call.tool == "mail.send")
    with OtlpReceiver(tmp_path) as receiver:
        first = _telemetry(receiver.endpoint, "ask")
        with gateway(tmp_path / "s", first) as opened:
            assert drive(opened)[held.call_id].approval_id == "apr-1"
            first.shutdown(timeout_seconds=10)
        with gateway(tmp_path / "s") as reviewer:
            reviewer.firewall.approve("apr-1", "bob")
        later = _telemetry(receiver.endpoint, "console")  # another process's exporter
        with gateway(tmp_path / "s", later) as opened:
            # The agent loop's order: the call is resumed, then the drive is recorded.
            assert opened.firewall.resume_held("apr-1", held).outcome == "executed"
            opened.firewall.record_run_event(RUN_ID, "run.resumed", {"approval_id": "apr-1"})
            opened.firewall.record_run_event(RUN_ID, "run.finished", {"status": "completed"})
            later.shutdown(timeout_seconds=10)
        spans = receiver.spans()
        pending = [p for p in receiver.metrics() if p["name"] == "proctor.approvals.pending"]
    assert {s["trace_id"] for s in spans} == {f"{run_trace_id(RUN_ID):032x}"}
    drives = {s["span_id"]: s for s in spans if s["name"] == "invoke_agent proctor"}
    resumed_drive = f"{run_span_id(RUN_ID, 'apr-1'):016x}"
    assert sorted(drives) == sorted([f"{run_span_id(RUN_ID, 'start'):016x}", resumed_drive])
    resumed = drives[resumed_drive]
    assert resumed["attributes"]["proctor.run.resumed_approval_id"] == "apr-1"
    assert resumed["resource"]["proctor.role"] == "console"
    [call] = [
        s for s in spans
        if s["attributes"].get("proctor.call.resumed") and s["name"] == "execute_tool mail.send"
    ]  # fmt: skip
    assert call["parent_span_id"] == resumed_drive
    assert call["attributes"]["proctor.approval.id"] == "apr-1"
    assert call["attributes"]["proctor.approval.status"] == "approved"
    assert call["attributes"]["proctor.outcome"] == "executed"
    # Held while the first process exported; approved and consumed by the time of the second.
    assert [(p["resource"]["proctor.role"], p["value"]) for p in pending] == [
        ("ask", 1), ("console", 0),
    ]  # fmt: skip
