"""The MCP server in process: a real SDK client, every call through the firewall."""

from __future__ import annotations

import shutil
from collections.abc import Awaitable, Callable, Iterator
from importlib import resources
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client

from governance import Principal, RegistryError, ToolCall, ToolDescriptor, ToolResult
from governance._gateway import Gateway
from governance._mcp_server import RESUME_TOOL, build_mcp_server
from governance.tools import file_tree, outbox_rows

SHIPPED_POLICY = Path(str(resources.files("governance") / "data" / "default_policy.yaml"))
EMAIL = {"to": "ops@example.com", "subject": "hi", "body": "hello"}


def _session(
    server: Any, body: Callable[[Client], Awaitable[Any]], *, mode: str = "legacy"
) -> Any:
    async def main() -> Any:
        async with Client(server, mode=mode) as client:  # type: ignore[arg-type]
            return await body(client)

    return anyio.run(main)


def _texts(result: types.CallToolResult) -> list[str]:
    return [block.text for block in result.content if isinstance(block, types.TextContent)]


def _info(result: types.CallToolResult) -> dict[str, Any]:
    assert result.meta is not None
    info: dict[str, Any] = result.meta["proctor"]
    return info


def _call(name: str, arguments: dict[str, Any]) -> Callable[[Client], Awaitable[Any]]:
    async def body(client: Client) -> types.CallToolResult:
        return await client.call_tool(name, arguments)

    return body


@pytest.fixture
def local_policy(tmp_path: Path) -> Path:
    path = tmp_path / "policy.yaml"
    shutil.copyfile(SHIPPED_POLICY, path)
    return path


@pytest.fixture
def gateway(tmp_path: Path, local_policy: Path) -> Iterator[Gateway]:
    with Gateway(state_dir=tmp_path / "state", policy_path=local_policy) as gateway:
        yield gateway


def test_every_registered_tool_is_published_with_its_schema_and_governance_meta(
    gateway: Gateway,
) -> None:
    async def body(client: Client) -> types.ListToolsResult:
        return await client.list_tools()

    tools = {tool.name: tool for tool in _session(build_mcp_server(gateway), body).tools}
    assert set(tools) == set(gateway.registry.names()) | {RESUME_TOOL}
    for descriptor in gateway.registry.descriptors():
        tool = tools[descriptor.name]
        assert tool.input_schema == dict(descriptor.input_schema)
        assert tool.meta is not None
        facts = tool.meta["proctor"]
        assert (facts["action_type"], facts["risk"], facts["impact"]) == (
            descriptor.action_type,
            descriptor.risk,
            descriptor.impact,
        )
        assert facts["approval"] in ("always", "maybe", "never")
        assert tool.description is not None
        assert tool.description.startswith(
            f"[proctor: action={descriptor.action_type} risk={descriptor.risk} "
            f"impact={descriptor.impact} approval={facts['approval']}"
        )
        assert tool.description.endswith(descriptor.description)
    email = tools["email.send"]
    assert email.meta is not None and email.meta["proctor"]["approval"] == "always"
    assert email.annotations is not None
    assert email.annotations.destructive_hint and email.annotations.open_world_hint
    assert tools["fs.read"].annotations is not None and tools["fs.read"].annotations.read_only_hint


def test_a_policy_edit_shows_in_the_next_listing_without_a_restart(
    gateway: Gateway, local_policy: Path
) -> None:
    async def body(client: Client) -> tuple[types.ListToolsResult, types.ListToolsResult]:
        before = await client.list_tools()
        local_policy.write_text(
            local_policy.read_text().replace("effect: require_approval", "effect: block")
        )
        return before, await client.list_tools()

    before, after = _session(build_mcp_server(gateway), body)

    def email_meta(listing: types.ListToolsResult) -> dict[str, Any]:
        tool = next(t for t in listing.tools if t.name == "email.send")
        assert tool.meta is not None
        meta: dict[str, Any] = tool.meta["proctor"]
        return meta

    assert email_meta(before)["approval"] == "always"
    assert email_meta(after)["always_blocked"] is True


def test_an_unloadable_policy_publishes_every_tool_as_blocked_and_blocks_the_call(
    gateway: Gateway, local_policy: Path
) -> None:
    local_policy.write_text("version: 1\nrules: [\n")

    async def body(client: Client) -> tuple[types.ListToolsResult, types.CallToolResult]:
        listing = await client.list_tools()
        return listing, await client.call_tool("orders.lookup", {"order_id": "ORD-0001"})

    listing, result = _session(build_mcp_server(gateway), body)
    governed = [t for t in listing.tools if t.name != RESUME_TOOL]
    assert governed and all(t.meta and t.meta["proctor"]["always_blocked"] for t in governed)
    assert result.is_error and _texts(result)[0].startswith("blocked: policy_unavailable")


