"""The MCP servers file: which servers Proctor launches or reaches, and how each tool is governed.

YAML, checked once at load by pydantic models (extra="forbid"); errors name the file and line.
Unmapped tools are not an error: they register as `action_type: unknown`, which policy can only
hold or block. Run `make schemas` to regenerate the committed JSON Schema
(governance/data/mcp.schema.json).

Choices worth knowing:
  * `command: python` (or `python3`) means the interpreter running Proctor (`sys.executable`),
    so servers installed next to Proctor are found whatever PATH says; any other bare command
    is looked up on PATH at start-up, a command with a `/` is used as written.
  * A relative `cwd` is relative to the config file's directory.
  * `env` is an allow-list of names: a stdio child gets PATH, HOME and those names (when set)
    and nothing else. HTTP header values only ever come from named environment variables.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StrictBool,
    StrictInt,
    ValidationError,
    field_validator,
)

from governance.config._problems import first_and_rest, located, schema_message
from governance.config._schema_files import render_json, schema_document, write_atomic
from governance.config._text import read_capped
from governance.config._yaml_lines import (
    Loc,
    decode_text,
    load_yaml_with_lines,
)
from governance.core._contracts import ActionType, Risk
from governance.core._errors import ConfigError

SCHEMA_PATH = Path(__file__).resolve().parent.parent / "data" / "mcp.schema.json"
SCHEMA_COMMAND = "make schemas"
SERVER_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
TOOL_NAME = re.compile(r"[A-Za-z0-9_-]{1,128}")
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")
HEADER_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]{1,128}")
ALWAYS_PASSED_ENV = ("PATH", "HOME")
PYTHON_COMMANDS = frozenset({"python", "python3"})
DEFAULT_CONNECT_TIMEOUT = 10.0
DEFAULT_CALL_TIMEOUT = 30.0
DEFAULT_MAX_RESULT_CHARS = 20_000


class McpConfigError(ConfigError):
    """The MCP servers file is malformed; Proctor refuses to start with it."""


def _matching(pattern: re.Pattern[str], what: str, rule: str) -> tuple[Any, ...]:
    """A name check with a message that says what to write, plus the pattern for the schema."""

    def check(value: str) -> str:
        if not pattern.fullmatch(value):
            raise ValueError(f"{what} {value!r} is not valid: use {rule}")
        return value

    return AfterValidator(check), Field(json_schema_extra={"pattern": f"^{pattern.pattern}$"})


_SERVER = _matching(SERVER_NAME, "server name", "1-64 letters, digits, '_' or '-' (no dots)")
_TOOL = _matching(
    TOOL_NAME,
    "tool name",
    "1-128 letters, digits, '_' or '-' (MCP tools named with dots or other characters are "
    "skipped at start-up, so they cannot be mapped)",
)
_ENV = _matching(ENV_NAME, "environment variable name", "[A-Za-z_][A-Za-z0-9_]*")
_HEADER = _matching(HEADER_NAME, "header name", "an HTTP token")
ServerName = Annotated[str, _SERVER[0], _SERVER[1]]
ToolName = Annotated[str, _TOOL[0], _TOOL[1]]
EnvName = Annotated[str, _ENV[0], _ENV[1]]
HeaderName = Annotated[str, _HEADER[0], _HEADER[1]]


def _seconds(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError("must be a number of seconds")
    if not math.isfinite(value):
        raise ValueError("must be a finite number of seconds")
    return float(value)


_SecondsInput = BeforeValidator(_seconds, json_schema_input_type=float)
ConnectTimeout = Annotated[float, _SecondsInput, Field(gt=0, le=600)]
CallTimeout = Annotated[float, _SecondsInput, Field(gt=0, le=86_400)]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ToolMappingModel(_Model):
    """The operator's governance facts for one tool; server annotations can only raise them."""

    action_type: ActionType
    risk: Risk
    reversible: StrictBool
    external_side_effect: StrictBool
    idempotent: StrictBool = Field(
        False, description="Only an idempotent tool is retried (once) after a transport failure."
    )


class HeaderValueModel(_Model):
    """An HTTP header whose value is read from an environment variable at start-up."""

    env: EnvName
    prefix: str = Field("", description="Put before the value, e.g. 'Bearer '.")


