"""`proctor policy check|explain`: validate a policy file, or show how it decides one call.

Nothing here executes a tool: `explain` only evaluates the policy on the facts it is given.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from tabulate import tabulate

from governance import (
    ActionType,
    PolicyContext,
    Principal,
    Risk,
    RunUsage,
    ToolDescriptor,
    digest,
)
from governance.policy import Explanation, Policy, check_tool_names, load_policy
from harness._policy_explain import RefusedBeforeRules, explain_call

POLICY_FILE = click.Path(exists=True, dir_okay=False, path_type=Path)


class _DescriptorFacts(BaseModel):
    """What `--descriptor` may say about a tool; the name comes from `--tool`."""

    model_config = ConfigDict(extra="forbid", strict=True)

    action_type: ActionType
    risk: Risk
    source: str = "cli"
    description: str = ""
    input_schema: dict[str, Any] = Field(default_factory=dict)
    reversible: bool = True
    external_side_effect: bool = False
    idempotent: bool = False


def _json_object(option: str, text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise click.BadParameter(f"not valid JSON: {exc}", param_hint=option) from None
    if not isinstance(value, dict):
        raise click.BadParameter("must be a JSON object ({...})", param_hint=option)
    return value


def _descriptor_from_option(tool: str, text: str) -> ToolDescriptor:
    try:
        facts = _DescriptorFacts.model_validate(_json_object("--descriptor", text))
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or '<descriptor>'}: {e['msg']}"
            for e in exc.errors(include_url=False)
        )
        raise click.BadParameter(problems, param_hint="--descriptor") from None
    return ToolDescriptor(name=tool, **facts.model_dump())


@click.group("policy")
def policy_group() -> None:
    """Validate policy files and explain their decisions."""


def _rule_table(policy: Policy) -> str:
    rows = [
        [
            rule.id,
            rule.effect,
            "yes" if rule.enabled else "no",
            rule.match.describe(),
            "; ".join(c.describe() for c in rule.when) or "-",
        ]
        for rule in policy.rules
    ]
    return tabulate(rows, headers=["id", "effect", "enabled", "match", "when"])


@policy_group.command("check")
@click.argument("file", type=POLICY_FILE)
@click.option(
    "--mcp-config",
    "mcp_config",
    type=POLICY_FILE,
    default=None,
    help="Also know these MCP servers' tools: read from the config's lock when it stands for "
    "them, else the servers are started to list them (as `proctor check` does).",
)
def check_command(file: Path, mcp_config: Path | None) -> None:
    """Validate FILE and list its rules. A bad file exits 3 and names the line to fix.

    Every tool name, glob and namespace in a rule's `match` must select a known tool: the
    built-in tools, plus the MCP servers' tools of --mcp-config. MCP tools are named
    `mcp.<server>.<tool>` and are known only with --mcp-config: without it, a name that selects
    no built-in tool but may select an MCP tool (`mcp.demo`, `*.echo`) is not checked, and a
    note says so.
    """
    if mcp_config is None:
        from governance.tools import builtin_registry  # the tool modules, not the MCP ones

        registry = builtin_registry()
    else:
        from harness._suite_check import mcp_listing

        registry, started = mcp_listing(mcp_config.resolve())
        if started is not None:
            click.echo(f"note: {started}", err=True)
    known = [descriptor.name for descriptor in registry.descriptors()]
    policy, notes = check_tool_names(file, known, mcp_known=mcp_config is not None)
    for note in notes:
        click.echo(f"note: {file}: {note}", err=True)
    click.echo(_rule_table(policy))
    count = len(policy.rules)
    click.echo(f"OK: {count} rule{'s' if count != 1 else ''}, digest {policy.digest}")


def _print_explanation(context: PolicyContext, result: Explanation) -> None:
    decision = result.decision
    facts = (
        f"action_type={context.action_type} risk={context.risk} impact={context.impact}"
        if context.known
        else "not registered"
    )
    click.echo(f"tool:      {context.tool} ({facts})")
    click.echo(f"decision:  {decision.effect}")
    click.echo(f"reason:    {decision.reason}")
    click.echo(f"rules:     {', '.join(decision.rule_ids) or '-'}")
    click.echo(f"matched:   {', '.join(result.matched_rule_ids) or '-'}")
    click.echo(f"message:   {decision.message}")
    click.echo(f"policy:    {decision.policy_digest}")
    rows = [[o.rule_id, o.effect, o.status, o.failed_arg or o.error or ""] for o in result.outcomes]
    click.echo("")
    click.echo(tabulate(rows, headers=["rule", "effect", "status", "detail"]))
    click.echo("(nothing was executed)")


def _print_rejection(refused: RefusedBeforeRules) -> None:
    click.echo(f"tool:      {refused.tool}")
    click.echo(f"decision:  {refused.effect} (before any rule)")
    click.echo(f"reason:    {refused.reason}")
    click.echo(f"message:   {refused.message}")
    click.echo("(nothing was executed)")


@policy_group.command("explain")
@click.argument("file", type=POLICY_FILE)
@click.option("--tool", "tool", required=True, help="Tool name, e.g. fs.read.")
@click.option("--args", "args_json", default="{}", show_default=True, help="Arguments (JSON).")
@click.option("--actor", default="cli", show_default=True, help="Who proposes the call.")
@click.option("--agent", default="cli", show_default=True, help="Which agent proposes it.")
@click.option("--team", default="cli", show_default=True, help="The team owning the agent.")
@click.option("--tokens", type=click.IntRange(min=0), default=0, help="Tokens the run used.")
@click.option("--tainted", is_flag=True, help="The run has taken in untrusted content.")
@click.option(
    "--descriptor",
    "descriptor_json",
    default=None,
    help='Tool facts as JSON, e.g. \'{"action_type": "read", "risk": "low"}\' (overrides '
    "the registry).",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def explain_command(
    file: Path,
    tool: str,
    args_json: str,
    actor: str,
    agent: str,
    team: str,
    tokens: int,
    tainted: bool,
    descriptor_json: str | None,
    as_json: bool,
) -> None:
    """Show how FILE decides one proposed call, rule by rule. Executes nothing."""
    arguments = _json_object("--args", args_json)
    policy = load_policy(file)
    if descriptor_json is not None:
        descriptor: ToolDescriptor | None = _descriptor_from_option(tool, descriptor_json)
        registry_digest = digest([descriptor.surface()] if descriptor else [])
    else:
        from governance.tools import builtin_registry  # the tool modules: `explain` only

        registry = builtin_registry()
        descriptor = registry.get(tool)
        registry_digest = registry.digest
    outcome = explain_call(
        policy,
        tool,
        arguments,
        descriptor=descriptor,
        registry_digest=registry_digest,
        principal=Principal(actor=actor, agent=agent, team=team),
        usage=RunUsage(tokens_used=tokens, tainted=tainted),
    )
    if as_json:
        click.echo(json.dumps(outcome.as_json(), indent=2, sort_keys=True))
    elif isinstance(outcome, RefusedBeforeRules):
        _print_rejection(outcome)
    else:
        _print_explanation(outcome.context, outcome.result)
