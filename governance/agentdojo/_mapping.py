"""What each AgentDojo tool is, as Proctor's policy sees it: one committed file per suite.

`governance/data/agentdojo/<suite>.yaml` gives every function of the suite its descriptor facts
(action type, risk, reversibility, external side effect, idempotence, whether its output carries
text a third party wrote) and a one-line `why`, so a reviewer can check the mapping without
reading AgentDojo. The loader refuses a file that misses a tool of the suite or names one the
suite does not have: an unmapped tool must never run with guessed facts.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from governance.config import (
    data_loc,
    decode_text,
    first_and_rest,
    load_yaml_with_lines,
    pydantic_message,
    read_capped,
)
from governance.core._contracts import ActionType, Risk
from governance.core._errors import ConfigError

AgentDojoSuite = Literal["workspace", "travel", "banking", "slack"]
AGENTDOJO_SUITES: tuple[AgentDojoSuite, ...] = ("workspace", "travel", "banking", "slack")


class AgentDojoMappingError(ConfigError):
    """A suite's mapping file is malformed or does not cover the suite's tools exactly."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ToolFacts(_Model):
    action_type: ActionType
    risk: Risk
    reversible: bool
    external_side_effect: bool = Field(
        description="Seen outside the user's own data: a send, transfer, share or invite."
    )
    idempotent: bool
    untrusted_output: bool = Field(
        description="Its output carries text a third party wrote: reading it taints the run."
    )
    why: str = Field(min_length=1, description="One line a reviewer can check the facts by.")


class _MappingFile(_Model):
    suite: AgentDojoSuite
    tools: dict[str, ToolFacts] = Field(min_length=1)


@dataclass(frozen=True, slots=True)
class AgentDojoMapping:
    suite: AgentDojoSuite
    tools: Mapping[str, ToolFacts]
    path: Path

    def check_covers(self, functions: Iterable[str]) -> None:
        """Refuse unless the file maps exactly these function names (AgentDojo's suite)."""
        names = set(functions)
        missing = sorted(names - set(self.tools))
        extra = sorted(set(self.tools) - names)
        if missing:
            raise AgentDojoMappingError(
                self.path,
                None,
                f"suite {self.suite!r} has tools this file does not map: {', '.join(missing)} "
                "(add each under `tools:` with its facts and a `why`)",
            )
        if extra:
            raise AgentDojoMappingError(
                self.path,
                None,
                f"this file maps tools suite {self.suite!r} does not have: {', '.join(extra)} "
                "(remove them, or check the AgentDojo version)",
            )


def mapping_path(suite: str) -> Path:
    """The committed mapping of a shipped suite."""
    return Path(str(resources.files("governance") / "data" / "agentdojo" / f"{suite}.yaml"))


def load_agentdojo_mapping(path: str | Path) -> AgentDojoMapping:
    """Read and validate one mapping file; errors name the file and line."""
    target = Path(path)
    try:
        raw = read_capped(target, AgentDojoMappingError, subject="AgentDojo mapping")
    except OSError as exc:
        raise AgentDojoMappingError(
            target, None, f"cannot read the AgentDojo mapping ({exc.strerror or exc})"
        ) from None
    where = str(target)
    text = decode_text(raw, where, AgentDojoMappingError, subject="AgentDojo mapping")
    data, lines = load_yaml_with_lines(text, where, AgentDojoMappingError, subject="mapping")
    if not isinstance(data, dict):
        raise AgentDojoMappingError(
            target, 1, "an AgentDojo mapping is a mapping with `suite:` and `tools:`"
        )
    try:
        model = _MappingFile.model_validate(data)
    except ValidationError as exc:
        found = []
        for error in exc.errors(include_url=False):
            shown, existing = data_loc(data, tuple(error["loc"]))
            line = lines.get(existing, 1)
            place = ".".join(str(part) for part in shown) or "(top)"
            found.append((line, f"{place}: {pydantic_message(error)}"))
        raise AgentDojoMappingError(target, *first_and_rest(where, found)) from None
    return AgentDojoMapping(suite=model.suite, tools=model.tools, path=target)
