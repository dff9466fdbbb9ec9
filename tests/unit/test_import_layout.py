"""The source tree's layers (test_import_cycles.py holds it to no cycle; this, to no upward
import), over the same ast-read graph, lazy and `TYPE_CHECKING` imports included:

- governance never imports harness or stubs; stubs never import harness (the CLI may start a
  bundled stub, a stub never drives the CLI);
- each governance folder imports only the folders below it (`LAYERS`) and never the hub
  (`governance/_firewall.py`, `_gateway.py`, ...), which may import any folder;
- code outside governance uses its public API: `governance` or `governance.<folder>`, never a
  private `governance._x` or `governance.<folder>._x` module (tests may reach inside).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.import_graph import import_graph

ROOT = Path(__file__).resolve().parents[2]
GRAPH = import_graph(ROOT, ("governance", "harness", "stubs"))

# Each governance folder with the folders it may import.
LAYERS: dict[str, set[str]] = {
    "core": set(),
    "config": {"core"},
    "arguments": {"core"},
    "screening": {"core"},
    "policy": {"core", "config", "arguments", "screening"},
    "stores": {"core", "config", "screening", "policy"},
    "tools": {"core", "arguments"},
    "mcp": {"core", "config", "arguments"},
    "agentdojo": {"core", "config", "arguments", "tools"},
    "telemetry": {"core", "screening"},
}
# Folders built on the hub, embedding the firewall in another program's process (the LiteLLM
# proxy): they may import the hub and any folder, and nothing else in governance imports them.
ON_TOP: set[str] = {"litellm"}


def _folder(module: str) -> str | None:
    """The governance folder of a module; None for the hub (governance/_x.py, the package)."""
    parts = module.split(".")
    if parts[0] != "governance" or len(parts) < 2 or parts[1].startswith("_"):
        return None
    return parts[1]


def _wrong_arrows(graph: dict[str, set[str]]) -> list[str]:
    wrong = []
    for module, targets in sorted(graph.items()):
        folder = _folder(module)
        for target in sorted(targets):
            if not target.startswith("governance"):
                continue
            other = _folder(target)
            if other in ON_TOP and other != folder:
                wrong.append(f"{module} -> {target}: nothing in governance imports {other}")
                continue
            if folder is None or folder in ON_TOP:
                continue
            if other is None:
                wrong.append(f"{module} -> {target}: a folder never imports the hub")
            elif other != folder and other not in LAYERS.get(folder, set()):
                allowed = sorted(LAYERS.get(folder, set()))
                wrong.append(f"{module} -> {target}: {folder} may import only {allowed}")
    return wrong


def test_governance_imports_neither_harness_nor_stubs_and_stubs_never_import_harness() -> None:
    upward = [
        f"{module} -> {target}"
        for module, targets in GRAPH.items()
        for target in targets
        if (module.startswith("governance") and target.split(".")[0] in ("harness", "stubs"))
        or (module.startswith("stubs") and target.startswith("harness"))
    ]
    assert upward == []


def test_every_governance_folder_has_a_layer() -> None:
    folders = {p.name for p in (ROOT / "governance").iterdir() if (p / "__init__.py").exists()}
    assert folders == set(LAYERS) | ON_TOP


def test_governance_folders_import_only_the_layers_below_them() -> None:
    assert _wrong_arrows(GRAPH) == []


def test_the_layer_check_sees_an_upward_import_and_one_into_the_hub() -> None:
    planted = {
        "governance.core._contracts": {"governance.policy._eval"},
        "governance.policy._eval": {"governance._firewall", "governance.core._contracts"},
        "governance._gateway": {"governance.litellm._governor"},
        "governance.litellm._governor": {"governance._gateway", "governance.stores._audit"},
    }
    assert _wrong_arrows(planted) == [
        "governance._gateway -> governance.litellm._governor: nothing in governance imports "
        "litellm",
        "governance.core._contracts -> governance.policy._eval: core may import only []",
        "governance.policy._eval -> governance._firewall: a folder never imports the hub",
    ]


@pytest.mark.parametrize("package", ["harness", "stubs", "benchmarks"])
def test_code_outside_governance_imports_only_its_public_api(package: str) -> None:
    private = []
    for path in sorted((ROOT / package).rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                names = [node.module]
            for name in names:
                parts = name.split(".")
                if parts[0] == "governance" and any(p.startswith("_") for p in parts[1:]):
                    private.append(f"{path.relative_to(ROOT)}:{node.lineno}: {name}")
    assert private == []
