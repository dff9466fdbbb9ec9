"""A gateway can be handed its whole tool surface as a registry built once (a suite's scenarios
share one); it then takes no other source, so the registry is exactly what the firewall runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from governance import Principal, ToolCall, ToolRegistry
from governance._gateway import Gateway
from governance.tools import builtin_tools

POLICY = """
version: 1
defaults: {unknown_tool: block, no_match: block}
rules:
  - {id: read, effect: allow, match: {tool: fs.read}}
"""


def _policy(tmp_path: Path) -> Path:
    path = tmp_path / "policy.yaml"
    path.write_text(POLICY, encoding="utf-8")
    return path


def test_a_given_registry_is_the_gateway_s_tool_surface(tmp_path: Path) -> None:
    registry = ToolRegistry([builtin_tools(tmp_path / "ws")])
    for n in (1, 2):
        with Gateway(
            state_dir=tmp_path / f"s{n}",
            policy_path=_policy(tmp_path),
            builtin=False,
            store="memory:",
            registry=registry,
        ) as gateway:
            assert gateway.registry is registry
            call = ToolCall(
                "c1", "fs.read", {"path": "notes/todo.txt"}, "r", Principal("a", "b", "c")
            )
            assert gateway.firewall.call(call).outcome == "executed"


@pytest.mark.parametrize("other", ["builtin", "sources"])
def test_a_gateway_given_a_registry_refuses_another_tool_source(tmp_path: Path, other: str) -> None:
    registry = ToolRegistry([builtin_tools(tmp_path / "ws")])
    extra = (
        {"builtin": True}
        if other == "builtin"
        else {"builtin": False, "sources": [builtin_tools(tmp_path / "other")]}
    )
    with pytest.raises(ValueError, match="takes no other tool source"):
        Gateway(
            state_dir=tmp_path / "s",
            policy_path=_policy(tmp_path),
            store="memory:",
            registry=registry,
            **extra,  # type: ignore[arg-type]
        )
    assert not (tmp_path / "s").exists()  # refused before anything was created
