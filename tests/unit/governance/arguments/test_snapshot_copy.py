"""The tool's copy of a judged snapshot shares nothing with it."""

from __future__ import annotations

from typing import Any

from governance import Principal, ToolCall
from governance.arguments._snapshot import copy_snapshot, snapshot_arguments


def _containers(value: Any) -> list[int]:
    if isinstance(value, dict):
        return [id(value), *(i for item in value.values() for i in _containers(item))]
    if isinstance(value, list):
        return [id(value), *(i for item in value for i in _containers(item))]
    return []


def test_a_copied_snapshot_is_equal_and_shares_no_container() -> None:
    snapshot = snapshot_arguments({"a": [1, {"b": [2.5, None, True]}], "c": {"d": "e"}})
    copied = copy_snapshot(snapshot)
    assert copied == snapshot
    assert not set(_containers(copied)) & set(_containers(snapshot))
    copied["a"][1]["b"].append("x")
    assert snapshot["a"][1]["b"] == [2.5, None, True]


def test_a_value_that_is_not_a_snapshot_still_gets_a_deep_copy() -> None:
    inner = {"x": [1]}
    value = {"t": (inner,)}
    copied = copy_snapshot(value)
    assert copied == value and copied["t"][0] is not inner


def test_a_call_with_other_arguments_keeps_everything_else() -> None:
    call = ToolCall("c1", "fs.read", {"path": "a"}, "run", Principal("a", "b", "c"))
    other = call.with_arguments({"path": "b"})
    assert other == ToolCall("c1", "fs.read", {"path": "b"}, "run", Principal("a", "b", "c"))
    assert call.arguments == {"path": "a"}
