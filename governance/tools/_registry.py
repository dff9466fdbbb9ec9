"""The registered tool surface: one name, one tool, one source; a digest of all of it."""

from __future__ import annotations

import re
from collections.abc import Iterable

from governance.core._canonical import canonical_json, sha256_hex
from governance.core._contracts import ToolDescriptor, ToolSource
from governance.core._errors import RegistryError

_NAME = re.compile(r"^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)+$")

# The canonical JSON of each descriptor's surface, per descriptor object. A suite builds one
# registry per scenario from the same built-in descriptors, and encoding their schemas was most
# of a registry's digest. A descriptor is frozen and its schema is never edited in place (an
# MCP listing builds new descriptors), so its surface is encoded once. The entry keeps the
# descriptor alive, so its id cannot be reused while remembered; a full memo starts over.
_SURFACES: dict[int, tuple[ToolDescriptor, bytes]] = {}
_SURFACES_MAX = 1024


def _surface_json(descriptor: ToolDescriptor) -> bytes:
    entry = _SURFACES.get(id(descriptor))
    if entry is not None and entry[0] is descriptor:
        return entry[1]
    encoded = canonical_json(descriptor.surface())
    if len(_SURFACES) >= _SURFACES_MAX:
        _SURFACES.clear()
    _SURFACES[id(descriptor)] = (descriptor, encoded)
    return encoded


class ToolRegistry:
    """Maps namespaced tool names to their descriptor and source. Duplicates are refused."""

    def __init__(self, sources: Iterable[ToolSource] = ()) -> None:
        self._tools: dict[str, tuple[ToolDescriptor, ToolSource]] = {}
        self._digest: str | None = None
        for source in sources:
            self.add_source(source)

    def add_source(self, source: ToolSource) -> None:
        for descriptor in source.list_tools():
            self.add(descriptor, source)

    def add(self, descriptor: ToolDescriptor, source: ToolSource) -> None:
        if not _NAME.match(descriptor.name):
            raise RegistryError(
                f"tool name {descriptor.name!r} is not namespaced: use '<namespace>.<tool>' "
                "with letters, digits, '_' or '-'"
            )
        existing = self._tools.get(descriptor.name)
        if existing is not None:
            raise RegistryError(
                f"tool {descriptor.name!r} is offered by both {existing[1].name!r} and "
                f"{source.name!r}; rename one - Proctor never picks a silent winner"
            )
        self._tools[descriptor.name] = (descriptor, source)
        self._digest = None

    def get(self, name: str) -> ToolDescriptor | None:
        entry = self._tools.get(name)
        return entry[0] if entry else None

    def _source_for(self, name: str) -> ToolSource | None:
        """Only the firewall may hold a source: nothing public hands out an executable tool."""
        entry = self._tools.get(name)
        return entry[1] if entry else None

    def names(self) -> list[str]:
        return sorted(self._tools)

    def descriptors(self) -> list[ToolDescriptor]:
        return [self._tools[name][0] for name in self.names()]

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __len__(self) -> int:
        return len(self._tools)

    @property
    def digest(self) -> str:
        """Changes whenever any tool's name, description, schema or governance facts change."""
        if self._digest is None:
            # digest([d.surface() ...]): a JSON array is its items' canonical JSON, comma-joined.
            encoded = b"[" + b",".join(_surface_json(d) for d in self.descriptors()) + b"]"
            self._digest = "sha256:" + sha256_hex(encoded)
        return self._digest
