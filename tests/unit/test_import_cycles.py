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

from collections.abc import Mapping
from pathlib import Path

from tests.import_graph import cycles, import_graph

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("governance", "harness", "stubs")


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
