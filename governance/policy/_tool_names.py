"""Rules whose `match` names no known tool: a misspelt name silently selects nothing.

`check_tool_names` reads a policy file once (`check_policy_tool_names` takes text already parsed,
an editor's unsaved buffer) and raises PolicyError (file, line of the name) when an exact tool
name is unknown, or when a glob or namespace selects no known tool. Names
are judged exactly as the rule index judges them (`_index._names_hold`), so "selects" here
means what the firewall means.

MCP tools are all named `mcp.<server>.<tool>`: without their names (`mcp_known=False`) a
selector that selects no built-in tool but may select an MCP tool (`mcp.demo`, `*.echo`)
cannot be judged, and is returned as a note instead of failing: a policy written for MCP
servers still passes a plain check, while a misspelt built-in name (`orders.lookp`) fails.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from governance.config._problems import did_you_mean, first_and_rest
from governance.config._yaml_lines import Loc, load_yaml_with_lines
from governance.core._errors import PolicyError
from governance.policy._compile import Policy
from governance.policy._index import _exact, _names_hold, _namespace
from governance.policy._load import _decode, _read, parse_policy
from governance.policy._rules import Match, Rule

MCP_PREFIX = "mcp."  # every MCP tool is `mcp.<server>.<tool>` (governance.mcp mapping)


@dataclass(frozen=True, slots=True)
class _Finding:
    loc: Loc
    message: str


def _may_name_mcp(pattern: str) -> bool:
    """True when `pattern` may select an MCP tool (or namespace): its literal start, up to
    the first wildcard, agrees with `mcp.` (`mcp.demo`, `mcp`, `m*`, `*.echo`)."""
    literal = re.split(r"[*?\[]", pattern, maxsplit=1)[0]
    return literal.startswith(MCP_PREFIX) or MCP_PREFIX.startswith(literal)


def _rule_findings(
    position: int, rule: Rule, known: tuple[str, ...], mcp_known: bool
) -> tuple[list[_Finding], list[tuple[str, str]]]:
    where: Loc = ("rules", position, "match")
    findings: list[_Finding] = []
    notes: list[tuple[str, str]] = []  # (field, pattern) left unjudged
    namespaces = {_namespace(tool) for tool in known}
    for field in ("tool", "namespace"):
        patterns: tuple[str, ...] = getattr(rule.match, field) or ()
        for n, pattern in enumerate(patterns):
            selector = Match(tool=(pattern,)) if field == "tool" else Match(namespace=(pattern,))
            if any(_names_hold(selector, tool, _namespace(tool)) for tool in known):
                continue
            if not mcp_known and _may_name_mcp(pattern):
                notes.append((field, pattern))  # judged only with the MCP tools' names
                continue
            choices = known if field == "tool" else namespaces
            if field == "tool" and _exact((pattern,)):
                problem = "is not a known tool"
            else:
                problem = "matches no known tool"
            hint = did_you_mean(pattern, choices)
            findings.append(
                _Finding(
                    (*where, field, n) if len(patterns) > 1 else (*where, field),
                    f"rule {rule.id}: {field} {pattern!r} {problem}{hint}",
                )
            )
    # Each name selects a tool, but `tool` and `namespace` together may select none.
    both = rule.match.tool is not None and rule.match.namespace is not None
    if both and not findings and not notes:
        if not any(_names_hold(rule.match, tool, _namespace(tool)) for tool in known):
            findings.append(
                _Finding(
                    (*where, "tool"),
                    f"rule {rule.id}: tool and namespace together match no known tool "
                    f"({rule.match.describe()})",
                )
            )
    return findings, notes


def tool_name_problems(
    policy: Policy, known_tools: Iterable[str], *, mcp_known: bool
) -> tuple[list[tuple[int, str, Loc]], list[str]]:
    """(per rule: position, message, where in the file; notes on selectors not judged)."""
    known = tuple(sorted(set(known_tools)))
    problems: list[tuple[int, str, Loc]] = []
    skipped: dict[tuple[str, str], list[str]] = {}
    for position, rule in enumerate(policy.rules):
        found, unjudged = _rule_findings(position, rule, known, mcp_known)
        problems.extend((position, f.message, f.loc) for f in found)
        for key in unjudged:
            skipped.setdefault(key, []).append(rule.id)
    notes = [
        f"{field} {pattern!r} (rule{'s' if len(ids) > 1 else ''} {', '.join(ids)}) names MCP "
        "tools: not checked without --mcp-config FILE"
        for (field, pattern), ids in skipped.items()
    ]
    return problems, notes


def check_tool_names(
    path: str | Path, known_tools: Iterable[str], *, mcp_known: bool
) -> tuple[Policy, list[str]]:
    """Load the policy at `path` and check that every rule's names select a known tool.

    Raises PolicyError naming the file and the line of the first bad name (and the others);
    returns the policy and notes on MCP selectors that were not judged (`mcp_known=False`).
    """
    shown = str(path)
    _, raw = _read(Path(path))
    text = _decode(raw, shown)
    policy = parse_policy(text, shown)
    return policy, check_policy_tool_names(policy, text, known_tools, mcp_known=mcp_known)


def check_policy_tool_names(
    policy: Policy, text: str, known_tools: Iterable[str], *, mcp_known: bool
) -> list[str]:
    """`check_tool_names` for a policy already parsed from `text` (an editor's unsaved text):
    the notes, or PolicyError naming `policy.path` and the line of each bad name."""
    problems, notes = tool_name_problems(policy, known_tools, mcp_known=mcp_known)
    if problems:
        shown = policy.path or "<string>"
        _, lines = load_yaml_with_lines(text, shown, PolicyError, subject="policy")
        found = [(_line(lines, loc), message) for _, message, loc in problems]
        raise PolicyError(shown, *first_and_rest(shown, found))
    return notes


def _line(lines: dict[Loc, int], loc: Loc) -> int:
    while loc and loc not in lines:
        loc = loc[:-1]
    return lines.get(loc, 1)
