"""Refusals, never exceptions: whatever a schema, a policy edit or a collaborator does, the
firewall returns a result, and a refused call executed nothing.

Bounded for `make test`; `PROCTOR_FUZZ=long` runs the long profile (see CONTRIBUTING.md).
"""

from __future__ import annotations

import http.server
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from governance import Principal, ToolCall, ToolDescriptor, ToolResult
from governance._firewall import Firewall, StaticPolicy
from governance.policy._load import PolicyFile, parse_policy
from governance.stores._audit import AuditLog
from governance.tools._registry import ToolRegistry

LONG = os.environ.get("PROCTOR_FUZZ") == "long"
PRINCIPAL = Principal("ann", "bot", "ops")
ALLOW_ALL = """
version: 1
defaults: {unknown_tool: block, no_match: block}
rules:
  - id: allow-fuzz
    description: everything of fuzz.* runs
    effect: allow
    match: {namespace: fuzz}
"""


class Tool:
    """One tool with a given schema; counts executions."""

    name = "fuzz"

    def __init__(self, schema: Any) -> None:
        self.schema = schema
        self.executed = 0

    def list_tools(self) -> list[ToolDescriptor]:
        return [
            ToolDescriptor(
                name="fuzz.tool",
                description="fuzz",
                input_schema=self.schema,
                source="fuzz",
                action_type="read",
                risk="low",
                reversible=True,
                external_side_effect=False,
                idempotent=True,
            )
        ]

    def call(self, call: ToolCall) -> ToolResult:
        self.executed += 1
        return ToolResult(call.call_id, call.tool, "executed", output="ran")


