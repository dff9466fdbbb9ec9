"""A client for the MCP conformance suite, built on Proctor's own governed MCP client.

`conformance client --command "python -m stubs.mcp_demo.conformance_client" --scenario S`
runs this with the test server's URL as the last argument and the scenario's name in
`MCP_CONFORMANCE_SCENARIO`. It reaches the server the way a deployment would: a real `Gateway`
with a one-server MCP config (Streamable HTTP), a throwaway state directory and a policy that
allows the scenario's tools, mapped as low-risk reads; every call goes through the firewall.
Prints one JSON line; exits 0 when the server came up and every call the scenario expects
executed, 1 otherwise, 64 on bad usage.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from governance import Gateway
from governance.core import Principal, ToolCall

SCENARIO_ENV = "MCP_CONFORMANCE_SCENARIO"
SERVER = "conformance"
PRINCIPAL = Principal(actor="conformance", agent="conformance-client", team="ci")
READ = {"action_type": "read", "risk": "low", "reversible": True, "external_side_effect": False}
POLICY = """\
version: 1
rules:
  - id: conformance-reads
    description: the tools the scenario expects, mapped as reads
    effect: allow
    match: {namespace: mcp.conformance, action_type: read}
"""
# What each scenario's test server expects the client to call (MCP tool name, arguments).
SCENARIO_CALLS: Mapping[str, tuple[tuple[str, Mapping[str, Any]], ...]] = {
    "initialize": (),
    "tools_call": (("add_numbers", {"a": 2, "b": 3}),),
    "sse-retry": (("test_reconnection", {}),),
    "elicitation-sep1034-client-defaults": (("test_client_elicitation_defaults", {}),),
}
USAGE = 64


def _config(url: str, tools: Sequence[str]) -> str:
    server = {"transport": "http", "url": url, "tools": {name: READ for name in tools}}
    return json.dumps({"version": 1, "servers": {SERVER: server}})  # JSON is YAML


def run(url: str, scenario: str) -> dict[str, Any]:
    """Connect through a Gateway, list the tools, make the scenario's calls; a JSON-able report."""
    calls = SCENARIO_CALLS.get(scenario, ())
    with tempfile.TemporaryDirectory(prefix="proctor-conformance-") as tmp:
        root = Path(tmp)
        (root / "policy.yaml").write_text(POLICY, encoding="utf-8")
        (root / "mcp.yaml").write_text(_config(url, [name for name, _ in calls]), "utf-8")
        with Gateway(
            state_dir=root / "state",
            policy_path=root / "policy.yaml",
            builtin=False,
            audit_key_from_env=False,
            mcp_config=root / "mcp.yaml",
        ) as gateway:
            (source,) = gateway.mcp_sources
            report: dict[str, Any] = {
                "scenario": scenario,
                "status": source.status.describe(),
                "tools": sorted(gateway.registry.names()),
                "calls": [],
            }
            ok = source.status.state == "up"
            for number, (name, arguments) in enumerate(calls, start=1):
                call = ToolCall(
                    f"c{number}", f"mcp.{SERVER}.{name}", arguments, "conformance-1", PRINCIPAL
                )
                result = gateway.firewall.call(call)
                ok = ok and result.outcome == "executed"
                report["calls"].append(
                    {
                        "tool": call.tool,
                        "outcome": result.outcome,
                        "reason": result.reason,
                        "output": result.output,
                        "error": result.error,
                    }
                )
            report["ok"] = ok
            return report


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    scenario = os.environ.get(SCENARIO_ENV, "")
    if len(args) != 1 or not scenario:
        print(
            f"usage: {SCENARIO_ENV}=<scenario> python -m stubs.mcp_demo.conformance_client URL",
            file=sys.stderr,
        )
        return USAGE
    report = run(args[0], scenario)
    print(json.dumps(report, sort_keys=True))
    return 0 if report["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
