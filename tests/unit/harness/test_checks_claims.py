"""The `claims` expectation kind: judged from the trace's claims span, gated as `claims`."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from pydantic import ValidationError

from harness._checks import METRIC_OF, expand_checks
from harness._gate import gate
from harness._metrics import METRICS
from harness._results import MetricResult
from harness._scenario import Scenario
from harness._spans import ClaimFindingRecord, ClaimsSpan, Span
from tests.trace_factory import make_trace
from tests.unit.harness.test_gate_regressions import D1, baseline


def scenario(claims: list[dict[str, Any]]) -> Scenario:
    return Scenario.model_validate(
        {
            "id": "s1",
            "description": "d",
            "request": "r",
            "script": [{"answer": "done"}],
            "expect": {"claims": claims},
        }
    )


def span(*findings: tuple[str, str]) -> ClaimsSpan:
    return ClaimsSpan(
        id="s1",
        step=1,
        verdict="flagged" if findings else "pass",
        mode="replace",
        identifiers=1,
        actions=1,
        findings=[ClaimFindingRecord(kind=k, claim=c, detail="x") for k, c in findings],  # type: ignore[arg-type]
    )


def results(claims: list[dict[str, Any]], spans: list[Span]) -> dict[str, tuple[bool, str]]:
    checks = expand_checks(scenario(claims), make_trace(spans, sid="s1"))
    return {c.id: (c.passed, c.why) for c in checks if c.kind == "claims"}


FLAGGED_SEND = [span(("unsupported_action", "sent"))]


def test_a_flagged_expectation_passes_on_a_matching_finding_and_names_it() -> None:
    wanted = [{"verdict": "flagged", "kind": "unsupported_action", "claim": "SENT"}]
    found = results(wanted, FLAGGED_SEND)
    assert found == {
        "claims:flagged=unsupported_action(SENT)": (
            True,
            "the claims check flagged unsupported_action 'sent'",
        )
    }


def test_a_flagged_expectation_fails_on_another_kind_another_claim_or_a_pass() -> None:
    wanted = [
        {"verdict": "flagged", "kind": "unsupported_identifier"},
        {"verdict": "flagged", "claim": "deleted"},
    ]
    assert [ok for ok, _ in results(wanted, FLAGGED_SEND).values()] == [False, False]
    [(ok, why)] = results([{"verdict": "flagged"}], [span()]).values()
    assert not ok and "it passed (1 identifiers, 1 actions)" in why


def test_a_pass_expectation_fails_on_a_flag_and_when_nothing_was_checked() -> None:
    [(ok, why)] = results([{"verdict": "pass"}], FLAGGED_SEND).values()
    assert not ok and "it flagged unsupported_action 'sent'" in why
    [(ok, why)] = results([{"verdict": "pass"}], []).values()
    assert not ok and "the answer was not checked" in why
    [(ok, _)] = results([{"verdict": "pass"}], [span()]).values()
    assert ok


def test_finding_details_are_refused_with_a_pass_verdict() -> None:
    with pytest.raises(ValidationError, match="give them with verdict: flagged"):
        scenario([{"verdict": "pass", "kind": "unsupported_action"}])


def test_claims_checks_count_towards_their_own_gated_metric() -> None:
    assert METRIC_OF["claims"] == "claims" and "claims" in METRICS


def test_a_drop_in_the_claims_rate_fails_the_gate() -> None:
    inventory = {"claims-false-send": ["claims:flagged", "contract"]}
    base = baseline({"claims": (4, 4), "contract": (1, 1)}, inventory)
    current = [
        MetricResult(n, *{"claims": (3, 4), "contract": (1, 1)}.get(n, (0, 0))) for n in METRICS
    ]
    result = gate(current, inventory, dict.fromkeys(inventory, D1), base)
    assert result.regressed
    assert [(r.kind, r.metric) for r in result.regressions] == [("rate_drop", "claims")]


def test_a_bare_yaml_off_is_the_mode_off_not_a_boolean() -> None:
    data = yaml.safe_load("claims_mode: off\n")
    assert data == {"claims_mode": False}  # YAML 1.1, as PyYAML reads it
    loaded = Scenario.model_validate(
        {**data, "id": "s1", "description": "d", "request": "r", "script": [{"answer": "x"}],
         "expect": {}}
    )  # fmt: skip
    assert loaded.claims_mode == "off"
    with pytest.raises(ValidationError):
        Scenario.model_validate({**loaded.model_dump(), "claims_mode": True})
