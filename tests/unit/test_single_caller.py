"""Structural guarantees: only the firewall executes tools, and the layers stay apart."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PRODUCTION = ("governance", "harness", "stubs")
FIREWALL = ROOT / "governance" / "_firewall.py"


def _tool_executions(tree: ast.AST) -> list[tuple[int, str]]:
    """`<expr>.call(...)` invocations whose receiver is not a firewall."""
    found = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "call"
        ):
            receiver = ast.unparse(node.func.value)
            if not receiver.split(".")[-1].lstrip("_").endswith("firewall"):
                found.append((node.lineno, receiver))
    return found


def _production_files() -> list[Path]:
    return sorted(p for pkg in PRODUCTION for p in (ROOT / pkg).rglob("*.py"))


def test_the_scan_finds_a_planted_direct_call() -> None:
    planted = ast.parse("source = registry.source_for(name)\nsource.call(call)\n")
    assert _tool_executions(planted) == [(2, "source")]
    allowed = ast.parse("self._firewall.call(call)\nfirewall.call(call, usage=u)\n")
    assert _tool_executions(allowed) == []


def test_only_the_firewall_calls_a_tool_source() -> None:
    offenders = []
    for path in _production_files():
        if path == FIREWALL:
            continue
        for line, receiver in _tool_executions(ast.parse(path.read_text(), str(path))):
            offenders.append(f"{path.relative_to(ROOT)}:{line}: {receiver}.call(...)")
    assert offenders == [], "only governance/_firewall.py may execute a tool:\n" + "\n".join(
        offenders
    )


def test_the_firewall_executes_in_exactly_one_place() -> None:
    executions = _tool_executions(ast.parse(FIREWALL.read_text()))
    assert [receiver for _, receiver in executions] == ["source"]


def test_governance_never_imports_harness() -> None:
    offenders = []
    for path in sorted((ROOT / "governance").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            offenders += [
                f"{path.relative_to(ROOT)}: {n}" for n in names if n.startswith("harness")
            ]
    assert offenders == []
