"""Two-person budget resets compare operators by skeleton: one person in disguise is not two."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from governance.core._contracts import Principal
from governance.stores._budgets import BudgetResetRefused, BudgetStore
from tests.store_backends import Backend


@pytest.fixture
def store(backend: Backend) -> Iterator[BudgetStore]:
    """A contract test: every backend compares people the same way."""
    with backend.open(BudgetStore, "budgets.db") as opened:
        yield opened


@pytest.mark.parametrize(
    ("approved_by", "code"),
    [
        ("carol\u200b", "invalid_operator"),
        ("\uff43arol", "same_person"),  # full-width c
        ("\u0441arol", "same_person"),  # Cyrillic es
        ("CAROL", "same_person"),
    ],
)
def test_one_operator_in_disguise_cannot_be_the_second_person(
    store: BudgetStore, approved_by: str, code: str
) -> None:
    with pytest.raises(BudgetResetRefused) as refused:
        store.reset(budget_id="b", key="run-1", by="carol", approved_by=approved_by, reason="r")
    assert refused.value.code == code
    assert store.resets() == []


def test_the_agent_in_disguise_cannot_release_its_own_budget(store: BudgetStore) -> None:
    agent = Principal("ann", "bot", "ops")
    with pytest.raises(BudgetResetRefused) as refused:
        store.reset(
            budget_id="b", key="run-1", by="\u0430nn", approved_by="dave", reason="r",
            agent_principal=agent,
        )  # fmt: skip
    assert refused.value.code == "self_release"
    assert store.resets() == []


def test_an_operator_name_mimicking_a_known_operator_is_refused(store: BudgetStore) -> None:
    store.reset(budget_id="b", key="run-1", by="carol", approved_by="dave", reason="r")
    with pytest.raises(BudgetResetRefused) as refused:
        store.reset(budget_id="b", key="run-2", by="erin", approved_by="d\u0430ve", reason="r")
    assert refused.value.code == "look_alike"
    assert "'dave'" in str(refused.value)
    assert len(store.resets()) == 1
