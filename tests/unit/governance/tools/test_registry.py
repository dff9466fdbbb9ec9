import pytest

from governance import RegistryError, ToolCall, ToolDescriptor, ToolRegistry, ToolResult


class _Source:
    def __init__(self, name: str, *tools: str, description: str = "d") -> None:
        self.name = name
        self._descriptors = [
            ToolDescriptor(
                name=tool,
                description=description,
                input_schema={"type": "object"},
                source=name,
                action_type="read",
                risk="low",
                reversible=True,
                external_side_effect=False,
                idempotent=True,
            )
            for tool in tools
        ]

    def list_tools(self) -> list[ToolDescriptor]:
        return list(self._descriptors)

    def call(self, call: ToolCall) -> ToolResult:
        raise AssertionError("the registry must never call a tool")


def test_a_duplicate_name_is_refused_naming_both_sources() -> None:
    with pytest.raises(RegistryError) as err:
        ToolRegistry([_Source("local", "fs.read"), _Source("mcp", "fs.read")])
    assert "'local'" in str(err.value) and "'mcp'" in str(err.value)


def test_a_name_without_namespace_is_refused() -> None:
    with pytest.raises(RegistryError, match="namespaced"):
        ToolRegistry([_Source("local", "read")])


def test_lookup_returns_descriptor_and_source() -> None:
    source = _Source("local", "fs.read", "fs.list")
    registry = ToolRegistry([source])
    assert registry.names() == ["fs.list", "fs.read"]
    descriptor = registry.get("fs.read")
    assert descriptor is not None and descriptor.source == "local"
    assert registry._source_for("fs.read") is source
    assert registry.get("fs.nope") is None and "fs.nope" not in registry


def test_digest_is_order_independent_and_changes_with_any_descriptor_fact() -> None:
    a = ToolRegistry([_Source("local", "fs.read", "fs.list")])
    b = ToolRegistry([_Source("local", "fs.list", "fs.read")])
    assert a.digest == b.digest
    changed = ToolRegistry([_Source("local", "fs.read", "fs.list", description="other")])
    assert changed.digest != a.digest


def test_digest_is_recomputed_after_a_tool_is_added() -> None:
    registry = ToolRegistry([_Source("local", "fs.read")])
    before = registry.digest
    registry.add_source(_Source("other", "orders.lookup"))
    assert registry.digest != before


def test_the_digest_is_the_canonical_digest_of_every_surface_in_name_order() -> None:
    from governance import digest

    registry = ToolRegistry([_Source("a", "z.one", "a.two"), _Source("b", "m.three")])
    expected = digest([d.surface() for d in sorted(registry.descriptors(), key=lambda d: d.name)])
    assert registry.digest == expected
    assert ToolRegistry([_Source("a", "z.one")]).digest != expected


def test_a_registry_rebuilt_from_the_same_descriptors_encodes_no_surface_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import governance.tools._registry as module

    source = _Source("a", "x.one", "x.two")
    first = ToolRegistry([source]).digest
    encoded: list[object] = []
    real = module.canonical_json

    def counted(value: object) -> bytes:
        encoded.append(value)
        return real(value)

    monkeypatch.setattr(module, "canonical_json", counted)
    assert ToolRegistry([source]).digest == first
    assert encoded == []
    # A new descriptor (an MCP listing builds new ones) is encoded, and changes the digest.
    changed = ToolRegistry([_Source("a", "x.one", "x.two", description="other")]).digest
    assert changed != first and len(encoded) == 2
