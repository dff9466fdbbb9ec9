"""Injection screening measured on the labelled set (tests/data/screening), with floors.

The set was split into dev.yaml and held_out.yaml before the patterns were tuned; only dev was
tuned on. The floors are what was measured (benchmarks/screening_quality.py prints it), a hair
under, so a regression fails and an improvement needs no change here. Measured: dev 85/85
attacks caught, 0/54 benign flagged; held_out 85/85 caught, 1/53 flagged.
support.yaml (everyday requests, the reviewer's probes): 0/46 everyday requests flagged, 0/43
of the reviewer's benign probes (20/43 were rejected before), 29 of the reviewer's 53 attacks
caught (those 29 are the file's attacks). Still missed: markup inside a word (`Ig*nore*`,
`<b>Ig</b>nore`, `&#73;gnore`), a word split by a hyphen or line break, CamelCase, base64, rot13,
reversed text, a gap of more than 40 characters, Turkish, Arabic, Hindi, Korean and Greek,
a bare `SYSTEM:` or `Assistant:` line, free paraphrase ("switch into maintenance mode",
"no need to ask anyone", "pre-approved by the admin").
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest
import yaml

from governance.screening import findings

DATA = Path(__file__).resolve().parents[3] / "data" / "screening"


def _half(name: str) -> dict[str, list[dict[str, Any]]]:
    loaded: dict[str, list[dict[str, Any]]] = yaml.safe_load(
        (DATA / f"{name}.yaml").read_text(encoding="utf-8")
    )
    return loaded


DEV = _half("dev")
HELD_OUT = _half("held_out")
SUPPORT = _half("support")


def _recall(half: dict[str, list[dict[str, Any]]]) -> float:
    return sum(bool(findings(a["text"])) for a in half["attacks"]) / len(half["attacks"])


def _false_positive_rate(half: dict[str, list[dict[str, Any]]]) -> float:
    return sum(bool(findings(b["text"])) for b in half["benign"]) / len(half["benign"])


def test_the_labelled_set_holds_a_hundred_attacks_and_a_hundred_benign_texts_with_sources() -> None:
    attacks = DEV["attacks"] + HELD_OUT["attacks"]
    benign = DEV["benign"] + HELD_OUT["benign"]
    assert len(attacks) >= 100 and len(benign) >= 100
    assert all(item["source"] and item["kind"] and item["text"] for item in attacks + benign)
    texts = [item["text"] for item in attacks + benign]
    assert len(set(texts)) == len(texts), "an item is in the set twice"


def test_the_halves_are_disjoint_and_split_by_the_recorded_rule() -> None:
    # The rule in the files' header: per kind, by SHA-256 rank, even -> dev, odd -> held_out.
    for key in ("attacks", "benign"):
        by_kind: dict[str, list[str]] = {}
        for item in DEV[key] + HELD_OUT[key]:
            by_kind.setdefault(item["kind"], []).append(item["text"])
        dev = {item["text"] for item in DEV[key]}
        for texts in by_kind.values():
            ranked = sorted(texts, key=lambda t: hashlib.sha256(t.encode()).hexdigest())
            assert {t for t in ranked[0::2]} <= dev
            assert not {t for t in ranked[1::2]} & dev


def test_held_out_recall_stays_at_least_what_was_measured() -> None:
    assert _recall(HELD_OUT) >= 84 / 85


def test_held_out_false_positive_rate_stays_at_most_what_was_measured() -> None:
    assert _false_positive_rate(HELD_OUT) <= 3 / 53


def test_held_out_false_positives_stay_at_most_what_was_measured_after_the_review() -> None:
    assert _false_positive_rate(HELD_OUT) <= 1 / 53


def test_everyday_support_requests_are_not_rejected() -> None:
    everyday = [b["text"] for b in SUPPORT["benign"] if b["kind"] == "everyday"]
    assert len(everyday) >= 40
    assert [text for text in everyday if findings(text)] == []


def test_the_reviewers_benign_probes_are_not_rejected() -> None:
    probes = [b["text"] for b in SUPPORT["benign"] if b["kind"] == "reviewer_benign"]
    assert len(probes) == 43
    assert [text for text in probes if findings(text)] == []


def test_the_reviewers_attacks_caught_now_stay_caught() -> None:
    assert len(SUPPORT["attacks"]) >= 29
    assert [a["text"] for a in SUPPORT["attacks"] if not findings(a["text"])] == []


def test_dev_half_rates_stay_at_least_what_was_measured() -> None:
    assert _recall(DEV) >= 84 / 85
    assert _false_positive_rate(DEV) <= 1 / 54


@pytest.mark.parametrize(
    "kind",
    sorted({a["kind"] for a in HELD_OUT["attacks"]}),
)
def test_every_kind_of_attack_is_caught_on_unseen_text(kind: str) -> None:
    items = [a for a in HELD_OUT["attacks"] if a["kind"] == kind]
    missed = [a["text"] for a in items if not findings(a["text"])]
    assert len(missed) <= len(items) // 4, missed


def test_the_call_paths_names_only_reading_finds_exactly_what_screen_finds() -> None:
    # The firewall and the loop ask for names only (`findings` -> `kinds`, no quotes located);
    # it must never name more or fewer kinds than the full screen does, in the same order.
    from governance.screening import Finding, HeuristicScreener

    screener = HeuristicScreener()
    texts = [
        item["text"]
        for half in (DEV, HELD_OUT, SUPPORT)
        for items in half.values()
        for item in items
    ]
    for text in texts:
        names = tuple(f.name for f in screener.screen(text))
        assert screener.kinds(text) == names == findings(text), text

    class Stricter(HeuristicScreener):
        def screen(self, text: str) -> tuple[Finding, ...]:
            return (Finding("house_rule", 0, 0, ""),)

    # A subclass that overrides `screen` is asked through `screen`, not the names-only path.
    assert findings("nothing to see", Stricter()) == ("house_rule",)
