"""`proctor mcp list|pin`: the configured MCP servers, their tools' governance, and their pins.

Both commands start every configured server, list its tools and shut it down again; neither
calls a tool. `list` exits 0 whatever the servers' states (it reports them); `pin` exits 1 when
a server could not be started (its earlier pins are kept), 0 otherwise.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from tabulate import tabulate

from governance.mcp import (
    HINTS,
    McpConfig,
    PinSet,
    load_mcp_config,
    load_pins,
    pins_for,
    write_pins,
)
from harness import _exit_codes as codes

if TYPE_CHECKING:
    from governance.mcp import McpToolInfo, McpToolSource

CONFIG_FILE = click.Path(exists=True, dir_okay=False, path_type=Path)
_HINT_LABELS = {
    "read_only_hint": "readOnly",
    "destructive_hint": "destructive",
    "idempotent_hint": "idempotent",
    "open_world_hint": "openWorld",
}


@click.group("mcp")
def mcp_group() -> None:
    """MCP servers as governed tool sources: inspect them, pin their tool definitions."""


def _config_option(func: Any) -> Any:
    return click.option(
        "--config",
        "config_path",
        type=CONFIG_FILE,
        envvar="PROCTOR_MCP_CONFIG",
        required=True,
        help="MCP servers file [env PROCTOR_MCP_CONFIG].",
    )(func)


def _lock_option(func: Any) -> Any:
    return click.option(
        "--lock",
        "lock_path",
        type=click.Path(dir_okay=False, path_type=Path),
        default=None,
        help="Pin file [default: <config stem>.lock.json next to the config].",
    )(func)


@contextmanager
def _started(config: McpConfig, pins: PinSet) -> Iterator[list[McpToolSource]]:
    # Imported here: the MCP SDK is slow to import and only these commands need it.
    from governance.mcp import open_mcp_sources

    sources = open_mcp_sources(config, pins)
    try:
        yield sources
    finally:
        for source in sources:
            source.close()


def _tool_json(info: McpToolInfo) -> dict[str, Any]:
    d = info.descriptor
    return {
        "tool": d.name if d else None,
        "mcp_name": info.definition.name,
        "mapped": info.mapped,
        "action_type": d.action_type if d else None,
        "risk": d.risk if d else None,
        "reversible": d.reversible if d else None,
        "external_side_effect": d.external_side_effect if d else None,
        "idempotent": d.idempotent if d else None,
        "annotations": {
            _HINT_LABELS[h]: info.definition.annotations.get(h)
            for h in HINTS
            if info.definition.annotations.get(h) is not None
        },
        "pin": info.pin,
        "quarantine": d.quarantine if d else None,
        "skipped": info.skipped,
    }


def _server_json(source: McpToolSource) -> dict[str, Any]:
    status = source.status
    return {
        "server": source.spec.name,
        "source": source.name,
        "transport": source.spec.transport,
        "status": status.state,
        "detail": status.detail,
        "pin_required": source.spec.pin_required,
        "tools": [_tool_json(info) for info in source.tools()],
    }


def _yes(value: object) -> str:
    return "-" if value is None else ("yes" if value else "no")


def _print_server(server: dict[str, Any]) -> None:
    status = server["status"] + (f": {server['detail']}" if server["detail"] else "")
    click.echo(f"{server['server']} ({server['transport']}): {status}")
    if not server["tools"]:
        return
    rows = []
    for tool in server["tools"]:
        hints = ", ".join(k for k, v in tool["annotations"].items() if v) or "-"
        note = tool["skipped"] and f"skipped: {tool['skipped']}"
        rows.append(
            [
                tool["tool"] or tool["mcp_name"],
                tool["action_type"] if tool["mapped"] else f"{tool['action_type']} (unmapped)",
                tool["risk"] or "-",
                _yes(tool["reversible"]),
                _yes(tool["external_side_effect"]),
                _yes(tool["idempotent"]),
                hints,
                tool["pin"],
                note or tool["quarantine"] or "-",
            ]
        )
    headers = ["tool", "action", "risk", "reversible", "external", "idempotent", "hints", "pin"]
    click.echo(tabulate(rows, headers=[*headers, "blocked"]))
    click.echo("")


@mcp_group.command("list")
@_config_option
@_lock_option
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def list_command(config_path: Path, lock_path: Path | None, as_json: bool) -> int:
    """Every server's status (up / failed: why) and its tools' governance. Calls no tool."""
    config = load_mcp_config(config_path)
    lock = lock_path or config.lock_path
    with _started(config, load_pins(lock)) as sources:
        servers = [_server_json(source) for source in sources]
    if as_json:
        document = {"config": str(config_path), "lock": str(lock), "servers": servers}
        click.echo(json.dumps(document, indent=2, sort_keys=True))
        return codes.OK
    for server in servers:
        _print_server(server)
    return codes.OK


@mcp_group.command("pin")
@_config_option
@_lock_option
@click.option(
    "--server",
    "only",
    multiple=True,
    help="Pin only this server (repeatable) [default: every server].",
)
def pin_command(config_path: Path, lock_path: Path | None, only: tuple[str, ...]) -> int:
    """Record every tool's definition and its digest; a changed tool is then blocked.

    With `require_pins: true`, `proctor check` reads the tools from this file instead of
    starting the servers.
    """
    config = load_mcp_config(config_path)
    names = {spec.name for spec in config.servers}
    unknown = sorted(set(only) - names)
    if unknown:
        raise click.BadParameter(
            f"no such server in {config_path}: {', '.join(unknown)}", param_hint="--server"
        )
    lock = lock_path or config.lock_path
    pins = load_pins(lock)
    chosen = [spec for spec in config.servers if not only or spec.name in only]
    failed: list[str] = []
    subset = McpConfig(path=config.path, servers=tuple(chosen), require_pins=config.require_pins)
    with _started(subset, PinSet()) as sources:
        for source in sources:
            server = source.spec.name
            if source.status.state != "up":
                failed.append(server)
                click.echo(f"{server}: not pinned, {source.status.describe()}", err=True)
                continue
            fresh = pins_for(source.definitions())
            before = pins.servers.get(server, {})
            changed = sorted(t for t in fresh if t in before and before[t] != fresh[t])
            added = sorted(t for t in fresh if t not in before)
            removed = sorted(t for t in before if t not in fresh)
            pins = pins.with_definitions(server, source.definitions())
            notes = [
                f"{label}: {', '.join(items)}"
                for label, items in (("changed", changed), ("new", added), ("removed", removed))
                if items
            ]
            suffix = f" ({'; '.join(notes)})" if notes else ""
            click.echo(f"{server}: pinned {len(fresh)} tools{suffix}")
    write_pins(pins, lock)
    click.echo(f"wrote {lock}")
    return codes.CHECK_FAILED if failed else codes.OK
