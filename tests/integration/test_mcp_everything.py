"""The npm reference server `@modelcontextprotocol/server-everything`, governed by a real Gateway.

Nobody here wrote it: its `get-env` tool returns the server's whole environment (a real secret
leak), and its `initialize` answer carries instructions aimed at the model. It runs over stdio
(launched by Proctor, environment allow-listed) and over Streamable HTTP (launched by the test,
reached by URL); every test runs against both.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

import anyio
import mcp_types
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client

from governance import ManualClock, Principal, ToolCall
from governance._gateway import Gateway
from governance._mcp_server import INSTRUCTIONS, build_mcp_server
from governance.core._canonical import digest
from tests.integration import _node

pytestmark = pytest.mark.slow

# Fabricated, secret-shaped values: never real credentials.
SECRET = "sk-proj-PrOcToRfAbRiCaTeDtEsTkEy0123456789abcdefXYZ"
ARGUMENT_SECRET = "sk-proj-ArGuMeNtFaBrIcAtEdKeY9876543210zyxwvuTSR"
OUTSIDE_NAME = "EVERYTHING_TEST_NOT_ALLOWED"
OUTSIDE_VALUE = "outside-the-allow-list-5c1e"
# A sentence from the server's instructions, written for the model, not for the operator.
INSTRUCTIONS_MARKER = "This response proves the client properly passed server instructions"
READ = "{action_type: read, risk: low, reversible: true, external_side_effect: false}"
POLICY = """\
version: 1
rules:
  - id: everything-tools
    description: the reference server's tools run as mapped; an unmapped one waits for a human
    effect: allow
    match: {namespace: mcp.everything}
"""
PRINCIPAL = Principal("ann", "agent-1", "ops")
FULL_CHAIN = ["tool.requested", "policy.decided", "execution.started", "execution.completed"]


@dataclass
class Everything:
    transport: str
    gateway: Gateway
    state_dir: Path
    command: list[str]
    url: str | None = None


class Calls:
    """Sequential call ids for one run."""

    def __init__(self, run_id: str) -> None:
        self.run_id = run_id
        self.count = 0

    def __call__(self, tool: str, **arguments: object) -> ToolCall:
        self.count += 1
        return ToolCall(f"c{self.count}", tool, arguments, self.run_id, PRINCIPAL)


def _server_block(transport: str, command: list[str], url: str | None) -> str:
    if transport == "http":
        return f"""\
    transport: http
    url: {json.dumps(url)}"""
    node, script = command
    return f"""\
    transport: stdio
    command: {json.dumps(node)}
    args: [{json.dumps(script)}, stdio]
    env: [OPENAI_API_KEY]"""


@pytest.fixture(scope="module", params=["stdio", "http"])
def everything(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Everything]:
    transport: str = request.param
    command = _node.node_command(_node.EVERYTHING)
    root = tmp_path_factory.mktemp(f"everything-{transport}")
    with ExitStack() as stack:
        url = None
        if transport == "http":
            port = _node.free_port()
            log = stack.enter_context((root / "server.log").open("wb"))
            env = {
                "PATH": os.environ.get("PATH", ""),
                "HOME": str(root),
                "PORT": str(port),
                "OPENAI_API_KEY": SECRET,
            }
            proc = subprocess.Popen(
                [*command, "streamableHttp"],
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=env,
            )  # fmt: skip
            stack.callback(_node.stop, proc)
            _node.wait_for_port(proc, port)
            url = f"http://127.0.0.1:{port}/mcp"
        config = root / "servers.yaml"
        config.write_text(
            f"""\
version: 1
servers:
  everything:
{_server_block(transport, command, url)}
    tools:
      echo: {READ}
      get-env: {READ}
