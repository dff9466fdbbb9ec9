"""The claims check reads the run's tool results (their text, their JSON values, their id
fields) only when the answer names an identifier to look up: most answers name none."""

from __future__ import annotations

import json

import pytest

import governance.screening._claims as claims
from governance.screening import CallEvidence, check_claims
from governance.tools import builtin_registry

DESCRIPTORS = builtin_registry().descriptors()
LOOKUP = CallEvidence(
    "c1", "orders.lookup", "executed", json.dumps({"order_id": "ORD-0001", "status": "shipped"})
)


def _unread(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object) -> list[object]:
        raise AssertionError("the tool results were read")

    monkeypatch.setattr(claims, "_evidence_texts", refuse)
    monkeypatch.setattr(claims, "_id_fields", refuse)


def test_an_answer_naming_no_identifier_reads_no_tool_result(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _unread(monkeypatch)
    report = check_claims("Your order has shipped and is on its way.", "", [LOOKUP], DESCRIPTORS)
    assert report.identifiers == ()
    assert not report.flagged


def test_an_answer_naming_an_identifier_is_still_checked_against_the_results() -> None:
    backed = check_claims("Order ORD-0001 has shipped.", "", [LOOKUP], DESCRIPTORS)
    invented = check_claims("Order ORD-0002 has shipped.", "", [LOOKUP], DESCRIPTORS)
    assert not backed.flagged
    assert [(f.kind, f.claim) for f in invented.findings] == [
        ("unsupported_identifier", "ORD-0002")
    ]


def test_an_answer_naming_an_identifier_reads_the_results(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _unread(monkeypatch)
    with pytest.raises(AssertionError, match="were read"):
        check_claims("Order ORD-0001 has shipped.", "", [LOOKUP], DESCRIPTORS)
