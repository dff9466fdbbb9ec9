"""Every command of the group, one line each: where it lives and the line `proctor --help` shows.

A command's module is imported only when that command runs (or its own `--help` is asked for), so
`proctor --help` and `proctor check` never pay for the agent loop, the OpenAI client, the MCP SDK
or the report writers. The summary is the first paragraph of the command's docstring; a test
fails when the two drift apart.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class LazyCommand:
    """A command (or group) to import on first use: `module.attribute`."""

    module: str
    attribute: str
    summary: str


COMMANDS: dict[str, LazyCommand] = {
    "approvals": LazyCommand(
        "harness.cli._approvals",
        "approvals",
        "Review calls held for human approval, then resume the runs that wait on them.",
    ),
    "ask": LazyCommand(
        "harness.cli._ask",
        "ask",
        "Run REQUEST through the governed agent loop once and store the run.",
    ),
    "audit": LazyCommand(
        "harness.cli._audit",
        "audit",
        "Verify and read Proctor's hash-chained audit log (key: PROCTOR_AUDIT_KEY).",
    ),
    "baseline": LazyCommand(
        "harness.cli._baseline_cmd",
        "baseline_group",
        "The recorded baseline the gate compares against.",
    ),
    "budgets": LazyCommand(
        "harness.cli._budgets",
        "budgets",
        "Destructive-action budgets: status, and the deliberate two-person reset.",
    ),
    "check": LazyCommand(
        "harness.cli._check",
        "check_command",
        "Validate every scenario against its schema and the registry/policy it runs with.",
    ),
    "console": LazyCommand(
        "harness.cli._console",
        "console_command",
        "Serve the Proctor console: agent, approvals, policies, budgets, audit, evaluations.",
    ),
    "demo": LazyCommand(
        "harness.cli._demo",
        "demo",
        "Run four calls through the firewall with the shipped policy, then verify the audit chain.",
    ),
    "gate": LazyCommand(
        "harness.cli._score",
        "gate_command",
        "Gate the run stored in RUN against a baseline: exit 2 on any regression or changed "
        "scenario inputs.",
    ),
    "import": LazyCommand(
        "harness.cli._import_cmd",
        "import_group",
        "Write scenario files from a public benchmark's task suites (AgentDojo).",
    ),
    "merge": LazyCommand(
        "harness.cli._merge_cmd",
        "merge_command",
        "Merge the report directories of `proctor run --shard I/N` (all N), then score and gate.",
    ),
    "mcp": LazyCommand(
        "harness.cli._mcp",
        "mcp_group",
        "MCP servers as governed tool sources: inspect them, pin their tool definitions.",
    ),
    "mutate": LazyCommand(
        "harness.cli._mutate",
        "mutate_command",
        "Weaken each rule and budget in turn and run the suite against every mutant.",
    ),
    "policy": LazyCommand(
        "harness.cli._policy", "policy_group", "Validate policy files and explain their decisions."
    ),
    "run": LazyCommand(
        "harness.cli._run_cmd",
        "run_command",
        "Run the scenario suite through the governed loop and gate it against the baseline.",
    ),
    "score": LazyCommand(
        "harness.cli._score",
        "score_command",
        "Re-score the traces stored in RUN (a reports/<run> directory) against the scenarios.",
    ),
    "serve": LazyCommand(
        "harness.cli._serve",
        "serve",
        "Serve the governed tools to any MCP client (Claude Desktop, Cursor, ...).",
    ),
    "smoke": LazyCommand(
        "harness.cli._smoke",
        "smoke",
        "Prove the live provider path: real HTTP, tool-name encoding, governance, audit.",
    ),
    "store": LazyCommand(
        "harness.cli._store",
        "store_group",
        "The shared PostgreSQL store: apply its schema migrations, show its version.",
    ),
    "stub": LazyCommand(
        "harness.cli._stub",
        "stub_command",
        "Serve the vendor stub (POST /v1/chat/completions, GET /v1/models) until Ctrl-C.",
    ),
    "tools": LazyCommand(
        "harness.cli._tools",
        "tools_group",
        "The tools scenarios and agents can call, with what the policy says about each.",
    ),
}
