"""`proctor ask`: one governed agent run, stored so a held call can be resumed later."""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import TYPE_CHECKING

import click
from pydantic import ValidationError

from governance import ConfigError, Principal
from governance.config import data_loc, decode_text, format_loc, load_yaml_with_lines, read_capped
from governance.screening import CLAIMS_MODES, DEFAULT_CLAIMS_MODE, ClaimsMode
from harness import _exit_codes as codes
from harness._errors import HarnessError
from harness._loop import DEFAULT_MAX_STEPS, AgentLoop
from harness._run_store import ProviderSpec, RunStore, StoredRun
from harness._waiting import wait_for_reviews
from harness.cli._options import gateway_options, open_gateway
from harness.cli._otel import otel_option
from harness.cli._single_run import SCRIPT, build_provider, print_run

if TYPE_CHECKING:
    from governance.telemetry import Telemetry


def _load_script(path: Path) -> list[object]:
    """A replay script: a YAML list of turns, or a mapping with the list under `script:`."""
    where = str(path)
    try:
        raw = read_capped(path, ConfigError, subject="replay script")
    except OSError as exc:
        raise ConfigError(path, None, f"cannot read the script ({exc.strerror or exc})") from None
    text = decode_text(raw, where, ConfigError, subject="replay script")
    data, lines = load_yaml_with_lines(text, where, ConfigError, subject="replay script")
    if data is None:
        raise ConfigError(path, 1, "the replay script is empty: write a list of turns")
    base: tuple[str, ...] = ("script",) if isinstance(data, dict) else ()
    steps = data.get("script") if isinstance(data, dict) else data
    try:
        SCRIPT.validate_python(steps)
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = (*base, *first["loc"])
        shown, existing = data_loc(data, loc)
        raise ConfigError(
            path,
            lines.get(existing, 1),
            f"{format_loc(shown) or 'script'}: {first['msg']} (the replay scripts under "
            "scenarios/scripts/ show the format)",
        ) from None
    assert isinstance(steps, list)
    return steps


@click.command("ask")
@gateway_options
@click.argument("request")
@click.option(
    "--script",
    "script_path",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Replay script (YAML list of turns) standing in for the model.",
)
@click.option(
    "--live",
    is_flag=True,
    help="Use the OpenAI-compatible endpoint from PROCTOR_LLM_* (or .env) instead.",
)
@click.option("--base-url", default=None, help="Live endpoint [env PROCTOR_LLM_BASE_URL].")
@click.option("--model", default=None, help="Live model [env PROCTOR_LLM_MODEL].")
@click.option(
    "--max-steps", type=click.IntRange(min=1), default=DEFAULT_MAX_STEPS, show_default=True
)
@click.option(
    "--claims",
    type=click.Choice(CLAIMS_MODES),
    default=DEFAULT_CLAIMS_MODE,
    show_default=True,
    help="An answer stating ids or actions the run does not support: replace it with what "
    "really happened, annotate it with that, or leave it (off).",
)
@click.option("--actor", default="cli-user", show_default=True)
@click.option("--agent", default="cli-agent", show_default=True)
@click.option("--team", default="cli", show_default=True)
@click.option("--run-id", default=None, help="Default: run-<random>.")
@click.option(
    "--wait",
    "wait_seconds",
    type=click.FloatRange(min=0, min_open=True, max=86_400),
    default=None,
    help="Wait up to SECONDS here for a reviewer to decide each held call, then continue the "
    "run; an undecided call is withdrawn. If this process dies while waiting, the request "
    "expires at the next start. Without it, a held call waits for `proctor approvals resume`.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the run as JSON.")
@otel_option("ask")
def ask(
    state_dir: Path,
    policy_path: Path | None,
    request: str,
    script_path: Path | None,
    live: bool,
    base_url: str | None,
    model: str | None,
    max_steps: int,
    claims: ClaimsMode,
    actor: str,
    agent: str,
    team: str,
    run_id: str | None,
    wait_seconds: float | None,
    as_json: bool,
    telemetry: Telemetry | None,
) -> int:
    """Run REQUEST through the governed agent loop once and store the run.

    A held call ends the run as waiting_approval; review it with `proctor approvals`, then
    `proctor approvals resume RUN_ID`.
    """
    if (script_path is None) == (not live):
        raise click.UsageError("give exactly one of --script FILE or --live")
    if live:
        spec = ProviderSpec(kind="openai", base_url=base_url, model=model)
    else:
        assert script_path is not None
        spec = ProviderSpec(kind="replay", script=_load_script(script_path))
    run_id = run_id or f"run-{secrets.token_hex(4)}"
    store = RunStore(state_dir)
    if store.path(run_id).exists():
        raise click.BadParameter(f"run {run_id} already exists", param_hint="--run-id")
    try:
        provider = build_provider(spec)
    except HarnessError as exc:
        click.echo(f"error: {exc}", err=True)
        return codes.SKIPPED if live else codes.USAGE
    awaited = wait_seconds is not None
    with open_gateway(
        state_dir,
        policy_path,
        held_calls="awaited" if awaited else "detached",
        telemetry=telemetry,
    ) as gateway:
        loop = AgentLoop(
            provider,
            gateway.firewall,
            max_steps=max_steps,
            claims=claims,
            turn_observer=telemetry.model_turn if telemetry is not None else None,
        )
        state = loop.start(request, run_id=run_id, principal=Principal(actor, agent, team))
        if wait_seconds is not None and state.held is not None:
            click.echo(
                f"{state.held.approval_id} is held; waiting up to {wait_seconds:g}s for "
                f"`proctor approvals approve {state.held.approval_id} --reviewer NAME`",
                err=True,
            )
            approvals, firewall = gateway.approvals, gateway.firewall
            state = wait_for_reviews(loop, state, approvals, firewall, wait_seconds)
    store.save(StoredRun(provider=spec, max_steps=max_steps, claims=claims, state=state))
    print_run(state, as_json=as_json)
    return codes.OK if state.status in ("completed", "waiting_approval") else codes.CHECK_FAILED
