"""Names a package exports but imports only on first use (PEP 562): `import governance` or
`from governance.mcp import McpConfig` must not pay for an SDK or the stores it never touches.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, MutableMapping
from typing import Any


def lazy_attributes(
    namespace: MutableMapping[str, Any], table: Mapping[str, str]
) -> Callable[[str], Any]:
    """A module's `__getattr__`: each name in `table` is imported from its module when first
    asked for and kept in `namespace` (the module's globals), so later look-ups skip the hook."""
    package = namespace["__name__"]

    def __getattr__(name: str) -> Any:
        module = table.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value
        return value

    return __getattr__