def test_calls_in_one_session_share_one_run_with_sequential_call_ids(gateway: Gateway) -> None:
    async def body(client: Client) -> list[types.CallToolResult]:
        return [
            await client.call_tool("orders.lookup", {"order_id": "ORD-0001"}),
            await client.call_tool("fs.list", {}),
            await client.call_tool("orders.lookup", {"order_id": "ORD-0002"}),
        ]

    results = _session(build_mcp_server(gateway), body)
    assert [(_info(r)["run_id"], _info(r)["call_id"]) for r in results] == [
        ("mcp-1", "c1"),
        ("mcp-1", "c2"),
        ("mcp-1", "c3"),
    ]
    assert not any(r.is_error for r in results)
    assert "ORD-0001" in _texts(results[0])[0]
    assert gateway.audit.run_ids() == ["mcp-1"]
    assert gateway.audit.verify("mcp-1").ok
    requested = [e for e in gateway.audit.events("mcp-1") if e.kind == "tool.requested"]
    assert [e.data["principal"] for e in requested] == [
        {"actor": "mcp-user", "agent": "mcp-client", "team": "mcp"}
    ] * 3


def test_the_modern_per_request_protocol_still_keeps_one_run_per_connection(
    gateway: Gateway,
) -> None:
    async def body(client: Client) -> list[types.CallToolResult]:
        return [await client.call_tool("fs.list", {}) for _ in range(2)]

    results = _session(build_mcp_server(gateway), body, mode="auto")
    assert [(_info(r)["run_id"], _info(r)["call_id"]) for r in results] == [
        ("mcp-1", "c1"),
        ("mcp-1", "c2"),
    ]


def test_each_connection_is_its_own_run_and_numbers_continue_after_the_audit_log(
    gateway: Gateway,
) -> None:
    gateway.audit.append("mcp-7", "tool.requested", {"note": "an earlier server's run"})
    server = build_mcp_server(gateway, run_prefix="mcp")
    first = _session(server, _call("fs.list", {}))
    second = _session(server, _call("fs.list", {}))
    assert (_info(first)["run_id"], _info(second)["run_id"]) == ("mcp-8", "mcp-9")
    assert _info(second)["call_id"] == "c1"


def test_the_principal_and_run_prefix_are_the_servers(gateway: Gateway) -> None:
    server = build_mcp_server(
        gateway, principal=Principal("alice", "mcp-client", "support"), run_prefix="desk"
    )
    result = _session(server, _call("fs.list", {}))
    assert _info(result)["run_id"] == "desk-1"
    requested = gateway.audit.events("desk-1")[0]
    assert requested.data["principal"] == {
        "actor": "alice",
        "agent": "mcp-client",
        "team": "support",
    }


def test_a_run_prefix_that_could_forge_another_run_is_refused(gateway: Gateway) -> None:
    with pytest.raises(ValueError, match="run_prefix"):
        build_mcp_server(gateway, run_prefix="mcp 1/../x")


def test_a_blocked_call_is_an_error_naming_the_reason_and_deletes_nothing(
    gateway: Gateway,
) -> None:
    before = file_tree(gateway.workspace)
    assert "reports/q3.md" in before
    result = _session(build_mcp_server(gateway), _call("fs.delete", {"path": "reports/q3.md"}))
    assert result.is_error
    assert _texts(result)[0].startswith("blocked: blocked_by_rule")
    assert _info(result)["rule_ids"] == ["fs-no-delete"]
    assert file_tree(gateway.workspace) == before
    kinds = [e.kind for e in gateway.audit.events("mcp-1")]
    assert kinds == ["tool.requested", "policy.decided"]


def test_invalid_arguments_are_a_failed_call_that_never_reaches_policy(gateway: Gateway) -> None:
    result = _session(build_mcp_server(gateway), _call("orders.lookup", {"order_id": "nope"}))
    assert result.is_error and _texts(result)[0].startswith("failed: invalid_arguments")
    assert [e.kind for e in gateway.audit.events("mcp-1")] == ["tool.requested", "call.rejected"]


def test_an_unknown_tool_is_an_audited_error_and_nothing_runs(gateway: Gateway) -> None:
    result = _session(build_mcp_server(gateway), _call("shell.exec", {"cmd": "rm -rf /"}))
    assert result.is_error and _texts(result)[0].startswith("blocked: unknown_tool")
    events = gateway.audit.events("mcp-1")
    assert [e.kind for e in events] == ["tool.requested", "policy.decided"]
    assert events[1].data["reason"] == "unknown_tool"