class _ServerModel(_Model):
    connect_timeout: ConnectTimeout = Field(
        DEFAULT_CONNECT_TIMEOUT, description="Seconds to start, handshake and list tools."
    )
    call_timeout: CallTimeout = Field(
        DEFAULT_CALL_TIMEOUT, description="Seconds one tool call may take before it fails."
    )
    max_result_chars: StrictInt = Field(DEFAULT_MAX_RESULT_CHARS, ge=1, le=10_000_000)
    pin: StrictBool = Field(
        False,
        description="Require every tool of this server to be pinned (`proctor mcp pin`); an "
        "unpinned tool is then quarantined. A recorded pin is enforced either way.",
    )
    stateless: StrictBool = Field(
        False,
        description="The server keeps no state between calls that one session could see in "
        "another: a suite run may then keep one session per worker for all its scenarios, "
        "shared with every config whose stateless server is launched exactly alike (command, "
        "args, environment, cwd); a session that crashed, timed out or was restarted is "
        "replaced.",
    )
    tools: dict[ToolName, ToolMappingModel] = Field(
        default_factory=dict,
        description="Governance facts per MCP tool name; unmapped tools are action_type unknown.",
    )


class StdioServerModel(_ServerModel):
    """A server Proctor launches and talks to over stdin/stdout."""

    transport: Literal["stdio"]
    command: str = Field(
        min_length=1, description="Executable; 'python' means the interpreter running Proctor."
    )
    args: list[str] = Field(default_factory=list)
    cwd: str | None = Field(None, description="Working directory, relative to this file.")
    env: list[EnvName] = Field(
        default_factory=list,
        description="Names of variables the child may see besides PATH and HOME.",
    )


class HttpServerModel(_ServerModel):
    """A server reached over MCP Streamable HTTP."""

    transport: Literal["http"]
    url: str = Field(description="The MCP endpoint, http:// or https://.")
    headers: dict[HeaderName, HeaderValueModel] = Field(default_factory=dict)

    @field_validator("url")
    @classmethod
    def _http_url(cls, value: str) -> str:
        if not re.fullmatch(r"https?://[^\s/?#]+(/[^\s]*)?", value):
            raise ValueError(f"url {value!r} must be an http:// or https:// URL with a host")
        return value


ServerModel = Annotated[StdioServerModel | HttpServerModel, Field(discriminator="transport")]


class McpConfigModel(_Model):
    """A whole MCP servers file."""

    model_config = ConfigDict(extra="forbid", frozen=True, title="Proctor MCP servers")

    version: Literal[1]
    require_pins: StrictBool = Field(
        False, description="Require pins for every server, as if each said `pin: true`."
    )
    servers: dict[ServerName, ServerModel]

    @field_validator("version", mode="before")
    @classmethod
    def _version_is_the_number_one(cls, value: Any) -> Any:
        if value is True:
            raise ValueError("version must be the number 1")
        return value

    @field_validator("servers")
    @classmethod
    def _some_servers(cls, value: dict[str, Any]) -> dict[str, Any]:
        if not value:
            raise ValueError("no servers: name at least one under `servers:`")
        return value


# -- the engine's view ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ToolMapping:
    """Governance facts the operator assigned to one MCP tool."""

    action_type: ActionType
    risk: Risk
    reversible: bool
    external_side_effect: bool
    idempotent: bool = False


@dataclass(frozen=True, slots=True)
class HeaderFromEnv:
    env: str
    prefix: str = ""


@dataclass(frozen=True, slots=True)
class McpServerSpec:
    """One configured server, validated. `command`/`url` belong to stdio/http respectively."""

    name: str
    transport: Literal["stdio", "http"]
    connect_timeout: float = DEFAULT_CONNECT_TIMEOUT
    call_timeout: float = DEFAULT_CALL_TIMEOUT
    max_result_chars: int = DEFAULT_MAX_RESULT_CHARS
    pin_required: bool = False
    stateless: bool = False
    tools: Mapping[str, ToolMapping] = field(default_factory=dict)
    command: str = ""
    args: tuple[str, ...] = ()
    cwd: str | None = None
    env: tuple[str, ...] = ()
    url: str = ""
    headers: Mapping[str, HeaderFromEnv] = field(default_factory=dict)

    @property
    def source_name(self) -> str:
        return f"mcp.{self.name}"


@dataclass(frozen=True, slots=True)
class McpConfig:
    """A loaded MCP servers file."""

    path: Path
    servers: tuple[McpServerSpec, ...]
    require_pins: bool = False

    @property
    def lock_path(self) -> Path:
        """Where pins live by default: `<config stem>.lock.json` next to the config."""
        return default_lock_path(self.path)


def default_lock_path(config_path: Path) -> Path:
    return config_path.with_name(f"{config_path.stem}.lock.json")


