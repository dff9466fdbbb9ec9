"""Pins: the recorded digest of every MCP tool's definition, so a silent change is caught.

`proctor mcp pin` writes `<config stem>.lock.json` next to the config:

    {"definitions": {"<server>": {"<tool>": {<what the digest covers>}}},
     "servers": {"<server>": {"<tool>": "sha256:<hex>"}}, "version": 1}

A digest covers the tool's name, title, description, input schema, output schema and its four
annotation hints, exactly as the server listed them. `definitions` keeps that text itself, so
`proctor check` can contract-check a config whose pins are required without starting its
servers. The digest stays the authority: a stored definition that does not hash to its pin
refuses the whole file (re-pin), and a lock written without definitions is still valid.

At start-up a tool whose digest differs from its pin is quarantined (`tool_definition_changed`):
the firewall blocks it before policy until someone re-pins. A tool with no pin runs per policy,
unless pinning is required for its server (`pin: true`, or `require_pins: true` for all), when
it is quarantined as `tool_not_pinned`. A pin once recorded is always enforced, required or not.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictStr, ValidationError

from governance.config._json_lines import load_json
from governance.config._text import decode_text, read_capped
from governance.core._contracts import ToolCall, ToolDescriptor, ToolResult
from governance.core._errors import ConfigError
from governance.mcp._mapping import McpToolDefinition, describe_tools

if TYPE_CHECKING:
    from governance.mcp._config import McpConfig, McpServerSpec

LOCK_VERSION = 1
Digest = Annotated[str, Field(pattern=r"^sha256:[0-9a-f]{64}$")]


class McpLockError(ConfigError):
    """The pin (lock) file is malformed; re-create it with `proctor mcp pin`."""


class _HintsModel(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    read_only_hint: StrictBool | None
    destructive_hint: StrictBool | None
    idempotent_hint: StrictBool | None
    open_world_hint: StrictBool | None


class _DefinitionModel(BaseModel):
    """One stored definition: exactly `McpToolDefinition.surface()`."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: StrictStr
    title: StrictStr | None
    description: StrictStr
    input_schema: dict[str, Any]
    output_schema: dict[str, Any] | None
    annotations: _HintsModel

    def definition(self) -> McpToolDefinition:
        return McpToolDefinition(
            name=self.name,
            description=self.description,
            input_schema=self.input_schema,
            output_schema=self.output_schema,
            title=self.title,
            annotations=self.annotations.model_dump(),
        )


