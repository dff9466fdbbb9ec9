"""The value judged is the value executed: one snapshot, one canonical path, one reading."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from importlib import resources
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from governance import Principal, ToolCall, ToolDescriptor, ToolResult
from governance._firewall import Firewall, LifecycleEvent, StaticPolicy
from governance._gateway import Gateway
from governance.arguments._paths import canonical_or_none
from governance.policy._load import load_policy
from governance.stores._audit import AuditLog
from governance.tools._fs import Sandbox, fs_tools
from governance.tools._local import LocalToolSource
from governance.tools._registry import ToolRegistry

SHIPPED = Path(str(resources.files("governance") / "data" / "default_policy.yaml"))
PRINCIPAL = Principal("ann", "bot", "ops")
STAGING_KEY = "sk-demo-0000-FAKE-NOT-A-REAL-KEY-0000"

# Every file holds its own relative path: what fs.read returns names the file it touched.
TREE = ("notes/todo.md", "reports/q3.md", "secrets/api_keys.txt", "secrets/a/x.txt", "a/b.txt")


@pytest.fixture
def gateway(tmp_path: Path) -> Iterator[Gateway]:
    with Gateway(state_dir=tmp_path / "state", policy_path=SHIPPED, audit_key_from_env=False) as gw:
        yield gw


def _call(tool: str, arguments: Mapping[str, Any], call_id: str = "c1") -> ToolCall:
    return ToolCall(call_id, tool, arguments, "run-1", PRINCIPAL)


def _files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("fs.read", {"path": "secrets/a\\../../api_keys.txt"}),
        ("fs.read", {"path": "secrets\\api_keys.txt"}),
        ("fs.read", {"path": "reports/..\\..\\secrets/api_keys.txt"}),
        ("fs.write", {"path": "reports/a\\../../notes/owned.md", "content": "x"}),
        ("fs.search", {"query": "KEY", "path": "notes/a\\../../secrets"}),
        (
            "fs.move",
            {"source": "reports/x\\../../secrets/api_keys.txt", "destination": "reports/k"},
        ),
        ("fs.list", {"path": "notes/\\..\\..\\secrets"}),
        ("fs.read", {"path": "secrets\u200b/api_keys.txt"}),
        ("fs.read", {"path": "notes/../secrets/api_keys.txt\x00"}),
    ],
)
def test_backslash_and_invisible_tricks_are_blocked_before_any_rule_and_touch_nothing(
    gateway: Gateway, tool: str, arguments: dict[str, Any]
) -> None:
    files = gateway.workspace / "files"
    before = _files(files)
    result = gateway.firewall.call(_call(tool, arguments))
    assert result.outcome == "blocked"
    assert result.reason is not None and result.reason.startswith("invalid_argument:")
    assert result.decision is not None and result.decision.rule_ids == ()  # no rule can allow it
    assert STAGING_KEY not in result.output + (result.error or "")
    assert _files(files) == before
    kinds = [e.kind for e in gateway.audit.events("run-1")]
    assert kinds == ["tool.requested", "policy.decided"]  # blocked, never started


def test_a_non_canonical_but_harmless_path_is_judged_and_executed_in_canonical_form(
    gateway: Gateway,
) -> None:
    seen: list[LifecycleEvent] = []
    gateway.firewall.add_observer(seen.append)
    result = gateway.firewall.call(_call("fs.read", {"path": "./notes//x/../todo.txt"}))
    assert result.outcome == "executed", result.error
    requested = next(e for e in seen if e.kind == "tool.requested")
    assert requested.data["arguments"] == {"path": "notes/todo.txt"}
    assert requested.data["canonicalised"] == ["path"]
    decided = next(e for e in seen if e.kind == "policy.decided")
    assert decided.data["rule_ids"] == ["fs-read"]


def test_dot_dot_through_a_harmless_folder_into_secrets_is_blocked_by_policy(
    gateway: Gateway,
) -> None:
    result = gateway.firewall.call(_call("fs.read", {"path": "notes/../secrets/api_keys.txt"}))
    assert (result.outcome, result.reason) == ("blocked", "blocked_by_rule")
    assert STAGING_KEY not in result.output


class ShiftyMapping(Mapping[str, Any]):
    """Shows a harmless path on the first read and the secret on every read after it."""

    def __init__(self) -> None:
        self.reads = 0

    def _value(self) -> str:
        self.reads += 1
        return "reports/q3.md" if self.reads == 1 else "secrets/api_keys.txt"

    def __getitem__(self, key: str) -> Any:
        if key != "path":
            raise KeyError(key)
        return self._value()

    def __iter__(self) -> Iterator[str]:
        return iter(["path"])

    def __len__(self) -> int:
        return 1


def test_a_mapping_that_changes_between_reads_cannot_show_policy_one_path_and_tool_another(
    gateway: Gateway,
) -> None:
    shifty = ShiftyMapping()
    result = gateway.firewall.call(_call("fs.read", shifty))
    assert shifty.reads == 1  # read once, into the snapshot; never again
    assert result.outcome == "executed"
    assert STAGING_KEY not in result.output
    assert "Q3 report" in result.output


class RecordingSource:
    """Remembers exactly what it was handed, and mutates it (which must change nothing)."""

    name = "rec"

    def __init__(self) -> None:
        self.received: list[dict[str, Any]] = []

    def list_tools(self) -> list[ToolDescriptor]:
        return [
            ToolDescriptor(
                name="rec.open",
                description="open",
                input_schema={
                    "type": "object",
                    "properties": {
                        "path": {"type": "string", "x-proctor-kind": "path"},
                        "tags": {"type": "array", "items": {"type": "string"}},
                    },
                    "additionalProperties": False,
                },
                source="rec",
                action_type="read",
                risk="low",
                reversible=True,
                external_side_effect=False,
                idempotent=True,
            )
        ]

    def call(self, call: ToolCall) -> ToolResult:
        self.received.append(json.loads(json.dumps(call.arguments)))
        call.arguments["tags"].append("mutated")  # type: ignore[index]
        return ToolResult(call.call_id, call.tool, "executed", output="ok")


ALLOW_RECORDER = """
version: 1
defaults: {unknown_tool: block, no_match: block}
rules:
  - id: rec-docs
    description: only under docs/
    effect: allow
    match: {tool: rec.open}
    when: [{arg: path, path_prefix: docs/}]
