"""Secrets in what a tool returns: masked, withheld or let through before the model reads it.

Tool outputs and tool error texts are untrusted data that go to the model, so by default every
secret-shaped value in them is masked. A policy file can choose per tool (name or glob):

    outputs:
      secrets: mask        # the default for every tool: mask | block | allow
      tools:
        kb.search: allow   # let this tool's secrets through (they are its purpose)
        "mcp.*": block     # withhold the whole output when it holds a secret

When several entries match a tool the strictest wins (block > mask > allow), so their order
never matters; the default applies only when none matches. Pure: no I/O, no clock. The firewall
calls `screen_secrets` on every result a tool source returns, before it leaves the firewall,
and records what was done (never the secret) on the audit chain.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from fnmatch import fnmatchcase
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from governance.core._contracts import ToolResult
from governance.screening._redaction import redact_text

SecretsAction = Literal["mask", "block", "allow"]
_STRICTNESS: dict[SecretsAction, int] = {"allow": 0, "mask": 1, "block": 2}
_MARKER = "[REDACTED"
# What was done, as recorded on the audit chain.
_DONE: dict[SecretsAction, str] = {"mask": "masked", "block": "withheld", "allow": "allowed"}


class OutputsModel(BaseModel):
    """The policy file's `outputs:` section: what happens to secrets in tool results."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    secrets: SecretsAction = Field(
        "mask",
        description="For every tool no entry of `tools` matches: mask the secrets in its output "
        "and errors, block (withhold the whole text) or allow (pass it through).",
    )
    tools: dict[str, SecretsAction] = Field(
        default_factory=dict,
        description="Tool name or fnmatch glob ('mcp.docs.*') -> mask | block | allow. The "
        "strictest matching entry wins.",
    )


@dataclass(frozen=True, slots=True)
class OutputPolicy:
    """The compiled `outputs:` section. The default instance masks everything."""

    default: SecretsAction = "mask"
    tools: tuple[tuple[str, SecretsAction], ...] = ()

    @classmethod
    def from_model(cls, model: OutputsModel | None) -> OutputPolicy:
        if model is None:
            return cls()
        return cls(default=model.secrets, tools=tuple(sorted(model.tools.items())))

    def action_for(self, tool: str) -> SecretsAction:
        matched = [action for pattern, action in self.tools if fnmatchcase(tool, pattern)]
        if not matched:
            return self.default
        return max(matched, key=_STRICTNESS.__getitem__)


def _masked(text: str) -> tuple[str, int]:
    """`text` with its secrets masked, and how many were."""
    masked = redact_text(text)
    if masked == text:
        return text, 0
    return masked, max(1, masked.count(_MARKER) - text.count(_MARKER))


def withheld_notice(tool: str, count: int, channel: str) -> str:
    plural = "s" if count != 1 else ""
    return (
        f"[proctor: the {channel} of {tool} was withheld: it contained {count} secret{plural} "
        "and the policy blocks secrets in this tool's results]"
    )


def screen_secrets(
    result: ToolResult, policy: OutputPolicy
) -> tuple[ToolResult, dict[str, Any] | None]:
    """`result` as the model may see it, and the audit record of what was done (None when the
    output and error held no secret). The record holds an action and a count, never a secret."""
    output, in_output = _masked(result.output)
    error, in_error = _masked(result.error) if result.error is not None else (None, 0)
    count = in_output + in_error
    if count == 0:
        return result, None
    action = policy.action_for(result.tool)
    record = {"policy": action, "action": _DONE[action], "count": count}
    if action == "allow":
        return result, record
    if action == "block":
        if in_output:
            output = withheld_notice(result.tool, in_output, "output")
        if in_error:
            error = withheld_notice(result.tool, in_error, "error")
        return replace(result, output=output, error=error, truncated=False), record
    return replace(result, output=output, error=error), record
