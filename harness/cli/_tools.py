"""`proctor tools list`: every tool a scenario or agent can name, and what the policy says.

Read-only: nothing is executed. The built-in tools come from their registry (bound to an empty
scratch workspace); MCP servers' tools from `--mcp-config`, read from its lock when the lock
stands for the servers, else by starting, listing and stopping them (as `proctor check` does).
What the policy says is the firewall's own answer (`governance.decide_call`, built from the
steps the firewall decides every call with: arguments prepared as a real call's are — schema
defaults, canonical paths — then quarantine, unknown tools, the policy) for a sample call: no
arguments but the required ones without a default, each a fixed placeholder
(`sample_arguments`); and the rules the policy's index files under the tool's name (exact name,
namespace or glob), each with its conditions.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import click
from tabulate import tabulate

from governance import Principal, ToolCall, ToolDescriptor, decide_call
from governance.policy import Policy, load_policy
from harness.cli._options import shipped_policy_path

POLICY_FILE = click.Path(exists=True, dir_okay=False, path_type=Path)


@click.group("tools")
def tools_group() -> None:
    """The tools scenarios and agents can call, with what the policy says about each."""


@tools_group.command("list")
@click.option(
    "--policy",
    "policy_path",
    type=POLICY_FILE,
    default=None,
    help="Policy file [default: the shipped policy].",
)
@click.option(
    "--mcp-config",
    "mcp_config",
    type=POLICY_FILE,
    default=None,
    help="Also list these MCP servers' tools (from the lock when it stands for them).",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON array.")
def list_command(policy_path: Path | None, mcp_config: Path | None, as_json: bool) -> None:
    """List every tool with its arguments, action type, risk and what the policy says.

    `decision` is what the firewall decides for a sample call: no arguments but the required
    ones without a default, each a fixed placeholder (shown; "sample", 1, ...), after the
    firewall fills the schema's defaults (`fs.list` means `path: "."`). Placeholders are not
    checked against the schema. `rules` are the enabled rules whose name selectors (tool name,
    namespace, glob) select the tool, each with its effect, its other selectors and its
    conditions. Executes nothing.
    """
    from harness._suite_check import builtin_registry, mcp_registry

    policy = load_policy(policy_path or shipped_policy_path())
    registry = builtin_registry() if mcp_config is None else mcp_registry(mcp_config.resolve())
    rows = [tool_facts(d, policy, registry.digest) for d in registry.descriptors()]
    rows.sort(key=lambda row: str(row["name"]))
    if as_json:
        click.echo(json.dumps(rows, indent=2, sort_keys=True))
        return
    table = [
        [
            row["name"],
            _arguments_cell(row["arguments"]),
            row["action_type"],
            row["risk"],
            f"{row['decision']} ({row['reason']})"
            + (f"\n{_sample_cell(row['sample_arguments'])}" if row["sample_arguments"] else ""),
            "\n".join(_rule_cell(rule) for rule in row["rules"]) or "-",
        ]
        for row in rows
    ]
    headers = ["tool", "arguments (* required)", "action", "risk", "sample call", "rules"]
    click.echo(tabulate(table, headers=headers, tablefmt="simple"))
    shown = policy_path or "the shipped policy"
    click.echo(f"\n{len(rows)} tools · policy {shown} ({policy.digest})")


def tool_facts(descriptor: ToolDescriptor, policy: Policy, registry_digest: str) -> dict[str, Any]:
    """One tool as `tools list` shows it (the JSON form)."""
    sample = sample_arguments(descriptor.input_schema)
    call = ToolCall(
        call_id="c1",
        tool=descriptor.name,
        arguments=sample,
        run_id="tools-list",
        principal=Principal(actor="cli", agent="cli", team="cli"),
    )
    decision = decide_call(call, descriptor, policy, registry_digest=registry_digest)
    return {
        "name": descriptor.name,
        "source": descriptor.source,
        "description": descriptor.description,
        "arguments": _arguments(descriptor.input_schema),
        "action_type": descriptor.action_type,
        "risk": descriptor.risk,
        "impact": descriptor.impact,
        "decision": decision.effect,
        "reason": decision.reason,
        "decided_by": list(decision.rule_ids),
        "sample_arguments": sample,
        "rules": [
            {
                "id": candidate.rule.id,
                "effect": candidate.rule.effect,
                "match": candidate.rule.match.describe(),
                "when": [condition.describe() for condition in candidate.rule.when],
                "by_name": descriptor.name in (candidate.rule.match.tool or ()),
            }
            for candidate in policy.index.candidates(descriptor.name)
        ],
    }


# A required argument's placeholder by JSON type when its schema offers no example, const or enum.
_PLACEHOLDERS: dict[str, Any] = {
    "string": "sample",
    "integer": 1,
    "number": 1,
    "boolean": False,
    "array": [],
    "object": {},
    "null": None,
}


def sample_arguments(schema: Mapping[str, Any]) -> dict[str, Any]:
    """The arguments of the call `tools list` decides: each required argument without a
    default, filled by its first example, its const, its first enum value or a placeholder of
    its type; nothing else (the firewall fills defaults itself)."""
    properties = schema.get("properties")
    required = schema.get("required")
    if not isinstance(properties, Mapping) or not isinstance(required, list):
        return {}
    sample: dict[str, Any] = {}
    for name in required:
        spec = properties.get(name) if isinstance(name, str) else None
        if isinstance(spec, Mapping) and "default" in spec:
            continue
        sample[name] = _placeholder(spec)
    return sample


def _placeholder(spec: object) -> Any:
    if not isinstance(spec, Mapping):
        return "sample"
    examples = spec.get("examples")
    if isinstance(examples, list) and examples:
        return examples[0]
    if "const" in spec:
        return spec["const"]
    enum = spec.get("enum")
    if isinstance(enum, list) and enum:
        return enum[0]
    kind = spec.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    return _PLACEHOLDERS.get(kind, "sample") if isinstance(kind, str) else "sample"


def _sample_cell(sample: Mapping[str, Any]) -> str:
    return "for " + json.dumps(sample, sort_keys=True)


def _arguments(schema: Mapping[str, Any]) -> list[dict[str, Any]]:
    properties = schema.get("properties")
    if not isinstance(properties, Mapping):
        return []
    required = schema.get("required")
    needed = set(required) if isinstance(required, list) else set()
    return [
        {
            "name": name,
            "type": _type_of(spec),
            "required": name in needed,
        }
        for name, spec in properties.items()
    ]


def _type_of(spec: object) -> str:
    if not isinstance(spec, Mapping):
        return "any"
    kind = spec.get("type")
    if isinstance(kind, str):
        return kind
    if isinstance(kind, list):
        return "|".join(str(k) for k in kind)
    options = spec.get("anyOf") or spec.get("oneOf")
    if isinstance(options, list):
        return "|".join(_type_of(option) for option in options)
    if "enum" in spec:
        return "enum"
    return "any"


def _arguments_cell(arguments: list[dict[str, Any]]) -> str:
    return (
        ", ".join(f"{a['name']}{'*' if a['required'] else ''}: {a['type']}" for a in arguments)
        or "-"
    )


def _rule_cell(rule: Mapping[str, Any]) -> str:
    when = f" when {'; '.join(rule['when'])}" if rule["when"] else ""
    also = "" if rule["by_name"] else f" if {rule['match']}"
    return f"{rule['id']}: {rule['effect']}{also}{when}"