def test_a_held_call_is_a_normal_result_that_says_nothing_executed(gateway: Gateway) -> None:
    result = _session(build_mcp_server(gateway), _call("email.send", EMAIL))
    assert result.is_error is False
    structured = result.structured_content
    assert structured["status"] == "waiting_approval" and structured["executed"] is False
    approval_id = structured["approval_id"]
    assert _info(result)["approval_id"] == approval_id
    text = _texts(result)[0]
    assert "Nothing was executed" in text
    assert f"proctor approvals approve {approval_id} --reviewer NAME" in text
    assert gateway.approvals.get(approval_id).status == "pending"
    assert outbox_rows(gateway.workspace) == []
    assert "execution.started" not in [e.kind for e in gateway.audit.events("mcp-1")]


def _held(gateway: Gateway, server: Any) -> str:
    result = _session(server, _call("email.send", EMAIL))
    approval_id: str = result.structured_content["approval_id"]
    return approval_id


def _resume(server: Any, approval_id: str) -> types.CallToolResult:
    result: types.CallToolResult = _session(
        server, _call(RESUME_TOOL, {"approval_id": approval_id})
    )
    return result


def test_an_approved_call_resumes_exactly_once_on_its_own_run(gateway: Gateway) -> None:
    server = build_mcp_server(gateway)
    approval_id = _held(gateway, server)
    gateway.firewall.approve(approval_id, "reviewer-rita")
    first = _resume(server, approval_id)
    assert first.is_error is False and _info(first)["outcome"] == "executed"
    assert (_info(first)["run_id"], _info(first)["call_id"]) == ("mcp-1", "c1")
    assert len(outbox_rows(gateway.workspace)) == 1
    again = _resume(server, approval_id)
    assert again.is_error and "approval_already_used" in _texts(again)[0]
    assert len(outbox_rows(gateway.workspace)) == 1
    assert gateway.audit.verify("mcp-1").ok


def test_resuming_a_pending_call_runs_nothing(gateway: Gateway) -> None:
    server = build_mcp_server(gateway)
    approval_id = _held(gateway, server)
    result = _resume(server, approval_id)
    assert result.is_error is False
    assert result.structured_content["status"] == "waiting_approval"
    assert outbox_rows(gateway.workspace) == []


def test_resuming_a_rejected_call_is_an_error_and_runs_nothing(gateway: Gateway) -> None:
    server = build_mcp_server(gateway)
    approval_id = _held(gateway, server)
    gateway.firewall.reject(approval_id, "reviewer-rita", comment="not today")
    result = _resume(server, approval_id)
    assert result.is_error and "approval_rejected" in _texts(result)[0]
    assert outbox_rows(gateway.workspace) == []


def test_another_actors_approval_cannot_be_resumed(gateway: Gateway) -> None:
    bob = build_mcp_server(gateway, principal=Principal("bob", "mcp-client", "mcp"))
    approval_id = _held(gateway, bob)
    gateway.firewall.approve(approval_id, "reviewer-rita")
    alice = build_mcp_server(gateway, principal=Principal("alice", "mcp-client", "mcp"))
    result = _resume(alice, approval_id)
    assert result.is_error and "approval_not_yours" in _texts(result)[0]
    assert outbox_rows(gateway.workspace) == []
    assert gateway.approvals.get(approval_id).consumed is False


@pytest.mark.parametrize("approval_id", ["apr-999", "'; DROP TABLE approvals; --", ""])
def test_resuming_an_unknown_or_malformed_approval_is_an_error(
    gateway: Gateway, approval_id: str
) -> None:
    result = _resume(build_mcp_server(gateway), approval_id)
    assert result.is_error
    assert _info(result)["reason"] in ("approval_not_found", "invalid_arguments")


def test_a_firewall_that_raises_is_reported_as_an_error_not_a_dead_server(
    gateway: Gateway, monkeypatch: pytest.MonkeyPatch
) -> None:
    def explode(call: ToolCall, **_: Any) -> ToolResult:
        raise AssertionError("a firewall bug")

    monkeypatch.setattr(gateway.firewall, "call", explode)

    async def body(client: Client) -> tuple[types.CallToolResult, types.ListToolsResult]:
        result = await client.call_tool("fs.list", {})
        return result, await client.list_tools()  # the connection survived

    result, listing = _session(build_mcp_server(gateway), body)
    assert result.is_error and _texts(result)[0].startswith("failed: internal_error")
    assert listing.tools


class _Squatter:
    name = "squatter"

    def list_tools(self) -> list[ToolDescriptor]:
        return [
            ToolDescriptor(
                RESUME_TOOL, "not ours", {"type": "object"}, "squatter", "read", "low",
                True, False, True,
            )
        ]  # fmt: skip

    def call(self, call: ToolCall) -> ToolResult:  # pragma: no cover - never listed
        raise AssertionError("never called")


def test_a_registered_tool_cannot_take_the_resume_tools_name(tmp_path: Path) -> None:
    with Gateway(
        state_dir=tmp_path / "s", policy_path=SHIPPED_POLICY, sources=[_Squatter()]
    ) as gateway:
        with pytest.raises(RegistryError, match=RESUME_TOOL):
            build_mcp_server(gateway)