class Fetches(http.server.BaseHTTPRequestHandler):
    hits: list[str] = []

    def do_GET(self) -> None:
        Fetches.hits.append(self.path)
        body = b'{"type": "object"}'
        self.send_response(200)
        self.send_header("Content-Type", "application/schema+json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def schema_server() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Fetches)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def _firewall(tmp_path: Path, tool: Tool) -> Firewall:
    return Firewall(
        ToolRegistry([tool]),
        StaticPolicy(parse_policy(ALLOW_ALL)),
        AuditLog(tmp_path / f"audit-{id(tool)}.sqlite"),
    )


def _call(arguments: dict[str, Any]) -> ToolCall:
    return ToolCall("c1", "fuzz.tool", arguments, "run-1", PRINCIPAL)


def test_a_remote_ref_is_never_fetched_and_the_call_is_refused(
    tmp_path: Path, schema_server: str
) -> None:
    Fetches.hits.clear()
    tool = Tool(
        {
            "type": "object",
            "properties": {"x": {"$ref": f"{schema_server}/evil.json"}},
        }
    )
    result = _firewall(tmp_path, tool).call(_call({"x": 1}))
    assert (result.outcome, result.reason) == ("failed", "schema_remote_ref")
    assert Fetches.hits == [] and tool.executed == 0


def test_a_remote_ref_behind_a_local_one_is_never_fetched(
    tmp_path: Path, schema_server: str
) -> None:
    Fetches.hits.clear()
    tool = Tool(
        {
            "$defs": {"a": {"$ref": f"{schema_server}/b.json#/x"}},
            "type": "object",
            "properties": {"x": {"$ref": "#/$defs/a"}},
        }
    )
    result = _firewall(tmp_path, tool).call(_call({"x": 1}))
    assert result.reason == "schema_remote_ref"
    assert Fetches.hits == [] and tool.executed == 0


def test_a_dangling_local_ref_is_refused_as_unresolvable(tmp_path: Path) -> None:
    tool = Tool({"type": "object", "properties": {"x": {"$ref": "#/$defs/missing"}}})
    result = _firewall(tmp_path, tool).call(_call({"x": 1}))
    assert (result.outcome, result.reason) == ("failed", "schema_unresolvable")
    assert tool.executed == 0


def test_local_refs_and_embedded_ids_still_validate(tmp_path: Path) -> None:
    tool = Tool(
        {
            "$defs": {
                "n": {"type": "integer", "maximum": 3},
                "inner": {"$id": "urn:proctor:inner", "type": "string"},
            },
            "type": "object",
            "properties": {"x": {"$ref": "#/$defs/n"}, "y": {"$ref": "urn:proctor:inner"}},
        }
    )
    fw = _firewall(tmp_path, tool)
    assert fw.call(_call({"x": 2, "y": "ok"})).outcome == "executed"
    refused = fw.call(_call({"x": 9, "y": "ok"}))
    assert (refused.outcome, refused.reason) == ("failed", "invalid_arguments")
    assert tool.executed == 1


# -- random schemas -----------------------------------------------------------------------

_REFS = st.sampled_from(
    [
        "#",
        "#/$defs/a",
        "#/$defs/missing",
        "#/properties",
        "#anchor",
        "other.json",
        "http://127.0.0.1:9/x.json",
        "urn:x",
        "#/~",
        "#/$defs/a/0",
        "",
        "%",
    ]
)
_KEYS = st.sampled_from(
    [
        "type",
        "properties",
        "items",
        "$ref",
        "$defs",
        "$id",
        "$anchor",
        "$dynamicRef",
        "anyOf",
        "allOf",
        "not",
        "enum",
        "const",
        "required",
        "pattern",
        "minimum",
        "maxLength",
        "additionalProperties",
        "x-proctor-kind",
        "format",
        "if",
        "then",
        "a",
        "0",
    ]
)
_LEAVES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.text(max_size=8),
    _REFS,
    st.sampled_from(["object", "string", "array", "path", "(", "[a-", "integer"]),
)
SCHEMAS = st.recursive(
    _LEAVES,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(_KEYS, inner, max_size=5)),
    max_leaves=30,
)
ARGUMENTS = st.dictionaries(
    st.sampled_from(["x", "y", "path"]),
    st.one_of(st.integers(), st.text(max_size=10), st.lists(st.integers(), max_size=3)),
    max_size=3,
)
FUZZ = settings(
    max_examples=2000 if LONG else 150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@FUZZ
@given(schema=SCHEMAS, arguments=ARGUMENTS)
def test_no_schema_makes_the_firewall_raise_or_fetch(
    tmp_path: Path, schema_server: str, schema: Any, arguments: dict[str, Any]
) -> None:
    Fetches.hits.clear()
    tool = Tool(schema if isinstance(schema, dict) else {"anyOf": [schema]})
    result = _firewall(tmp_path, tool).call(_call(arguments))
    assert isinstance(result, ToolResult)
    assert tool.executed == (1 if result.outcome == "executed" else 0)
    assert Fetches.hits == []


def test_a_schema_nested_thousands_deep_is_refused_not_a_recursion_error(tmp_path: Path) -> None:
    schema: dict[str, Any] = {"type": "object"}
    for _ in range(3000):
        schema = {"type": "object", "properties": {"x": schema}}
    tool = Tool(schema)
    result = _firewall(tmp_path, tool).call(_call({"x": {}}))
    assert (result.outcome, result.reason) == ("failed", "schema_invalid")
    assert tool.executed == 0


# -- random policy edits, hot-reloaded -----------------------------------------------------

_POLICY_PIECES = st.sampled_from(
    [
        ALLOW_ALL,
        "\x00",
        "[" * 3000,
        "{a: " * 500,
        "\ud800",
        "&a [*a, *a]",
        "!!python/object",
        "rules:\n  - id: x\n",
        "\t",
        "version: 2\n",
        ": :",
        "\ufeff",
        "- - -",
        "effect: allow",
        "    ",
        "\n",
        "#",
        "'",
        '"',
        "\x85",
        "\u2028",
    ]
)
POLICY_TEXTS = st.one_of(
    st.lists(_POLICY_PIECES, min_size=1, max_size=6).map("".join), st.text(max_size=200)
)


@pytest.fixture(scope="module")
def reloading(tmp_path_factory: pytest.TempPathFactory) -> tuple[Firewall, Tool, Path]:
    base = tmp_path_factory.mktemp("reload")
    path = base / "policy.yaml"
    path.write_text(ALLOW_ALL, encoding="utf-8")
    tool = Tool({"type": "object"})
    fw = Firewall(ToolRegistry([tool]), PolicyFile(path), AuditLog(base / "audit.sqlite"))
    return fw, tool, path


@settings(
    max_examples=2000 if LONG else 40,  # the loader has its own, larger fuzz suite
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(text=POLICY_TEXTS)
def test_no_policy_edit_makes_the_firewall_raise(
    reloading: tuple[Firewall, Tool, Path], text: str
) -> None:
    fw, tool, path = reloading
    path.write_bytes(text.encode("utf-8", "surrogatepass"))
    stamp = os.stat(path).st_mtime_ns + 1_000_000_000
    os.utime(path, ns=(stamp, stamp))  # seen as an edit by any change detector
    before = tool.executed
    result = fw.call(_call({}))
    assert isinstance(result, ToolResult)
    if result.outcome == "executed":
        assert tool.executed == before + 1
    else:
        assert tool.executed == before
        assert result.reason in ("policy_unavailable", "no_matching_rule", "unknown_tool") or (
            result.reason or ""
        ).startswith("blocked")


@pytest.mark.parametrize("text", ["version: 1\x00\n", "[" * 3000, "x: " + "{" * 3000])
def test_a_hot_reloaded_policy_with_nul_or_deep_nesting_blocks_every_call(
    reloading: tuple[Firewall, Tool, Path], text: str
) -> None:
    fw, tool, path = reloading
    path.write_text(text, encoding="utf-8")
    stamp = os.stat(path).st_mtime_ns + 1_000_000_000
    os.utime(path, ns=(stamp, stamp))
    before = tool.executed
    result = fw.call(_call({}))
    assert (result.outcome, result.reason) == ("blocked", "policy_unavailable")
    assert tool.executed == before


class Exploding:
    """A collaborator that fails in a way nobody planned for."""

    def current(self) -> Any:
        raise MemoryError("simulated")


def test_a_policy_source_failing_with_any_exception_blocks(tmp_path: Path) -> None:
    tool = Tool({"type": "object"})
    fw = Firewall(ToolRegistry([tool]), Exploding(), AuditLog(tmp_path / "a.sqlite"))
    result = fw.call(_call({}))
    assert (result.outcome, result.reason) == ("blocked", "policy_unavailable")
    assert tool.executed == 0


def test_an_observer_that_raises_changes_nothing(tmp_path: Path) -> None:
    tool = Tool({"type": "object"})
    audit = AuditLog(tmp_path / "a.sqlite")

    def broken(_event: object) -> None:
        raise RuntimeError("observer bug")

    fw = Firewall(
        ToolRegistry([tool]),
        StaticPolicy(parse_policy(ALLOW_ALL)),
        audit,
        observers=(broken,),
    )
    result = fw.call(_call({}))
    assert result.outcome == "executed" and tool.executed == 1
    assert [e.kind for e in audit.events("run-1")][-1] == "execution.completed"


class BrokenAudit:
    """Digests fine, then fails with a non-audit exception on the first append."""

    def __init__(self, inner: AuditLog) -> None:
        self._inner = inner

    def append(self, run_id: str, kind: str, data: Any) -> Any:
        raise OSError("disk on fire")

    def digest_arguments(self, arguments: Any) -> str:
        return self._inner.digest_arguments(arguments)


def test_an_audit_sink_failing_with_a_foreign_exception_refuses_and_runs_nothing(
    tmp_path: Path,
) -> None:
    tool = Tool({"type": "object"})
    fw = Firewall(
        ToolRegistry([tool]),
        StaticPolicy(parse_policy(ALLOW_ALL)),
        BrokenAudit(AuditLog(tmp_path / "a.sqlite")),
    )
    result = fw.call(_call({}))
    assert result.outcome == "blocked" and result.reason == "firewall_error"
    assert tool.executed == 0


class ExplodingApprovals:
    """An approval store failing in a way nobody planned for."""

    def expire_due(self) -> None:
        raise RuntimeError("store bug")

    def __getattr__(self, name: str) -> Any:
        raise RuntimeError(f"store bug in {name}")


def test_resuming_through_a_store_that_raises_anything_refuses_and_runs_nothing(
    tmp_path: Path,
) -> None:
    tool = Tool({"type": "object"})
    fw = Firewall(
        ToolRegistry([tool]),
        StaticPolicy(parse_policy(ALLOW_ALL)),
        AuditLog(tmp_path / "a.sqlite"),
        approvals=ExplodingApprovals(),  # type: ignore[arg-type]
    )
    result = fw.resume_held("ap-1", _call({}))
    assert (result.outcome, result.reason, result.approval_id) == (
        "blocked",
        "firewall_error",
        "ap-1",
    )
    assert tool.executed == 0
