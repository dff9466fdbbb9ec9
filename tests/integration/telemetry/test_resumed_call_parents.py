"""A held call resumed outside an agent loop's drive (`proctor serve`, the LiteLLM
guardrail, a scenario's setup: no run.resumed follows) is not exported with a parent span that
never exists."""

from __future__ import annotations

from pathlib import Path

import pytest

from governance.telemetry import Telemetry, telemetry_config
from tests.integration.telemetry.governed_session import CALLS, gateway
from tests.otel_receiver import OtlpReceiver

pytestmark = pytest.mark.slow


def test_a_call_resumed_with_no_drive_of_its_run_has_no_dangling_parent(tmp_path: Path) -> None:
    (tmp_path / "otel").mkdir()
    [mail] = [call for call in CALLS if call.tool == "mail.send"]
    with OtlpReceiver(tmp_path / "otel") as receiver:
        config = telemetry_config(flag=False, environ={"PROCTOR_OTEL_ENDPOINT": receiver.endpoint})
        assert config is not None
        telemetry = Telemetry.start(config, service_role="serve")
        with gateway(tmp_path / "session", telemetry) as opened:
            held = opened.firewall.call(mail)  # as an MCP client's call: no run events
            assert held.outcome == "held" and held.approval_id is not None
            opened.firewall.approve(held.approval_id, "rita", comment="ok")
            resumed = opened.firewall.resume_held(held.approval_id, mail)
            assert resumed.outcome == "executed"
            telemetry.shutdown(timeout_seconds=20)
        assert receiver.wait_for(lambda r: len(r.spans()) >= 2)
        spans = receiver.spans()
    exported = {(s["trace_id"], s["span_id"]) for s in spans}
    dangling = [
        s["name"]
        for s in spans
        if s.get("parent_span_id") and (s["trace_id"], s["parent_span_id"]) not in exported
    ]
    assert dangling == []
