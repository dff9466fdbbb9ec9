"""Gateway(telemetry=...): its firewall's events go to the telemetry, and its stores feed the
pending-approvals and budget gauges until it closes."""

from __future__ import annotations

from pathlib import Path

from governance import Gateway, ManualClock, Principal, ToolCall
from governance.telemetry import Telemetry, telemetry_config

POLICY = """
version: 1
defaults: {unknown_tool: block, no_match: block}
rules:
  - {id: hold-mail, effect: require_approval, match: {tool: email.send}}
"""


def _telemetry() -> Telemetry:
    config = telemetry_config(flag=True, environ={"PROCTOR_OTEL_ENDPOINT": "http://127.0.0.1:9"})
    assert config is not None
    return Telemetry.start(config, service_role="serve")


def test_a_gateway_lends_its_stores_to_the_gauges_until_it_closes(tmp_path: Path) -> None:
    (tmp_path / "policy.yaml").write_text(POLICY)
    telemetry = _telemetry()
    with Gateway(
        state_dir=tmp_path / "state",
        policy_path=tmp_path / "policy.yaml",
        clock=ManualClock(),
        telemetry=telemetry,
    ) as gateway:
        assert telemetry.observe in gateway.firewall._observers
        call = ToolCall("c1", "email.send", {"to": "a@b.co", "subject": "s", "body": "b"}, "r1",
                        Principal("ann", "mailer", "ops"))  # fmt: skip
        assert gateway.firewall.call(call).outcome == "held"
        [pending] = telemetry.pending_readers()
        [budgets] = telemetry.budget_readers()
        assert pending() == 1 and list(budgets()) == []
    assert telemetry.pending_readers() == [] and telemetry.budget_readers() == []
    telemetry.shutdown(timeout_seconds=0.5)
