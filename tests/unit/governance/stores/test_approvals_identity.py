"""Reviewers are compared by skeleton: a disguised proposer is the proposer."""

from __future__ import annotations

import string
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from governance.core._contracts import Principal
from governance.stores._approvals import ApprovalStore, IdentityRefused, SelfApprovalError

DISGUISED_ALICE = ["alice\u200b", "\uff41lice", "al\u0456ce", "ALICE", "\u0430lice", "al\u200dice"]


def _hold(store: ApprovalStore, actor: str = "alice", call_id: str = "c1") -> str:
    fields: dict[str, Any] = {
        "run_id": "run-1",
        "call_id": call_id,
        "tool": "fs.delete",
        "arguments": {"path": "notes/a.txt"},
        "arguments_digest": "sha256:" + "a" * 64,
        "principal": Principal(actor, "ops-agent", "platform"),
        "policy_digest": "sha256:" + "p" * 64,
        "rule_ids": ("approve-deletes",),
        "reason": "rule:approve-deletes",
        "risk": "high",
    }
    return store.create(**fields).id


@pytest.fixture
def store(tmp_path: Path) -> Iterator[ApprovalStore]:
    with ApprovalStore(tmp_path / "approvals.db") as opened:
        yield opened


@pytest.mark.parametrize("reviewer", DISGUISED_ALICE)
def test_the_proposer_in_disguise_cannot_approve_and_nothing_changes(
    store: ApprovalStore, reviewer: str
) -> None:
    rid = _hold(store)
    with pytest.raises((SelfApprovalError, IdentityRefused)):
        store.approve(rid, reviewer)
    assert store.get(rid).status == "pending"
    assert store.get(rid).decided_by is None


def test_a_look_alike_proposer_is_refused_with_a_message_naming_the_proposer(
    store: ApprovalStore,
) -> None:
    rid = _hold(store)
    with pytest.raises(SelfApprovalError, match=r"proposed by 'alice' \('al\\u0456ce' looks"):
        store.approve(rid, "al\u0456ce")


def test_a_reviewer_name_that_mimics_another_known_reviewer_is_refused(
    store: ApprovalStore,
) -> None:
    store.approve(_hold(store, call_id="c1"), "bob")
    rid = _hold(store, call_id="c2")
    with pytest.raises(IdentityRefused, match="looks like the existing name 'bob'"):
        store.approve(rid, "b\u043eb")  # Cyrillic o
    with pytest.raises(IdentityRefused, match="looks like the existing name 'bob'"):
        store.reject(rid, "b\u043eb", comment="no")
    assert store.get(rid).status == "pending"
    assert store.approve(rid, "Bob").status == "approved", "case alone is the same spelling"


def test_a_reviewer_name_with_invisible_characters_is_refused(store: ApprovalStore) -> None:
    rid = _hold(store)
    with pytest.raises(IdentityRefused, match="U\\+200B"):
        store.reject(rid, "carol\u200b", comment="no")
    assert store.get(rid).status == "pending"


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    name=st.text(alphabet=string.ascii_lowercase, min_size=2, max_size=10),
    data=st.data(),
)
def test_no_disguise_of_the_proposer_ever_approves(
    tmp_path: Path, name: str, data: st.DataObject
) -> None:
    wide = "".join(chr(ord(c) + 0xFEE0) for c in name)
    at = data.draw(st.integers(0, len(name)))
    zero_width = name[:at] + data.draw(st.sampled_from(["\u200b", "\u2060", "\ufeff"])) + name[at:]
    disguise = data.draw(st.sampled_from([wide, zero_width, name.upper(), f" {name} "]))
    db = tmp_path / f"{name}-{at}.db"
    with ApprovalStore(db) as fresh:
        rid = _hold(fresh, actor=name)
        with pytest.raises((SelfApprovalError, IdentityRefused)):
            fresh.approve(rid, disguise)
        assert fresh.get(rid).status == "pending"
    db.unlink()