""",
            encoding="utf-8",
        )
        policy = root / "policy.yaml"
        policy.write_text(POLICY, encoding="utf-8")
        with pytest.MonkeyPatch.context() as env_patch:
            # The stdio child may see OPENAI_API_KEY (allow-listed), never the other variable.
            env_patch.setenv("OPENAI_API_KEY", SECRET)
            env_patch.setenv(OUTSIDE_NAME, OUTSIDE_VALUE)
            gateway = Gateway(
                state_dir=root / "state",
                policy_path=policy,
                clock=ManualClock(),
                builtin=False,
                mcp_config=config,
            )
        stack.callback(gateway.close)  # runs before the HTTP server is stopped
        (source,) = gateway.mcp_sources
        assert source.status.state == "up", source.status.describe()
        yield Everything(transport, gateway, root / "state", command, url)


def _state_bytes(state_dir: Path) -> dict[str, bytes]:
    """Every file the gateway wrote (audit, approvals, budgets, their WAL and SHM files)."""
    return {
        str(path.relative_to(state_dir)): path.read_bytes()
        for path in sorted(state_dir.rglob("*"))
        if path.is_file()
    }


def _kinds(gateway: Gateway, run_id: str) -> list[str]:
    return [event.kind for event in gateway.audit.events(run_id)]


def test_a_mapped_read_tool_executes_through_the_firewall_and_is_audited(
    everything: Everything,
) -> None:
    gateway = everything.gateway
    calls = Calls(f"run-echo-{everything.transport}")
    result = gateway.firewall.call(calls("mcp.everything.echo", message="hello from proctor"))
    assert result.outcome == "executed", result.error
    assert result.output == "Echo: hello from proctor"
    assert result.decision is not None and result.decision.rule_ids == ("everything-tools",)
    events = gateway.audit.events(calls.run_id)
    assert [e.kind for e in events] == FULL_CHAIN
    assert events[2].data["source"] == "mcp.everything"
    assert events[3].data["output_digest"] == digest(result.output)
    assert gateway.audit.verify(calls.run_id).ok


def test_an_unmapped_tool_is_held_as_unmapped_and_never_executed(everything: Everything) -> None:
    gateway = everything.gateway
    descriptor = gateway.registry.get("mcp.everything.get-sum")
    assert descriptor is not None and descriptor.action_type == "unknown"
    calls = Calls(f"run-unmapped-{everything.transport}")
    result = gateway.firewall.call(calls("mcp.everything.get-sum", a=2, b=3))
    assert result.outcome == "held"
    assert result.reason == "unmapped_tool"
    assert result.output == ""
    assert result.approval_id is not None
    assert gateway.approvals.get(result.approval_id).status == "pending"
    kinds = _kinds(gateway, calls.run_id)
    assert kinds == ["tool.requested", "policy.decided", "approval.required"]
    assert "execution.started" not in kinds


def test_get_env_leaks_the_secret_to_the_caller_but_never_into_the_gateways_records(
    everything: Everything,
) -> None:
    gateway = everything.gateway
    calls = Calls(f"run-get-env-{everything.transport}")
    result = gateway.firewall.call(calls("mcp.everything.get-env"))
    assert result.outcome == "executed", result.error
    # The leak is real: the tool's answer carried the key (the firewall says it masked one),
    # and it is masked before it reaches the caller or the model.
    assert SECRET not in result.output
    assert json.loads(result.output)["OPENAI_API_KEY"].startswith("[REDACTED")
    events = gateway.audit.events(calls.run_id)
    assert [e.kind for e in events] == FULL_CHAIN
    completed = events[3].data
    assert completed["redaction"]["action"] == "masked" and completed["redaction"]["count"] >= 1
    assert completed["output_digest"] == digest(result.output)
    assert completed["output_chars"] == len(result.output)
    files = _state_bytes(everything.state_dir)
    assert "audit.sqlite" in files and "audit.sqlite-wal" in files
    audit_bytes = files["audit.sqlite"] + files["audit.sqlite-wal"]
    # The scan looks where the records are: this call's evidence is in these bytes...
    assert completed["output_digest"].encode() in audit_bytes
    # ...and the secret is in none of the files the gateway wrote.
    leaked = [name for name, data in files.items() if SECRET.encode() in data]
    assert leaked == []
    assert gateway.audit.verify(calls.run_id).ok


@pytest.mark.parametrize("everything", ["stdio"], indirect=True)
def test_a_variable_outside_the_env_allow_list_never_reaches_the_stdio_child(
    everything: Everything,
) -> None:
    assert os.environ.get(OUTSIDE_NAME) is None  # it was set only while the child started
    result = everything.gateway.firewall.call(Calls("run-allow-list")("mcp.everything.get-env"))
    assert result.outcome == "executed", result.error
    seen = json.loads(result.output)
    assert set(seen) == {"PATH", "HOME", "OPENAI_API_KEY"}
    assert OUTSIDE_NAME not in seen
    assert OUTSIDE_VALUE not in result.output


def test_a_secret_in_arguments_is_redacted_before_it_reaches_the_audit_log(
    everything: Everything,
) -> None:
    gateway = everything.gateway
    calls = Calls(f"run-argument-secret-{everything.transport}")
    message = f"deploy with key {ARGUMENT_SECRET}"
    result = gateway.firewall.call(calls("mcp.everything.echo", message=message))
    assert result.outcome == "executed", result.error
    # The server really received it: it echoed the key, which the firewall then masked.
    assert result.output.startswith("Echo: deploy with key [REDACTED")
    assert ARGUMENT_SECRET not in result.output
    completed = gateway.audit.events(calls.run_id)[3]
    assert completed.kind == "execution.completed" and completed.data["redaction"]["count"] >= 1
    requested = gateway.audit.events(calls.run_id)[0]
    assert requested.kind == "tool.requested"
    assert ARGUMENT_SECRET not in json.dumps(requested.data)
    assert "[REDACTED" in requested.data["arguments"]["message"]
    leaked = [
        name
        for name, data in _state_bytes(everything.state_dir).items()
        if ARGUMENT_SECRET.encode() in data
    ]
    assert leaked == []


async def _instructions_from(everything: Everything) -> str | None:
    """What the server tells a client that connects to it directly (the SDK's own client)."""
    if everything.url is not None:
        async with Client(everything.url) as client:
            return client.instructions
    node, script = everything.command
    params = StdioServerParameters(command=node, args=[script, "stdio"], env={})
    async with Client(stdio_client(params)) as client:
        return client.instructions


async def _published(gateway: Gateway) -> tuple[str | None, list[mcp_types.Tool]]:
    async with Client(build_mcp_server(gateway), mode="legacy") as client:
        return client.instructions, (await client.list_tools()).tools


def test_the_servers_model_aimed_instructions_are_surfaced_nowhere_by_proctor(
    everything: Everything,
) -> None:
    instructions = anyio.run(_instructions_from, everything)
    assert instructions is not None and INSTRUCTIONS_MARKER in instructions  # they are sent
    gateway = everything.gateway
    calls = Calls(f"run-instructions-{everything.transport}")
    assert gateway.firewall.call(calls("mcp.everything.echo", message="x")).outcome == "executed"
    marker = INSTRUCTIONS_MARKER.encode()
    # Not in what Proctor registered, not in anything it recorded...
    for descriptor in gateway.registry.descriptors():
        assert INSTRUCTIONS_MARKER not in descriptor.description
    assert [n for n, data in _state_bytes(everything.state_dir).items() if marker in data] == []
    # ...and not passed on to an agent that reaches the same tools through `proctor serve`.
    published_instructions, tools = anyio.run(_published, gateway)
    assert published_instructions == INSTRUCTIONS
    assert "mcp.everything.echo" in {tool.name for tool in tools}
    assert not [tool.name for tool in tools if INSTRUCTIONS_MARKER in (tool.description or "")]
