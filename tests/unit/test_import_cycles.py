"""No import cycle in the source tree.

The rule, read from the source with `ast` (nothing is imported):
- a node is a module of `governance`, `harness` or `stubs` (a package is its `__init__`);
- an arrow A -> B is any import in A, wherever it stands: at module level, inside a function
  (a lazy import still runs, and then the two modules need each other), or under
  `if TYPE_CHECKING:` (the type checker follows it, and it is the same coupling);
- `from P import n` points at the module `P.n` when there is one, else at `P`;
- a string literal that is exactly a submodule's dotted name (`"harness.cli._ask"`) points at
  that module: lazy tables resolved with `importlib` (the CLI's command table, the PEP 562
  tables of `governance` and `harness.providers`) are imports too. A bare top-level name is
  not (`resources.files("governance")` reads data);
- importing `a.b.c` does not add arrows to the parent packages `a` and `a.b` (as import-graph
  tools count it): otherwise every `__init__` that re-exports would be a cycle by construction.
A cycle is a strongly connected component of two or more modules, or a module importing itself.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("governance", "harness", "stubs")


def _module_name(root: Path, path: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def import_graph(root: Path, packages: Iterable[str]) -> dict[str, set[str]]:
    """module -> the modules it imports (see the rule above), over `packages` under `root`."""
    files = {
        _module_name(root, path): path
        for package in packages
        for path in sorted((root / package).rglob("*.py"))
    }
    graph: dict[str, set[str]] = {}
    for name, path in files.items():
        is_package = path.name == "__init__.py"
        targets: list[str] = []
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Import):
                targets += [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    here = name.split(".") if is_package else name.split(".")[:-1]
                    here = here[: len(here) - (node.level - 1)]
                    base = ".".join([*here, *([node.module] if node.module else [])])
                for alias in node.names:
                    submodule = f"{base}.{alias.name}"
                    targets.append(submodule if submodule in files else base)
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                if "." in node.value and node.value in files:
                    targets.append(node.value)
        arrows: set[str] = set()
        for target in targets:
            while target not in files and "." in target:
                target = target.rsplit(".", 1)[0]  # `import a.b.name` -> the module a.b
            if target in files:
                arrows.add(target)
        graph[name] = arrows
    return graph


def cycles(graph: Mapping[str, set[str]]) -> set[frozenset[str]]:
    """Strongly connected components that are cycles (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: set[frozenset[str]] = set()
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, successors = work[-1]
            for succ in successors:
                if succ not in index:
                    index[succ] = low[succ] = len(index)
                    stack.append(succ)
                    on_stack.add(succ)
                    work.append((succ, iter(sorted(graph.get(succ, ())))))
                    break
                if succ in on_stack:
                    low[node] = min(low[node], index[succ])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == index[node]:
                    component = set()
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.add(member)
                        if member == node:
                            break
                    if len(component) > 1 or node in graph.get(node, ()):
                        found.add(frozenset(component))
    return found


def _plant(root: Path, files: Mapping[str, str]) -> dict[str, set[str]]:
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return import_graph(root, ["pkg"])


def test_the_scan_sees_a_cycle_closed_by_a_lazy_import_inside_a_function(tmp_path: Path) -> None:
    graph = _plant(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/_a.py": "from pkg._b import thing\n",
            "pkg/_b.py": "def thing():\n    from pkg import _a\n    return _a\n",
        },
    )
    assert cycles(graph) == {frozenset({"pkg._a", "pkg._b"})}


def test_the_scan_sees_type_checking_relative_and_string_table_imports(tmp_path: Path) -> None:
    graph = _plant(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/sub/__init__.py": "from . import _c\n",
            "pkg/sub/_c.py": "from typing import TYPE_CHECKING\n"
            "if TYPE_CHECKING:\n    from .._d import D\n",
            "pkg/_d.py": 'LAZY = {"C": "pkg.sub"}\n',
        },
    )
    assert graph["pkg.sub"] == {"pkg.sub._c"}
    assert graph["pkg.sub._c"] == {"pkg._d"}
    assert graph["pkg._d"] == {"pkg.sub"}
    assert cycles(graph) == {frozenset({"pkg.sub", "pkg.sub._c", "pkg._d"})}


def test_a_one_way_chain_and_a_parent_package_are_not_cycles(tmp_path: Path) -> None:
    graph = _plant(
        tmp_path,
        {
            "pkg/__init__.py": "from pkg._a import A\n",
            "pkg/_a.py": "import pkg._b\nA = 1\n",
            "pkg/_b.py": "import json\n",
        },
    )
    assert graph == {"pkg": {"pkg._a"}, "pkg._a": {"pkg._b"}, "pkg._b": set()}
    assert cycles(graph) == set()


def test_the_source_tree_has_no_import_cycle() -> None:
    found = sorted(sorted(cycle) for cycle in cycles(import_graph(ROOT, PACKAGES)))
    assert found == [], f"import cycles: {found}"


def test_harness_and_stubs_have_no_import_cycle_at_all() -> None:
    assert cycles(import_graph(ROOT, ("harness", "stubs"))) == set()