def _spec(
    name: str, model: StdioServerModel | HttpServerModel, base: Path, pins: bool
) -> McpServerSpec:
    tools = {
        tool: ToolMapping(
            action_type=m.action_type,
            risk=m.risk,
            reversible=m.reversible,
            external_side_effect=m.external_side_effect,
            idempotent=m.idempotent,
        )
        for tool, m in model.tools.items()
    }
    common: dict[str, Any] = {
        "name": name,
        "transport": model.transport,
        "connect_timeout": model.connect_timeout,
        "call_timeout": model.call_timeout,
        "max_result_chars": model.max_result_chars,
        "pin_required": model.pin or pins,
        "stateless": model.stateless,
        "tools": tools,
    }
    if isinstance(model, StdioServerModel):
        cwd = None if model.cwd is None else str((base / model.cwd).resolve())
        return McpServerSpec(
            **common,
            command=model.command,
            args=tuple(model.args),
            cwd=cwd,
            env=tuple(dict.fromkeys(model.env)),
        )
    headers = {k: HeaderFromEnv(env=v.env, prefix=v.prefix) for k, v in model.headers.items()}
    return McpServerSpec(**common, url=model.url, headers=headers)


# -- loading ----------------------------------------------------------------------------------


def _clean_loc(loc: Loc) -> Loc:
    """Drop pydantic's own labels: the union tag after a server name and `[key]` markers."""
    parts = [p for p in loc if p != "[key]"]
    if len(parts) >= 3 and parts[0] == "servers" and parts[2] in ("stdio", "http"):
        del parts[2]
    return tuple(parts)


def _message(error: Mapping[str, Any], shown: Loc) -> str:
    kind = error["type"]
    if kind == "union_tag_not_found":
        return "missing required key 'transport': write `transport: stdio` or `transport: http`"
    if kind == "union_tag_invalid":
        return "transport must be 'stdio' or 'http'"
    return schema_message(error, shown, SCHEMA_PATH.name)


def _locate(error: Mapping[str, Any]) -> Loc:
    loc = _clean_loc(tuple(error["loc"]))
    if error["type"] == "union_tag_invalid":
        loc = (*loc, "transport")  # point at the bad value, not at the server
    return loc


def _validation_error(
    exc: ValidationError, data: Any, path: str, lines: dict[Loc, int]
) -> McpConfigError:
    found = located(
        exc.errors(include_url=False), data, lines, locate=_locate, message=_message
    )
    return McpConfigError(path, *first_and_rest(path, found))


def parse_mcp_config(text: str, path: str | Path = "<string>") -> McpConfig:
    """Validate MCP servers YAML. Raises McpConfigError naming `path` and the line."""
    where = str(path)
    data, lines = load_yaml_with_lines(text, where, McpConfigError, subject="MCP config")
    if data is None:
        raise McpConfigError(
            where, 1, "the MCP config is empty: write `version: 1` and a `servers:` mapping"
        )
    if not isinstance(data, dict):
        raise McpConfigError(where, 1, "an MCP config must be a mapping with version and servers")
    try:
        model = McpConfigModel.model_validate(data)
    except ValidationError as exc:
        raise _validation_error(exc, data, where, lines) from None
    base = Path(path).resolve().parent
    servers = tuple(
        _spec(name, server, base, model.require_pins) for name, server in model.servers.items()
    )
    return McpConfig(path=Path(path), servers=servers, require_pins=model.require_pins)


def load_mcp_config(path: str | Path) -> McpConfig:
    """Read and validate one MCP servers file."""
    target = Path(path)
    try:
        raw = read_capped(target, McpConfigError, subject="MCP config")
    except OSError as exc:
        raise McpConfigError(
            target, None, f"cannot read the MCP config ({exc.strerror or exc}); check the path"
        ) from None
    text = decode_text(raw, str(target), McpConfigError, subject="MCP config")
    return parse_mcp_config(text, target)


# -- the committed schema ---------------------------------------------------------------------


def _closed_maps(node: Any) -> None:
    """A name-keyed mapping accepts only names that match its pattern, as the loader does."""
    if isinstance(node, dict):
        if "patternProperties" in node and "additionalProperties" not in node:
            node["additionalProperties"] = False
        for value in node.values():
            _closed_maps(value)
    elif isinstance(node, list):
        for value in node:
            _closed_maps(value)


def mcp_json_schema() -> dict[str, Any]:
    """The JSON Schema editors and users validate MCP servers files with."""
    schema = McpConfigModel.model_json_schema()
    _closed_maps(schema)
    return schema_document(schema, "Proctor MCP servers")


def render_mcp_schema() -> str:
    """The schema exactly as committed: sorted keys, two-space indent, trailing newline."""
    return render_json(mcp_json_schema())


def write_mcp_schema(path: Path = SCHEMA_PATH) -> Path:
    return write_atomic(path, render_mcp_schema())

