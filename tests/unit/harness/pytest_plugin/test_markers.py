"""Scenario tags as marker names: usable in `-m`, never one of pytest's behaviour markers."""

from __future__ import annotations

import pytest
from _pytest.mark.expression import Expression

from harness.pytest_plugin._markers import marker_name


@pytest.mark.parametrize(
    ("tag", "marker"),
    [
        ("smoke", "smoke"),
        ("default-policy", "default_policy"),
        ("model.errors/v2", "model_errors_v2"),
        ("3d", "_3d"),
        ("", "_"),
        ("é", "_"),
        ("skip", "tag_skip"),
        ("xfail", "tag_xfail"),
        ("parametrize", "tag_parametrize"),
        ("not", "tag_not"),
        ("True", "tag_True"),
    ],
)
def test_a_tag_maps_to_a_marker_name_deterministically(tag: str, marker: str) -> None:
    assert marker_name(tag) == marker


@pytest.mark.parametrize("tag", ["smoke", "default-policy", "a b", "or", "None", "7", "x:y"])
def test_every_marker_name_is_one_identifier_of_a_dash_m_expression(tag: str) -> None:
    name = marker_name(tag)
    assert name.isidentifier()
    matched = Expression.compile(name).evaluate(lambda word, **_: word == name)
    assert matched
