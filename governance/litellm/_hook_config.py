"""LiteLLM settings that would undo the guardrail, refused when the proxy builds it.

What they do in LiteLLM 1.110 (proxy/utils.py, proxy/guardrails/guardrail_registry.py):
- `run_in_parallel: true`: the guardrail runs concurrently with the others of its hook and
  "any modified response they return is discarded" (block-only), so the judged arguments
  would not be the executed ones.
- `scan_raw_request: true`: the pre-call hook judges a copy of the request and its returned
  data is discarded: the same.
- a `mode` list without `pre_mcp_call`, or a tag-based mode (`tags: {...}`, which LiteLLM
  resolves per request): Proctor must be asked before every MCP call, whatever the tags.
Both flags are set by LiteLLM after the constructor runs, so they are checked where they are
set (a property) as well as at construction.
"""

from __future__ import annotations

from typing import Any, Final

from governance.core._errors import ConfigError

PRE_MCP_CALL: Final = "pre_mcp_call"
POST_CALL: Final = "post_call"
WHERE: Final = "the guardrail's litellm_params in the LiteLLM config"
_FLAGS: Final = {
    "run_in_parallel": "LiteLLM discards what a parallel guardrail returns, so the arguments "
    "Proctor judged would not be the ones executed",
    "scan_raw_request": "LiteLLM judges a copy of the request and discards what the guardrail "
    "returns, so the arguments Proctor judged would not be the ones executed",
}


def hook_names(event_hook: Any) -> frozenset[str]:
    """The modes a plain `mode` (a name or a list of names) configures; empty for any other."""
    hooks = event_hook if isinstance(event_hook, (list, tuple)) else [event_hook]
    names = set()
    for hook in hooks:
        value = getattr(hook, "value", hook)
        if isinstance(value, str):
            names.add(value)
    return frozenset(names)


def mode_error(event_hook: Any) -> str | None:
    """Why this `mode` would let an MCP call run without Proctor's decision, or None."""
    if not isinstance(event_hook, (str, list, tuple)) and not isinstance(
        getattr(event_hook, "value", None), str
    ):
        return (
            f"mode {event_hook!r} is not a list of modes (a tag-based mode decides per request "
            f"whether the guardrail runs); write mode: [{PRE_MCP_CALL}, {POST_CALL}]"
        )
    if PRE_MCP_CALL not in hook_names(event_hook):
        return (
            f"mode {sorted(hook_names(event_hook))} leaves out {PRE_MCP_CALL}, so MCP tool calls "
            f"would run without Proctor's decision; write mode: [{PRE_MCP_CALL}, {POST_CALL}]"
        )
    return None


def flag_error(name: str, value: Any) -> str | None:
    if value:
        return f"{name}: true is not supported by the Proctor guardrail: {_FLAGS[name]}; remove it"
    return None


class ConfigGuard:
    """Mixed into the guardrail: `run_in_parallel` and `scan_raw_request` refuse `true`."""

    @staticmethod
    def _set_flag(name: str, value: Any) -> None:
        error = flag_error(name, value)
        if error is not None:
            raise ConfigError(WHERE, None, error)

    @property
    def run_in_parallel(self) -> bool:
        return False

    @run_in_parallel.setter
    def run_in_parallel(self, value: Any) -> None:
        self._set_flag("run_in_parallel", value)

    @property
    def scan_raw_request(self) -> bool:
        return False

    @scan_raw_request.setter
    def scan_raw_request(self, value: Any) -> None:
        self._set_flag("scan_raw_request", value)

    def check_litellm_settings(self) -> None:
        """Raises ConfigError when the mode would skip Proctor's decision on an MCP call."""
        error = mode_error(getattr(self, "event_hook", None))
        if error is not None:
            raise ConfigError(WHERE, None, error)
