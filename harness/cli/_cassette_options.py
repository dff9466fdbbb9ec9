"""`proctor run`'s cassette options: `--provider cassette:DIR`, `--record DIR`,
`--record-missing`, how they combine, and the loud report of cassette misses."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, TypeVar

import click

from harness._results import CheckResult

F = TypeVar("F", bound=Callable[..., Any])

PROVIDERS = ("replay", "openai", "stub")
CASSETTE_PREFIX = "cassette:"


def _provider(ctx: click.Context, param: click.Parameter, value: str) -> str:
    if value in PROVIDERS:
        return value
    if value.startswith(CASSETTE_PREFIX) and value[len(CASSETTE_PREFIX) :].strip():
        directory = Path(value[len(CASSETTE_PREFIX) :])
        if not directory.is_dir():
            raise click.BadParameter(
                f"no cassette directory at {directory} (record one with "
                f"--provider stub|openai --record {directory})",
                ctx=ctx,
                param=param,
            )
        return value
    raise click.BadParameter(
        f"{value!r} is none of replay, openai, stub, cassette:DIR", ctx=ctx, param=param
    )


def provider_options(func: F) -> F:
    """`--provider` (with `cassette:DIR`), `--record DIR` and `--record-missing`."""
    func = click.option(
        "--record-missing",
        is_flag=True,
        help="With --record: replay the turns the cassette already holds (they must match) and "
        "ask the live provider only for the gaps: scenarios without a file, turns beyond it.",
    )(func)
    func = click.option(
        "--record",
        "record_dir",
        type=click.Path(file_okay=False, path_type=Path),
        default=None,
        help="Keep every provider exchange of this live run in DIR, one file per scenario "
        "(request canonicalised and stripped of credentials, and the reply), for "
        "--provider cassette:DIR. Needs --provider openai or stub.",
    )(func)
    func = click.option(
        "--provider",
        default="replay",
        show_default=True,
        callback=_provider,
        metavar="replay|openai|stub|cassette:DIR",
        help="replay: the scripts (deterministic); openai: PROCTOR_LLM_*; stub: the bundled "
        "vendor stub; cassette:DIR: a recorded live run, replayed with no network (a request "
        "that differs from the recorded one fails its scenario, naming the turn, with a diff).",
    )(func)
    return func


def cassette_of(provider: str) -> Path | None:
    """The directory of `cassette:DIR`; None for any other provider."""
    if provider.startswith(CASSETTE_PREFIX):
        return Path(provider[len(CASSETTE_PREFIX) :])
    return None


def check_combination(provider: str, record_dir: Path | None, record_missing: bool) -> None:
    """Refuse what cannot be meant (exit 64): recording without a live provider, filling gaps
    without a cassette to fill."""
    if record_missing and record_dir is None:
        raise click.UsageError("--record-missing fills the gaps of a cassette: add --record DIR")
    if record_dir is not None and provider not in ("openai", "stub"):
        raise click.UsageError(
            f"--record keeps a live run: use it with --provider openai or stub, not {provider} "
            "(a replay or a cassette has nothing new to record)"
        )


def check_cassette_files(
    directory: Path, scenario_ids: Iterable[str], *, filling: bool = False
) -> None:
    """Every scenario's cassette file in `directory` reads, before anything runs: a corrupt,
    truncated or other-version file is a CassetteError naming it (exit 3). `filling`: for
    --record-missing, whose fix is to record afresh or delete the file."""
    from harness.providers._cassette_file import (
        FILL_FIX,
        REPLAY_FIX,
        cassette_path,
        load_cassette,
    )

    fix = FILL_FIX if filling else REPLAY_FIX
    for scenario_id in scenario_ids:
        load_cassette(cassette_path(directory, scenario_id), scenario_id, fix=fix)


def report_misses(checks: Iterable[CheckResult]) -> int:
    """Print each cassette miss in full (scenario, turn, the request's diff) to stderr; the
    terminal report shows checks on one line. Returns how many scenarios missed."""
    missed = [c for c in checks if c.kind == "cassette" and not c.passed]
    for check in missed:
        click.echo(f"CASSETTE MISS in {check.scenario_id}: {check.why}", err=True)
    return len(missed)
