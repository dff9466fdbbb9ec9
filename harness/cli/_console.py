"""`proctor console`: the live web page over this state dir's gateway and stores."""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from harness import _exit_codes as codes
from harness.cli._options import MCP_CONFIG_META, STORE_META, gateway_options, open_gateway
from harness.cli._otel import otel_option

if TYPE_CHECKING:
    from governance.telemetry import Telemetry

LOOPBACK = "127.0.0.1"
CONSOLE_PORT = 8767  # not 8765 (`proctor serve`) or 8766 (the stub): all three run side by side
TOKEN_ENV = "PROCTOR_CONSOLE_TOKEN"
MIN_TOKEN_CHARS = 16


@click.command("console")
@gateway_options
@click.option("--host", default=LOOPBACK, show_default=True, help="Address to bind.")
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=CONSOLE_PORT,
    show_default=True,
    help="Port to bind (0 picks a free one).",
)
@click.option(
    "--token",
    envvar=TOKEN_ENV,
    default=None,
    help=f"The access token (at least {MIN_TOKEN_CHARS} characters) [env {TOKEN_ENV}; "
    "default: a random one, printed in the sign-in URL].",
)
@click.option(
    "--allow-remote",
    is_flag=True,
    help="Permit a non-loopback --host; needs an explicit --token. Anyone who can reach the "
    "port and holds the token can approve calls and edit the policy.",
)
@click.option(
    "--reports",
    "reports_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("reports"),
    show_default=True,
    help="Where the Evaluations page finds `proctor run` report directories.",
)
@click.option(
    "--provider",
    type=click.Choice(["stub", "live", "script"]),
    default="stub",
    show_default=True,
    help="The Agent page's model: the bundled vendor stub (no credential), the live endpoint "
    "from PROCTOR_LLM_* (or .env), or a replay --script.",
)
@click.option(
    "--script",
    "script_path",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    default=None,
    help="Replay script for --provider script (a YAML list of turns).",
)
@otel_option("console")
def console_command(
    state_dir: Path,
    policy_path: Path | None,
    host: str,
    port: int,
    token: str | None,
    allow_remote: bool,
    reports_dir: Path,
    provider: str,
    script_path: Path | None,
    telemetry: Telemetry | None,
    **gateway_extra: Any,
) -> int:
    """Serve the Proctor console: agent, approvals, policies, budgets, audit, evaluations.

    \b
    It prints one line, the URL to open (it carries the access token):
      Proctor console: http://127.0.0.1:8765/login?token=...
    Without --policy the shipped policy is shown but cannot be edited: start it with
    --policy FILE (a copy you own) to edit policies from the page.
    """
    from governance import is_loopback

    if token is not None and len(token) < MIN_TOKEN_CHARS:
        raise click.BadParameter(f"use at least {MIN_TOKEN_CHARS} characters", param_hint="--token")
    if not is_loopback(host):
        if not allow_remote:
            raise click.UsageError(
                f"--host {host} is not a loopback address; add --allow-remote (and --token) to "
                "serve the console beyond this machine"
            )
        if token is None:
            raise click.UsageError(
                "--allow-remote needs an explicit --token (or PROCTOR_CONSOLE_TOKEN)"
            )
    if (provider == "script") != (script_path is not None):
        raise click.UsageError("--script FILE goes with --provider script, and only with it")
    ctx = click.get_current_context()
    from harness.console import ConsoleConfig, ConsoleState
    from harness.console._serve import serve_console

    config = ConsoleConfig(
        state_dir=state_dir,
        token=token or secrets.token_urlsafe(24),
        policy_path=policy_path,
        store=ctx.meta.get(STORE_META) or "sqlite",
        mcp_config=ctx.meta.get(MCP_CONFIG_META),
        reports_dir=reports_dir,
        host=host,
        port=port,
        provider=provider,  # type: ignore[arg-type]
        script_path=script_path,
    )
    providers = _providers(provider, script_path)
    gateway = open_gateway(state_dir, policy_path, held_calls="awaited", telemetry=telemetry)
    turn_observer = telemetry.model_turn if telemetry is not None else None
    with ConsoleState(
        config, gateway=gateway, providers=providers, turn_observer=turn_observer
    ) as state:
        serve_console(state, loopback_only=is_loopback(host))
    return codes.OK


def _providers(choice: str, script_path: Path | None) -> Any:
    """The Agent page's model; None: the bundled stub (the console starts and stops it)."""
    from harness._errors import HarnessError
    from harness.console._providers import LiveProviders, ScriptProviders

    if choice == "script":
        from harness.cli._ask import _load_script

        assert script_path is not None
        return ScriptProviders(_load_script(script_path))
    if choice == "live":
        try:
            return LiveProviders.from_environment()
        except HarnessError as exc:
            raise click.UsageError(str(exc)) from None
    return None