class _LockModel(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    version: Literal[1]
    servers: dict[str, dict[str, Digest]]
    definitions: dict[str, dict[str, _DefinitionModel]] = Field(default_factory=dict)


def tool_digest(tool: McpToolDefinition) -> str:
    """`sha256:<hex>` of the canonical JSON of what a pin covers."""
    return tool.digest


@dataclass(frozen=True, slots=True)
class PinSet:
    """Recorded digests per server and tool. Empty when there is no lock file yet."""

    servers: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    path: Path | None = None
    # Per server, the definition each pin was taken from (every pin of that server has one).
    definitions: Mapping[str, Mapping[str, McpToolDefinition]] = field(default_factory=dict)

    def get(self, server: str, tool: str) -> str | None:
        return self.servers.get(server, {}).get(tool)

    def has_server(self, server: str) -> bool:
        return server in self.servers

    def definitions_of(self, server: str) -> list[McpToolDefinition] | None:
        """The pinned definitions of `server` by name, or None when the lock has none for it."""
        stored = self.definitions.get(server)
        return None if stored is None else [stored[name] for name in sorted(stored)]

    def with_server(self, server: str, tools: Mapping[str, str]) -> PinSet:
        """A copy whose pins for `server` are exactly `tools` (others are kept as they were);
        the server's stored definitions are dropped, since they may no longer match."""
        servers = {name: dict(pins) for name, pins in self.servers.items()}
        servers[server] = dict(tools)
        definitions = {k: v for k, v in self.definitions.items() if k != server}
        return PinSet(servers=servers, path=self.path, definitions=definitions)

    def with_definitions(self, server: str, tools: Sequence[McpToolDefinition]) -> PinSet:
        """A copy whose pins for `server` are exactly `tools`, each stored with its definition."""
        pinned = self.with_server(server, pins_for(tools))
        definitions = {**pinned.definitions, server: {tool.name: tool for tool in tools}}
        return PinSet(servers=pinned.servers, path=self.path, definitions=definitions)

    def render(self) -> str:
        """The lock file's text: sorted keys, two-space indent, trailing newline."""
        document: dict[str, Any] = {
            "version": LOCK_VERSION,
            "servers": {name: dict(pins) for name, pins in self.servers.items()},
        }
        if self.definitions:
            document["definitions"] = {
                server: {name: tool.surface() for name, tool in tools.items()}
                for server, tools in self.definitions.items()
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
    definitions = _checked_definitions(model, document.line_of, where)
    return PinSet(servers=model.servers, path=path, definitions=definitions)


def _checked_definitions(
    model: _LockModel, line_of: Callable[[tuple[str, ...]], int], where: str
) -> dict[str, dict[str, McpToolDefinition]]:
    """The stored definitions, each proven to hash to its pin: the digest is the authority."""
    checked: dict[str, dict[str, McpToolDefinition]] = {}
    for server, stored in model.definitions.items():
        pins = model.servers.get(server)
        if pins is None:
            raise _invalid(
                where,
                line_of(("definitions", server)),
                f"definitions.{server}: no pins for {server}",
            )
        if set(stored) != set(pins):
            extra = sorted(set(stored) ^ set(pins))
            raise _invalid(
                where,
                line_of(("definitions", server)),
                f"definitions.{server}: the stored definitions and the pins differ in "
                f"{', '.join(extra)}",
            )
        checked[server] = {}
        for name, entry in stored.items():
            definition = entry.definition()
            loc = ("definitions", server, name)
            if definition.name != name:
                raise _invalid(
                    where,
                    line_of((*loc, "name")),
                    f"definitions.{server}.{name} stores a tool named {definition.name!r}",
                )
            try:
                found = definition.digest
            except ValueError:  # NaN or a lone surrogate: canonical JSON has no digest for it
                found = None
            if found != pins[name]:
                raise _invalid(
                    where,
                    line_of(loc),
                    f"definitions.{server}.{name} does not hash to its pin {pins[name]} (the "
                    "stored definition was edited); nothing in this file is trusted",
                )
            checked[server][name] = definition
    return checked


def locked_definitions(config: McpConfig, pins: PinSet) -> dict[str, list[McpToolDefinition]] | str:
    """Every server's tools from the lock, when the lock can stand for the live servers; else
    why not (one clause, for a note).

    It can when every server requires pins (`require_pins: true` or `pin: true`) and the lock
    stores its definitions: the gateway then quarantines any live tool whose definition is not
    the pinned one (`tool_definition_changed`, `tool_not_pinned`), so the runnable surface is at
    most what the lock lists.
    """
    if not pins.servers:
        return "it has no pins"
    found: dict[str, list[McpToolDefinition]] = {}
    for spec in config.servers:
        if not spec.pin_required:
            return f"server {spec.name} does not require pins (`require_pins: true`)"
        stored = pins.definitions_of(spec.name)
        if stored is None:
            return f"its pin file stores no definitions for server {spec.name}"
        found[spec.name] = stored
    return found


class LockedListing:
    """One server's tools as its lock describes them, for a contract check: it lists, it never
    runs anything (`call` fails: no server was started)."""

    def __init__(
        self, spec: McpServerSpec, definitions: Sequence[McpToolDefinition], pins: PinSet
    ) -> None:
        self.name = spec.source_name
        infos = describe_tools(spec, definitions, pins)  # the live path's own mapping
        self._tools = [info.descriptor for info in infos if info.descriptor is not None]

    def list_tools(self) -> list[ToolDescriptor]:
        return list(self._tools)

    def call(self, call: ToolCall) -> ToolResult:
        return ToolResult(
            call.call_id,
            call.tool,
            "failed",
            error=f"{self.name} was listed from its lock; no server is running",
            reason="server_unavailable",
            before_effect=True,  # nothing runs: there is no server
        )


def locked_sources(config: McpConfig, pins: PinSet) -> list[LockedListing] | str:
    """`locked_definitions` as tool sources (one per server), or why the lock cannot stand in."""
    found = locked_definitions(config, pins)
    if isinstance(found, str):
        return found
    return [LockedListing(spec, found[spec.name], pins) for spec in config.servers]


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


def pins_for(tools: Sequence[McpToolDefinition]) -> dict[str, str]:
    """The pins of one server's listing: tool name -> digest."""
    return {tool.name: tool_digest(tool) for tool in tools}
