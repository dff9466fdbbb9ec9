"""A governed session exported over OTLP/HTTP to a real receiver process: what the backend gets
is the span tree, the governance attributes and metrics, and none of the secrets."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

import pytest

from governance.telemetry import Telemetry, telemetry_config
from governance.telemetry._ids import run_span_id, run_trace_id
from tests.integration.telemetry.governed_session import (
    RUN_ID,
    SECRETS,
    chain,
    drive,
    gateway,
)
from tests.otel_receiver import OtlpReceiver

pytestmark = pytest.mark.slow


@dataclasses.dataclass
class Exported:
    receiver: OtlpReceiver
    results: dict[str, Any]
    requested: dict[str, str]  # call id -> the audit chain's arguments digest

    def spans(self) -> list[dict[str, Any]]:
        return self.receiver.spans()

    def tool_span(self, call_id: str) -> dict[str, Any]:
        [span] = [
            s for s in self.spans() if s["attributes"].get("gen_ai.tool.call.id") == call_id
        ]
        return span

    def last_points(self, name: str) -> dict[tuple[tuple[str, Any], ...], dict[str, Any]]:
        """The latest point of metric `name` per attribute set (exports are cumulative)."""
        points: dict[tuple[tuple[str, Any], ...], dict[str, Any]] = {}
        for point in self.receiver.metrics():
            if point["name"] == name:
                points[tuple(sorted(point["attributes"].items()))] = point
        return points


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Exported]:
    where = tmp_path_factory.mktemp("otel")
    with OtlpReceiver(where) as receiver:
        environ = {
            "PROCTOR_OTEL_ENDPOINT": receiver.endpoint,
            "OTEL_EXPORTER_OTLP_COMPRESSION": "gzip",  # the receiver decodes what the SDK sends
        }
        config = telemetry_config(flag=False, environ=environ)
        assert config is not None
        telemetry = Telemetry.start(config, service_role="ask")
        with gateway(where / "session", telemetry) as opened:
            results = drive(opened)
            requested = {
                data["call_id"]: data["arguments_digest"]
                for kind, data in chain(opened)
                if kind == "tool.requested"
            }
            telemetry.shutdown(timeout_seconds=20)  # while the stores are open: final metrics
        yield Exported(receiver, results, requested)


def test_the_session_behaves_as_the_scenario_says(exported: Exported) -> None:
    outcomes = {call_id: result.outcome for call_id, result in exported.results.items()}
    assert outcomes == {"c1": "executed", "c2": "blocked", "c3": "held", "c4": "executed",
                        "c5": "blocked", "c6": "failed", "c7": "failed"}  # fmt: skip


def test_every_span_of_the_run_shares_the_trace_derived_from_the_run_id(
    exported: Exported,
) -> None:
    spans = exported.spans()
    assert len(spans) == 1 + 7
    assert {s["trace_id"] for s in spans} == {f"{run_trace_id(RUN_ID):032x}"}


def test_the_run_span_is_the_root_and_every_call_is_its_child(exported: Exported) -> None:
    spans = exported.spans()
    [run] = [s for s in spans if s["name"] == "invoke_agent proctor"]
    assert run["parent_span_id"] == ""
    assert run["span_id"] == f"{run_span_id(RUN_ID, 'start'):016x}"
    assert run["kind"] == "INTERNAL"
    assert run["attributes"] == {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": "support-agent",
        "gen_ai.conversation.id": RUN_ID,
        "gen_ai.provider.name": "replay",
        "gen_ai.request.model": "scripted",
        "proctor.provider.live": False,
        "proctor.role": "ask",
        "proctor.run.id": RUN_ID,
        "proctor.run.status": "waiting_approval",
        "proctor.run.termination": "held",
    }
    calls = [s for s in spans if s is not run]
    assert sorted(s["name"] for s in calls) == sorted(
        f"execute_tool {result.tool}" for result in exported.results.values()
    )
    assert {s["parent_span_id"] for s in calls} == {run["span_id"]}
    assert all(run["start_ns"] <= s["start_ns"] <= s["end_ns"] <= run["end_ns"] for s in calls)
    assert run["resource"]["service.name"] == "proctor"
    assert run["resource"]["proctor.role"] == "ask"


def _governance(span: dict[str, Any]) -> dict[str, Any]:
    shown = dict(span["attributes"])
    for digest in ("proctor.policy.digest", "proctor.registry.digest", "proctor.output.digest"):
        assert str(shown.pop(digest, "sha256:")).startswith("sha256:")
    return shown


def test_an_allowed_call_says_its_decision_rule_and_the_audit_chains_arguments_digest(
    exported: Exported,
) -> None:
    span = exported.tool_span("c1")
    assert _governance(span) == {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "kb.lookup",
        "gen_ai.tool.call.id": "c1",
        "proctor.decision.effect": "allow",
        "proctor.decision.reason": "allowed",
        "proctor.decision.rule_ids": ["read-kb"],
        "proctor.arguments.digest": exported.requested["c1"],
        "proctor.outcome": "executed",
    }
    assert span["status"] == "UNSET"


def test_a_blocked_call_is_a_decision_not_an_error(exported: Exported) -> None:
    span = exported.tool_span("c2")
    attributes = span["attributes"]
    assert (attributes["proctor.decision.effect"], attributes["proctor.outcome"]) == (
        "block",
        "blocked",
    )
    assert attributes["proctor.decision.rule_ids"] == ["no-prod-purge"]
    assert attributes["proctor.decision.reason"] == "blocked_by_rule"
    assert span["status"] == "UNSET" and "error.type" not in attributes


def test_a_held_call_names_its_approval_request_as_pending(exported: Exported) -> None:
    attributes = exported.tool_span("c3")["attributes"]
    assert attributes["proctor.decision.effect"] == "require_approval"
    assert attributes["proctor.approval.id"] == exported.results["c3"].approval_id == "apr-1"
    assert attributes["proctor.approval.status"] == "pending"
    assert attributes["proctor.outcome"] == "held"


def test_a_budget_denial_names_the_budget_its_scope_and_its_count(exported: Exported) -> None:
    allowed = exported.tool_span("c4")["attributes"]
    assert allowed["proctor.outcome"] == "executed" and "proctor.budget.outcome" not in allowed
    attributes = exported.tool_span("c5")["attributes"]
    assert {k: v for k, v in attributes.items() if k.startswith("proctor.budget.")} == {
        "proctor.budget.outcome": "denied",
        "proctor.budget.id": "one-delete-per-run",
        "proctor.budget.scope": "agent_run",
        "proctor.budget.limit": 1,
        "proctor.budget.used": 1,
    }
    assert attributes["proctor.decision.effect"] == "block"
    assert attributes["proctor.decision.reason"] == "budget_exhausted:agent_run"
    assert attributes["proctor.outcome"] == "blocked"


def test_a_failed_execution_is_an_error_span_with_its_reason(exported: Exported) -> None:
    span = exported.tool_span("c6")
    assert span["status"] == "ERROR"
    assert span["attributes"]["error.type"] == "tool_error"
    assert span["attributes"]["proctor.outcome"] == "failed"
    assert "backend refused" in span["status_message"]


def test_arguments_that_fail_their_schema_are_a_rejected_call(exported: Exported) -> None:
    attributes = exported.tool_span("c7")["attributes"]
    assert attributes["proctor.outcome"] == "rejected"
    assert attributes["proctor.decision.reason"] == "invalid_arguments"
    assert "proctor.decision.effect" not in attributes
    # The refusal's text quoted the value (a secret): it goes out redacted, as audited.
    assert attributes["proctor.decision.message"] == (
        "limit: '[REDACTED:aws_access_key_id]' is not of type 'integer'"
    )


def test_decisions_are_counted_by_effect_and_reason(exported: Exported) -> None:
    counted = {
        dict(key)["proctor.decision.effect"] + " " + dict(key)["proctor.decision.reason"]: p
        for key, p in exported.last_points("proctor.decisions").items()
    }
    assert {name: point["value"] for name, point in counted.items()} == {
        "allow allowed": 3,  # c1, c4, c6
        "block blocked_by_rule": 1,
        "require_approval approval_required": 1,
        "block budget_exhausted:agent_run": 1,
    }
    assert all(p["kind"] == "sum" and p["monotonic"] for p in counted.values())


def test_the_pending_gauge_counts_the_held_request_in_the_store(exported: Exported) -> None:
    [point] = exported.last_points("proctor.approvals.pending").values()
    assert (point["kind"], point["value"]) == ("gauge", 1)


def test_budget_usage_is_reported_per_budget_and_scope(exported: Exported) -> None:
    points = exported.last_points("proctor.budget.usage")
    assert {key: p["value"] for key, p in points.items()} == {
        (("proctor.budget.id", "one-delete-per-run"), ("proctor.budget.scope", "agent_run")): 1
    }


def test_decision_latency_is_a_histogram_of_every_decided_call(exported: Exported) -> None:
    points = exported.last_points("proctor.decision.duration")
    assert sum(p["count"] for p in points.values()) == 6  # every call but the rejected c7
    assert all(p["kind"] == "histogram" and p["sum"] >= 0 for p in points.values())


def test_no_secret_from_arguments_outputs_or_errors_reaches_the_backend(
    exported: Exported,
) -> None:
    received = exported.receiver.raw_text()
    assert "execute_tool ops.flaky" in received  # the calls carrying them did arrive
    assert [secret for secret in SECRETS if secret in received] == []
