"""Argument normalisation shared by the firewall and `policy explain`.

The policy must judge the arguments the tool will actually run with, so omitted arguments
that have a schema default are filled in before the decision (`fs.list {}` means `path: "."`).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any


def with_schema_defaults(
    schema: Mapping[str, Any], arguments: Mapping[str, Any]
) -> tuple[dict[str, Any], tuple[str, ...]]:
    """`arguments` with top-level schema defaults filled in, and the names that were filled."""
    filled = dict(arguments)
    applied: list[str] = []
    properties = schema.get("properties")
    if isinstance(properties, Mapping):
        for name in sorted(properties):
            spec = properties[name]
            if name not in filled and isinstance(spec, Mapping) and "default" in spec:
                filled[name] = copy.deepcopy(spec["default"])
                applied.append(name)
    return filled, tuple(applied)
