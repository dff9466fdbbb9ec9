"""What `proctor policy check` finds in a policy, found in text not yet saved, as a list.

The checks are governance's own (`parse_policy`, then `check_policy_tool_names` against the
gateway's tool names); this module only sorts what they report into problems an editor can mark
at their lines. A PolicyError carries its problems in one message: the first one (its `line`
and `column`), then up to nine more as `PATH:LINE: message` lines, then a count
(governance.config `first_and_rest`), which is split here on the path it was given.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

from governance import PolicyError
from governance.config import load_yaml_with_lines
from governance.policy import Policy, check_policy_tool_names, parse_policy

ProblemKind = Literal["yaml", "schema", "contract"]


@dataclass(frozen=True, slots=True)
class Problem:
    """One thing to fix, at a 1-based line (None: the whole file) and column when known."""

    line: int | None
    message: str
    kind: ProblemKind
    column: int | None = None

    def as_json(self) -> dict[str, Any]:
        return {"line": self.line, "column": self.column, "message": self.message,
                "kind": self.kind}  # fmt: skip


@dataclass(frozen=True, slots=True)
class Validation:
    """The verdict on one text: usable (`problems` empty) or not, and what was not judged."""

    problems: tuple[Problem, ...] = ()
    notes: tuple[str, ...] = ()  # MCP selectors left unjudged (no MCP tool names known)
    policy: Policy | None = field(default=None, compare=False)
    empty: bool = False  # nothing but comments and blanks: never saved

    @property
    def ok(self) -> bool:
        return not self.problems

    def as_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "problems": [problem.as_json() for problem in self.problems],
            "notes": list(self.notes),
            "rules": len(self.policy.rules) if self.policy is not None else None,
            "policy_digest": self.policy.digest if self.policy is not None else None,
        }


def split_error(error: PolicyError, kind: ProblemKind) -> list[Problem]:
    """The problems one PolicyError reports, each at its own line."""
    shown = error.path or "<string>"
    pieces = re.split(rf"\n{re.escape(shown)}:(\d+): ", error.message)
    found = [Problem(error.line, pieces[0], kind, error.column)]
    for at in range(1, len(pieces), 2):
        message, _, beyond = pieces[at + 1].partition("\n... and ")
        found.append(Problem(int(pieces[at]), message, kind))
        if beyond:  # the count of problems beyond the ten shown: for the whole file
            found.append(Problem(None, f"... and {beyond}", kind))
    return found


def validate_text(
    text: str, known_tools: Iterable[str], *, mcp_known: bool, shown: str
) -> Validation:
    """Run `proctor policy check`'s checks on `text` as if it were the file `shown`."""
    try:
        policy = parse_policy(text, shown)
    except PolicyError as error:
        return _unparsed(text, error, shown)
    try:
        notes = check_policy_tool_names(policy, text, known_tools, mcp_known=mcp_known)
    except PolicyError as error:
        return Validation(tuple(split_error(error, "contract")), policy=policy)
    return Validation(notes=tuple(notes), policy=policy)


def _unparsed(text: str, error: PolicyError, shown: str) -> Validation:
    """A text `parse_policy` refused: a YAML problem when the YAML alone fails, else schema."""
    try:
        data, _ = load_yaml_with_lines(text, shown, PolicyError, subject="policy")
    except PolicyError:
        return Validation(tuple(split_error(error, "yaml")))
    return Validation(tuple(split_error(error, "schema")), empty=data is None)
