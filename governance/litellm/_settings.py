"""The guardrail's settings: the `proctor_*` keys of its LiteLLM `litellm_params`, then the
environment. Pure: no LiteLLM, no stores. Checked once, when the proxy builds the guardrail.

LiteLLM hands a custom guardrail every non-empty field of its `litellm_params` model (dozens of
other guardrails' defaults among them), so only keys that start with `proctor_` are read here,
and an unknown `proctor_` key is an error: a typo must not leave a setting at its default.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictStr, ValidationError

from governance.core._contracts import ActionType, Risk
from governance.core._errors import ConfigError
from governance.mcp._config import ToolMapping

PREFIX: Final = "proctor_"
POLICY_ENV: Final = "PROCTOR_POLICY"
STATE_DIR_ENV: Final = "PROCTOR_STATE_DIR"
STORE_URL_ENV: Final = "PROCTOR_STORE_URL"
DEFAULT_RUN_HEADER: Final = "x-proctor-run"
# A tool name the guardrail governs: `mcp.<server>.<tool>` (an MCP tool LiteLLM brokers) or
# `fn.<name>` (a function a model may call in a chat completion).
TOOL_KEY: Final = re.compile(
    r"mcp\.[A-Za-z0-9_-]{1,64}\.[A-Za-z0-9_-]{1,128}|fn\.[A-Za-z0-9_-]{1,128}"
)
WHERE: Final = "the guardrail's litellm_params in the LiteLLM config"


class _ToolFacts(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    action_type: ActionType
    risk: Risk
    reversible: StrictBool
    external_side_effect: StrictBool
    idempotent: StrictBool = False


class _Params(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    proctor_policy: StrictStr | None = None
    proctor_state_dir: StrictStr | None = None
    proctor_store_url: StrictStr | None = None
    proctor_tools: dict[StrictStr, _ToolFacts] = Field(default_factory=dict)
    proctor_outcome_timeout: float = Field(300.0, gt=0, le=86_400)
    proctor_approval_ttl: float = Field(3600.0, gt=0, le=30 * 86_400)
    proctor_run_header: StrictStr = DEFAULT_RUN_HEADER


@dataclass(frozen=True, slots=True)
class GuardrailSettings:
    """Where Proctor keeps its state and what it knows about the tools behind LiteLLM."""

    policy_path: Path
    state_dir: Path
    store_url: str = field(repr=False)  # a PostgreSQL URL may carry a password
    tools: Mapping[str, ToolMapping] = field(default_factory=dict)
    # How long the firewall waits for LiteLLM to report what became of a call it let through
    # before recording the outcome as unknown (its budget slot then stays counted).
    outcome_timeout: float = 300.0
    approval_ttl: float = 3600.0
    run_header: str = DEFAULT_RUN_HEADER


def settings_from(params: Mapping[str, Any], env: Mapping[str, str]) -> GuardrailSettings:
    """The settings from the guardrail's params (the `proctor_*` keys) and the environment.

    Raises ConfigError naming the key and the fix."""
    ours = {key: value for key, value in params.items() if key.startswith(PREFIX)}
    try:
        parsed = _Params.model_validate(ours)
    except ValidationError as exc:
        first = exc.errors()[0]
        key = ".".join(str(part) for part in first["loc"])
        if first["type"] == "extra_forbidden":
            known = ", ".join(sorted(_Params.model_fields))
            message = f"unknown setting {key!r}; the Proctor guardrail reads {known}"
        else:
            message = f"{key}: {first['msg']}"
        raise ConfigError(WHERE, None, message) from None
    if not math.isfinite(parsed.proctor_outcome_timeout):
        raise ConfigError(WHERE, None, "proctor_outcome_timeout must be a finite number")
    policy = parsed.proctor_policy or env.get(POLICY_ENV)
    if not policy:
        raise ConfigError(
            WHERE,
            None,
            f"no policy: set proctor_policy (a Proctor policy file) or {POLICY_ENV}",
        )
    tools: dict[str, ToolMapping] = {}
    for name, facts in parsed.proctor_tools.items():
        if not TOOL_KEY.fullmatch(name):
            raise ConfigError(
                WHERE,
                None,
                f"proctor_tools: {name!r} is not a tool name the guardrail governs; write "
                "mcp.<server>.<tool> (an MCP tool LiteLLM brokers) or fn.<name> (a function "
                "in a chat completion)",
            )
        tools[name] = ToolMapping(
            action_type=facts.action_type,
            risk=facts.risk,
            reversible=facts.reversible,
            external_side_effect=facts.external_side_effect,
            idempotent=facts.idempotent,
        )
    header = parsed.proctor_run_header.strip().lower()
    if not re.fullmatch(r"[a-z0-9-]{1,64}", header):
        raise ConfigError(WHERE, None, "proctor_run_header must be an HTTP header name")
    return GuardrailSettings(
        policy_path=Path(policy),
        state_dir=Path(parsed.proctor_state_dir or env.get(STATE_DIR_ENV) or ".proctor"),
        store_url=parsed.proctor_store_url or env.get(STORE_URL_ENV) or "sqlite",
        tools=tools,
        outcome_timeout=parsed.proctor_outcome_timeout,
        approval_ttl=parsed.proctor_approval_ttl,
        run_header=header,
    )
