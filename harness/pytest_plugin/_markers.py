"""Scenario tags as pytest marker names (the mapping is described in the package docstring)."""

from __future__ import annotations

import re

# Markers that change how a test runs, and the words `-m` reads as operators or constants:
# a tag with one of these names must never act as it.
_RESERVED = frozenset(
    {
        "skip",
        "skipif",
        "xfail",
        "parametrize",
        "usefixtures",
        "filterwarnings",
        "tryfirst",
        "trylast",
        "and",
        "or",
        "not",
        "True",
        "False",
        "None",
    }
)
_OUTSIDE = re.compile(r"[^A-Za-z0-9_]")


def marker_name(tag: str) -> str:
    """The marker a scenario tag becomes: `default-policy` -> `default_policy`."""
    name = _OUTSIDE.sub("_", tag)
    if not name or name[0].isdigit():
        name = f"_{name}"
    return f"tag_{name}" if name in _RESERVED else name