"""


def test_the_tool_receives_exactly_the_judged_form_and_cannot_change_the_record(
    tmp_path: Path,
) -> None:
    from governance.policy._load import parse_policy

    source = RecordingSource()
    audit = AuditLog(tmp_path / "audit.sqlite")
    seen: list[LifecycleEvent] = []
    fw = Firewall(
        ToolRegistry([source]),
        StaticPolicy(parse_policy(ALLOW_RECORDER)),
        audit,
        observers=(seen.append,),
    )
    arguments = {"path": "docs/./a//b.txt", "tags": ("x",)}
    result = fw.call(_call("rec.open", arguments))
    assert result.outcome == "executed"
    judged = next(e for e in seen if e.kind == "tool.requested").data["arguments"]
    assert source.received == [judged] == [{"path": "docs/a/b.txt", "tags": ["x"]}]
    assert judged["tags"] == ["x"]  # the tool's mutation of its copy reached nothing
    assert arguments == {"path": "docs/./a//b.txt", "tags": ("x",)}  # the caller's is untouched


@pytest.mark.parametrize(
    "value",
    [float("nan"), float("inf"), object(), b"bytes", {1: "int key"}, "lone \ud800 surrogate"],
)
def test_arguments_that_are_not_plain_json_are_refused_and_nothing_runs(
    tmp_path: Path, value: object
) -> None:
    from governance.policy._load import parse_policy

    source = RecordingSource()
    fw = Firewall(
        ToolRegistry([source]),
        StaticPolicy(parse_policy(ALLOW_RECORDER)),
        AuditLog(tmp_path / "audit.sqlite"),
    )
    result = fw.call(_call("rec.open", {"path": "docs/a", "tags": [value]}))
    assert (result.outcome, result.reason) == ("failed", "invalid_arguments")
    assert source.received == []


def test_arguments_nested_past_the_limit_are_refused_not_a_recursion_error(
    tmp_path: Path,
) -> None:
    from governance.policy._load import parse_policy

    deep: Any = "x"
    for _ in range(5000):
        deep = [deep]
    source = RecordingSource()
    fw = Firewall(
        ToolRegistry([source]),
        StaticPolicy(parse_policy(ALLOW_RECORDER)),
        AuditLog(tmp_path / "audit.sqlite"),
    )
    result = fw.call(_call("rec.open", {"path": "docs/a", "tags": deep}))
    assert (result.outcome, result.reason) == ("failed", "invalid_arguments")
    assert source.received == []


# -- the property: whatever the string, the file touched is the path judged ----------------


@pytest.fixture(scope="module")
def sandboxed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Firewall, Path]:
    base = tmp_path_factory.mktemp("prop")
    root = base / "files"
    for rel in TREE:
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(rel, encoding="utf-8")
    (root / "reports" / "link").symlink_to(root / "secrets")  # a link is never followed
    fw = Firewall(
        ToolRegistry([LocalToolSource(fs_tools(Sandbox(root)))]),
        StaticPolicy(load_policy(SHIPPED)),
        AuditLog(base / "audit.sqlite"),
    )
    return fw, root


_PIECES = st.sampled_from(
    [
        "secrets",
        "reports",
        "notes",
        "a",
        "b.txt",
        "q3.md",
        "todo.md",
        "api_keys.txt",
        "x.txt",
        "link",
        "/",
        "/",
        "\\",
        ".",
        "..",
        "./",
        "../",
        "\x00",
        "\u200b",
        "\u202e",
        "Secrets",
        "SECRETS",
        "ｓecrets",
        "C:",
        "~",
        " ",
        "e\u0301",
        "%2e%2e",
        "\n",
    ]
)
PATHS = st.one_of(st.lists(_PIECES, min_size=1, max_size=10).map("".join), st.text(max_size=30))


@settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(path=PATHS)
def test_the_file_read_is_the_path_the_policy_judged_or_the_call_is_refused(
    sandboxed: tuple[Firewall, Path], path: str
) -> None:
    fw, _root = sandboxed
    seen: list[LifecycleEvent] = []
    fw.add_observer(seen.append)
    try:
        result = fw.call(_call("fs.read", {"path": path}))
    finally:
        fw._observers.remove(seen.append)
    if result.outcome != "executed":
        assert "secrets/" not in result.output
        return
    judged = next(e for e in seen if e.kind == "tool.requested").data["arguments"]["path"]
    assert judged == canonical_or_none(path)
    assert result.output == judged  # the file touched holds its own path
    assert not judged.casefold().startswith("secrets")


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(path=PATHS)
def test_a_write_lands_at_the_judged_path_under_reports_or_nowhere(
    sandboxed: tuple[Firewall, Path], path: str
) -> None:
    fw, root = sandboxed
    before = _files(root)
    seen: list[LifecycleEvent] = []
    fw.add_observer(seen.append)
    try:
        result = fw.call(_call("fs.write", {"path": path, "content": "written"}))
    finally:
        fw._observers.remove(seen.append)
    after = _files(root)
    changed = {rel for rel in after if before.get(rel) != after[rel]}
    if result.outcome != "executed":
        assert changed == set()
        return
    judged = next(e for e in seen if e.kind == "tool.requested").data["arguments"]["path"]
    assert changed == {judged}
    assert judged.startswith("reports/")
    if judged in before:  # keep the tree fixed for the next example
        (root / judged).write_bytes(before[judged])
    else:
        (root / judged).unlink()
