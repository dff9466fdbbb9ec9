"""Names a package exports but imports only on first use (PEP 562): `import governance` or
`from governance.mcp import McpConfig` must not pay for an SDK or the stores it never touches.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, MutableMapping
from typing import Any


def lazy_attributes(
    namespace: MutableMapping[str, Any], table: Mapping[str, str | tuple[str, str]]
) -> Callable[[str], Any]:
    """A module's `__getattr__`: each name in `table` is imported from its module when first
    asked for and kept in `namespace` (the module's globals), so later look-ups skip the hook.
    A name maps to its module, or to (module, the name it has there) when exported renamed."""
    package = namespace["__name__"]

    def __getattr__(name: str) -> Any:
        where = table.get(name)
        if where is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module, attribute = (where, name) if isinstance(where, str) else where
        value = getattr(importlib.import_module(module), attribute)
        namespace[name] = value
        return value

    return __getattr__
