"""Pins: the recorded digest of every MCP tool's definition, so a silent change is caught.

`proctor mcp pin` writes `<config stem>.lock.json` next to the config:

    {"servers": {"<server>": {"<tool>": "sha256:<hex>"}}, "version": 1}

A digest covers the tool's name, title, description, input schema, output schema and its four
annotation hints, exactly as the server listed them. At start-up a tool whose digest differs
from its pin is quarantined (`tool_definition_changed`): the firewall blocks it before policy
until someone re-pins. A tool with no pin runs per policy, unless pinning is required for its
server (`pin: true`, or `require_pins: true` for all), when it is quarantined as
`tool_not_pinned`. A pin once recorded is always enforced, required or not.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from governance._config_text import decode_text, read_capped
from governance._errors import ConfigError
from governance._json_lines import load_json
from governance._mcp_mapping import McpToolDefinition

LOCK_VERSION = 1
Digest = Annotated[str, Field(pattern=r"^sha256:[0-9a-f]{64}$")]


class McpLockError(ConfigError):
    """The pin (lock) file is malformed; re-create it with `proctor mcp pin`."""


class _LockModel(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    version: Literal[1]
    servers: dict[str, dict[str, Digest]]


def tool_digest(tool: McpToolDefinition) -> str:
    """`sha256:<hex>` of the canonical JSON of what a pin covers."""
    return tool.digest


@dataclass(frozen=True, slots=True)
class PinSet:
    """Recorded digests per server and tool. Empty when there is no lock file yet."""

    servers: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    path: Path | None = None

    def get(self, server: str, tool: str) -> str | None:
        return self.servers.get(server, {}).get(tool)

    def has_server(self, server: str) -> bool:
        return server in self.servers

    def with_server(self, server: str, tools: Mapping[str, str]) -> PinSet:
        """A copy whose pins for `server` are exactly `tools` (others are kept as they were)."""
        servers = {name: dict(pins) for name, pins in self.servers.items()}
        servers[server] = dict(tools)
        return PinSet(servers=servers, path=self.path)

    def render(self) -> str:
        """The lock file's text: sorted keys, two-space indent, trailing newline."""
        document = {
            "version": LOCK_VERSION,
            "servers": {name: dict(pins) for name, pins in self.servers.items()},
        }
        return json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def _invalid(path: str, line: int | None, message: str) -> McpLockError:
    return McpLockError(path, line, f"{message}; re-create the file with `proctor mcp pin`")


def load_pins(path: Path) -> PinSet:
    """Read a lock file. A missing file is an empty PinSet; a malformed one is an error."""
    try:
        raw = read_capped(path, _invalid, subject="pin file")
    except FileNotFoundError:
        return PinSet(path=path)
    except OSError as exc:
        raise McpLockError(
            path, None, f"cannot read the pin file ({exc.strerror or exc})"
        ) from None
    where = str(path)
    text = decode_text(raw, where, _invalid, subject="pin file", yaml_breaks=False)
    document = load_json(text, where, _invalid, subject="pin file")
    if not isinstance(document.data, dict):
        raise _invalid(where, 1, "a pin file is a JSON object with version and servers")
    try:
        model = _LockModel.model_validate(document.data)
    except ValidationError as exc:
        error = exc.errors(include_url=False)[0]
        line, shown = document.where(tuple(error["loc"]))
        raise _invalid(where, line, f"{shown}: {error['msg']}") from None
    return PinSet(servers=model.servers, path=path)


def write_pins(pins: PinSet, path: Path) -> Path:
    """Write the lock file atomically (a temporary file renamed over the old one)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(pins.render())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return path


def pins_for(tools: list[McpToolDefinition]) -> dict[str, str]:
    """The pins of one server's listing: tool name -> digest."""
    return {tool.name: tool_digest(tool) for tool in tools}
