"""canonical_json calls the C encoder directly: the bytes are exactly what the stdlib encoder
with the same options writes, and its refusals (NaN, circular values) are kept."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from governance.core._canonical import canonical_json

REFERENCE = json.JSONEncoder(
    sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
)


def _value(rng: random.Random, depth: int) -> Any:
    pick = rng.randrange(9 if depth < 4 else 6)
    if pick == 0:
        return None
    if pick == 1:
        return rng.choice([True, False])
    if pick == 2:
        return rng.randint(-(2**70), 2**70)
    if pick == 3:
        return rng.choice([0.0, -0.0, 1e-300, 1.5, 1e300, rng.random()])
    if pick in (4, 5):
        return "".join(
            rng.choice('ab"\\\n\x00\u2028é☃\U0001f600 ') for _ in range(rng.randrange(8))
        )
    if pick == 6:
        return [_value(rng, depth + 1) for _ in range(rng.randrange(4))]
    if pick == 7:
        return tuple(_value(rng, depth + 1) for _ in range(rng.randrange(3)))
    # Keys of one type per object (sorting mixed types fails alike in both encoders).
    keys: list[Any] = rng.choice([["k", "a", "é", "Z", ""], [1, -2, 30], [2.5, 0.1], [True, False]])
    return {rng.choice(keys): _value(rng, depth + 1) for _ in range(rng.randrange(4))}


@pytest.mark.parametrize("seed", range(5))
def test_canonical_json_writes_the_bytes_the_stdlib_encoder_writes(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(400):
        value = _value(rng, 0)
        assert canonical_json(value) == REFERENCE.encode(value).encode("utf-8")


def test_a_value_that_holds_itself_is_refused() -> None:
    looped: list[Any] = []
    looped.append(looped)
    with pytest.raises(ValueError, match="Circular reference"):
        canonical_json({"a": looped})


def test_a_refused_value_leaves_nothing_behind_for_the_next_encoding_of_it() -> None:
    # The encoder notes each container it is inside; a refusal midway must not leave `record`
    # noted, or encoding it again once fixed would be refused as circular.
    shared = ["x"]
    record: dict[str, Any] = {"a": shared, "b": shared, "z": [float("nan")]}
    with pytest.raises(ValueError, match="canonical JSON cannot encode"):
        canonical_json(record)
    record["z"] = [1]
    assert canonical_json(record) == b'{"a":["x"],"b":["x"],"z":[1]}'


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), {"x": [float("-inf")]}])
def test_canonical_json_refuses_what_json_has_no_number_for(bad: Any) -> None:
    with pytest.raises(ValueError, match="canonical JSON cannot encode"):
        canonical_json(bad)


def test_canonical_json_refuses_values_json_has_no_form_for() -> None:
    with pytest.raises(TypeError):
        canonical_json({"x": object()})
    with pytest.raises(TypeError):
        canonical_json({(1, 2): "tuple key"})
