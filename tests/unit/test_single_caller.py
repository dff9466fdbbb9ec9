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


def test_only_the_firewall_asks_the_registry_for_a_source() -> None:
    offenders = []
    for path in _production_files():
        if path in (FIREWALL, ROOT / "governance" / "_registry.py"):
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Attribute) and "source_for" in node.attr:
                offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}: .{node.attr}")
    assert offenders == []


def _public_reachable(root: object, depth: int = 3) -> list[tuple[str, object]]:
    """Every value reachable from `root` through public attributes and properties, and the
    results of public one-argument lookups given a registered tool name."""
    import inspect

    found: list[tuple[str, object]] = []
    queue: list[tuple[str, object, int]] = [("gateway", root, 0)]
    seen: set[int] = set()
    while queue:
        where, obj, level = queue.pop()
        if id(obj) in seen or level > depth or isinstance(obj, str | int | float | bytes):
            continue
        seen.add(id(obj))
        found.append((where, obj))
        values: list[tuple[str, object]] = []
        if isinstance(obj, list | tuple | set | frozenset):
            values = [(f"{where}[{i}]", v) for i, v in enumerate(obj)]
        elif isinstance(obj, dict):
            values = [(f"{where}[{k!r}]", v) for k, v in obj.items()]
        elif type(obj).__module__.startswith("governance"):  # only Proctor's own objects
            for name in dir(obj):
                if name.startswith("_"):
                    continue
                try:
                    value = getattr(obj, name)
                except Exception:
                    continue
                if inspect.ismethod(value):
                    params = list(inspect.signature(value).parameters.values())
                    if len(params) == 1 and params[0].kind == params[0].POSITIONAL_OR_KEYWORD:
                        if not name.startswith(("get", "source", "lookup", "find", "tool")):
                            continue  # only lookups: nothing that could change state
                        try:
                            result = value("fs.delete")
                        except Exception:
                            continue
                        values.append((f"{where}.{name}('fs.delete')", result))
                    continue
                values.append((f"{where}.{name}", value))
        queue.extend((w, v, level + 1) for w, v in values)
    return found


def test_nothing_public_on_a_gateway_hands_out_an_executable_source(tmp_path: Path) -> None:
    from importlib import resources

    from governance import Firewall, Gateway, ToolSource

    policy = Path(str(resources.files("governance") / "data" / "default_policy.yaml"))
    with Gateway(state_dir=tmp_path, policy_path=policy, audit_key_from_env=False) as gateway:
        reachable = _public_reachable(gateway)
        sources = [
            where
            for where, obj in reachable
            if isinstance(obj, ToolSource) and not isinstance(obj, Firewall)
        ]
        walked = {where for where, _ in reachable}  # the walk really went somewhere
        assert {"gateway.registry", "gateway.firewall", "gateway.registry.get('fs.delete')"} <= (
            walked
        )
        assert sources == []
