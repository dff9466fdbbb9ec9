"""A call held through `proctor serve` (no stored run): `approvals approve` names what runs it
(the MCP tool `proctor.resume_approved`), and `approvals list` shows it executed once it ran."""

from __future__ import annotations

import json
import shutil
from importlib import resources
from pathlib import Path
from typing import Any

import anyio
from click.testing import CliRunner
from mcp import Client

from governance import RESUME_TOOL, Gateway, build_mcp_server
from harness.cli._app import cli

SHIPPED_POLICY = Path(str(resources.files("governance") / "data" / "default_policy.yaml"))
EMAIL = {"to": "ops@example.com", "subject": "hi", "body": "hello"}


def _call(server: Any, name: str, arguments: dict[str, Any]) -> Any:
    async def main() -> Any:
        async with Client(server) as client:
            return await client.call_tool(name, arguments)

    return anyio.run(main)


def _proctor(state: Path, policy: Path, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(
        cli, [*args[:2], "--state-dir", str(state), "--policy", str(policy), *args[2:]]
    )
    return result.exit_code, result.output


def test_a_served_held_call_is_resumed_through_the_mcp_tool_and_then_reads_executed(
    tmp_path: Path,
) -> None:
    state, policy = tmp_path / "state", tmp_path / "policy.yaml"
    shutil.copyfile(SHIPPED_POLICY, policy)
    with Gateway(state_dir=state, policy_path=policy) as gateway:
        server = build_mcp_server(gateway)
        held = _call(server, "email.send", EMAIL).structured_content
        approval_id = held["approval_id"]

        approve = ("approvals", "approve", approval_id, "--reviewer", "rita")
        code, said = _proctor(state, policy, *approve)
        assert code == 0, said
        assert "proctor approvals resume" not in said  # it fails: there is no stored run
        assert f"{RESUME_TOOL} with {json.dumps({'approval_id': approval_id})}" in said
        assert "run mcp-1 is not a stored run" in said

        code, listed = _proctor(state, policy, "approvals", "list", "--json")
        assert [(r["status"], r["state"]) for r in json.loads(listed)] == [("approved", "approved")]

        assert _call(server, RESUME_TOOL, {"approval_id": approval_id}).is_error is False

    code, listed = _proctor(state, policy, "approvals", "list", "--json")
    assert [(r["status"], r["state"]) for r in json.loads(listed)] == [("approved", "executed")]
    code, table = _proctor(state, policy, "approvals", "list")
    row = next(line for line in table.splitlines() if line.startswith(approval_id))
    assert row.split()[1] == "executed"
