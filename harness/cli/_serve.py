"""`proctor serve`: publish the governed tool set as an MCP server (stdio or Streamable HTTP).

Every call a client makes goes through the firewall on its own run (`<run-prefix>-<n>` per
session). Over stdio nothing but protocol reaches stdout: every message here goes to stderr.
Over HTTP the server binds to loopback unless `--allow-remote` is given, and DNS-rebinding
protection stays on (allowed Host headers: the bound host:port, its localhost variants and
each `--allow-host`).
"""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import click

from governance import Principal
from harness import _exit_codes as codes
from harness.cli._options import gateway_options, open_gateway
from harness.cli._otel import otel_option

if TYPE_CHECKING:
    from governance.telemetry import Telemetry

LOOPBACK = "127.0.0.1"
# Apart from `proctor stub`'s default port: a user runs both side by side.
SERVE_PORT = 8765


def _say(message: str) -> None:
    click.echo(message, err=True)  # stdout belongs to the protocol on stdio


@click.command("serve")
@gateway_options
@click.option(
    "--transport",
    type=click.Choice(["stdio", "http"]),
    default="stdio",
    show_default=True,
    help="stdio for a client that launches Proctor; http for Streamable HTTP at /mcp.",
)
@click.option("--host", default=LOOPBACK, show_default=True, help="HTTP: address to bind.")
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=SERVE_PORT,
    show_default=True,
    help="HTTP: port to bind (0 picks a free one).",
)
@click.option(
    "--allow-remote",
    is_flag=True,
    help="HTTP: permit a non-loopback --host. Anyone who can reach it can call the tools.",
)
@click.option(
    "--allow-host",
    "allow_hosts",
    multiple=True,
    metavar="HOST[:PORT]",
    help="HTTP: another Host header to accept (DNS-rebinding protection); repeatable.",
)
@click.option(
    "--actor",
    envvar="PROCTOR_ACTOR",
    default="mcp-user",
    show_default=True,
    help="Who the calls are made for [env PROCTOR_ACTOR]; they cannot approve their own calls.",
)
@click.option(
    "--team", envvar="PROCTOR_TEAM", default="mcp", show_default=True, help="[env PROCTOR_TEAM]"
)
@click.option(
    "--run-prefix",
    default="mcp",
    show_default=True,
    help="Run ids are <prefix>-<n>; give each server sharing a state dir its own prefix.",
)
@otel_option("serve")
def serve(
    state_dir: Path,
    policy_path: Path | None,
    transport: str,
    host: str,
    port: int,
    allow_remote: bool,
    allow_hosts: tuple[str, ...],
    actor: str,
    team: str,
    run_prefix: str,
    telemetry: Telemetry | None,
    **gateway_extra: Any,
) -> int:
    """Serve the governed tools to any MCP client (Claude Desktop, Cursor, ...).

    \b
    Claude Desktop / Cursor (stdio):
      {"command": "proctor", "args": ["serve", "--state-dir", "/abs/path/.proctor"]}
    HTTP:
      proctor serve --transport http --port 8765   ->  http://127.0.0.1:8765/mcp
    """
    # Imported here: the MCP server stack costs every other command ~0.4 s of startup.
    from governance import build_mcp_server, describe_tools, is_loopback

    if transport == "http" and not is_loopback(host) and not allow_remote:
        raise click.UsageError(
            f"--host {host} is not a loopback address; add --allow-remote to serve it anyway "
            "(anyone who can reach it can call the governed tools)"
        )
    if not actor.strip() or not team.strip():
        raise click.UsageError("--actor and --team must not be empty")
    principal = Principal(actor=actor, agent="mcp-client", team=team)
    # Even a stray print while the gateway opens must not reach a stdio client's protocol.
    with contextlib.redirect_stdout(sys.stderr):
        gateway = open_gateway(state_dir, policy_path, telemetry=telemetry, **gateway_extra)
    with gateway:
        try:
            server = build_mcp_server(gateway, principal=principal, run_prefix=run_prefix)
        except ValueError as exc:
            raise click.BadParameter(str(exc), param_hint="--run-prefix") from None
        _say(
            f"proctor serve: {len(gateway.registry)} governed tools for actor {actor!r} "
            f"(team {team!r}), state dir {state_dir}"
        )
        _say(describe_tools(gateway))
        if transport == "stdio":
            return _serve_stdio(server)
        if not is_loopback(host):
            _say(
                f"warning: serving on {host}, which is not loopback: anyone who can reach it can "
                "call the governed tools (there is no authentication)"
            )
        return _serve_http(server, host, port, allow_hosts)


def _serve_stdio(server: Any) -> int:
    from governance import serve_stdio

    _say("serving MCP over stdio (close stdin to stop)")
    try:
        anyio.run(serve_stdio, server)
    except KeyboardInterrupt:
        _say("stopped.")
    return codes.OK


def _serve_http(server: Any, host: str, port: int, allow_hosts: tuple[str, ...]) -> int:
    from governance import McpServerError, serve_http

    def announce(url: str) -> None:
        _say(f"serving MCP (Streamable HTTP) at {url}   (Ctrl-C to stop)")

    try:
        serve_http(server, host=host, port=port, allowed_hosts=allow_hosts, on_ready=announce)
    except McpServerError as exc:
        _say(f"error: {exc}")
        return codes.INTERNAL
    except KeyboardInterrupt:
        _say("stopped.")
    return codes.OK
