"""`proctor smoke`: the live provider path end to end, against a real vendor or the bundled stub.

No credential anywhere means exit 77 (skipped), never a pass. `--stub` needs no credential: it
serves the vendor stub on a free loopback port and points the live provider at it.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

import click
from tabulate import tabulate

from harness import _exit_codes as codes
from harness._errors import HarnessError
from harness._smoke import SmokeReport, run_smoke
from harness.cli._otel import otel_option
from harness.providers._settings import (
    ENV_API_KEY,
    ENV_BASE_URL,
    ENV_MODEL,
    ProviderSettings,
    resolve_settings,
)
from stubs.openai_stub import DEFAULT_MODEL, StubStartError, running_stub

if TYPE_CHECKING:
    from governance.telemetry import Telemetry

SKIPPED = "SKIPPED: no live credential"
STUB_KEY = "proctor-smoke"  # the stub accepts any non-empty key
STUB_TIMEOUT = 30.0


@click.command("smoke")
@click.option("--stub", is_flag=True, help="Run against the bundled vendor stub on loopback.")
@click.option("--base-url", default=None, help=f"Live endpoint [env {ENV_BASE_URL}].")
@click.option(
    "--model",
    default=None,
    help=f"Live model [env {ENV_MODEL}]; with --stub, a stub model such as "
    f"{DEFAULT_MODEL}:prose-tool-call.",
)
@click.option("--api-key", default=None, help=f"Live API key [env {ENV_API_KEY}].")
@click.option(
    "--timeout",
    type=click.FloatRange(min=0, min_open=True),
    default=None,
    help="Seconds to wait for each vendor response [default 60].",
)
@click.option(
    "--max-retries",
    type=click.IntRange(min=0),
    default=None,
    help="Retries after a 429, 5xx or connection error [default 2].",
)
@click.option(
    "--state-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="A new or empty directory for the smoke runs' state [default: a temp dir, removed "
    "when every check passed].",
)
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@otel_option("smoke")
def smoke(
    stub: bool,
    base_url: str | None,
    model: str | None,
    api_key: str | None,
    timeout: float | None,
    max_retries: int | None,
    state_dir: Path | None,
    as_json: bool,
    telemetry: Telemetry | None,
) -> int:
    """Prove the live provider path: real HTTP, tool-name encoding, governance, audit.

    Exits 0 when every check passed, 1 when one failed, 77 when no credential is configured.
    """
    if stub:
        if base_url is not None or api_key is not None:
            raise click.UsageError("--stub serves its own endpoint: drop --base-url/--api-key")
        return _against_stub(model, timeout, max_retries, state_dir, as_json, telemetry)
    settings = resolve_settings(base_url=base_url, model=model, api_key=api_key, timeout=timeout)
    if settings is None:
        _skip(as_json)
        return codes.SKIPPED
    return _smoke(
        _with_retries(settings, max_retries),
        state_dir,
        as_json,
        target="live vendor",
        telemetry=telemetry,
    )


def _skip(as_json: bool) -> None:
    hint = (
        f"set {ENV_API_KEY}, {ENV_BASE_URL} and {ENV_MODEL} (environment or .env), pass "
        "--api-key/--base-url/--model, or run `proctor smoke --stub`"
    )
    if as_json:
        click.echo(json.dumps({"result": "skipped", "reason": "no live credential", "fix": hint}))
        return
    click.echo(SKIPPED)
    click.echo(f"  {hint}. This is not a pass: nothing was run.")


def _with_retries(settings: ProviderSettings, max_retries: int | None) -> ProviderSettings:
    return (
        settings if max_retries is None else dataclasses.replace(settings, max_retries=max_retries)
    )


def _against_stub(
    model: str | None,
    timeout: float | None,
    max_retries: int | None,
    state_dir: Path | None,
    as_json: bool,
    telemetry: Telemetry | None,
) -> int:
    try:
        with running_stub() as url:
            settings = ProviderSettings(
                base_url=url,
                model=model or DEFAULT_MODEL,
                api_key=STUB_KEY,
                timeout=timeout or STUB_TIMEOUT,
            )
            return _smoke(
                _with_retries(settings, max_retries),
                state_dir,
                as_json,
                target="vendor stub",
                telemetry=telemetry,
            )
    except StubStartError as exc:
        click.echo(f"error: {exc}", err=True)
        return codes.INTERNAL


def _smoke(
    settings: ProviderSettings,
    state_dir: Path | None,
    as_json: bool,
    *,
    target: str,
    telemetry: Telemetry | None = None,
) -> int:
    temporary = state_dir is None
    root = Path(tempfile.mkdtemp(prefix="proctor-smoke-")) if state_dir is None else state_dir
    try:
        report = run_smoke(settings, state_dir=root, telemetry=telemetry)
    except HarnessError as exc:
        raise click.BadParameter(str(exc), param_hint="--state-dir") from None
    if as_json:
        click.echo(json.dumps({**report.to_dict(), "target": target}, indent=2))
    else:
        _print(report, target)
    if report.passed:
        if temporary:
            shutil.rmtree(root, ignore_errors=True)
        return codes.OK
    if not as_json:
        click.echo(f"state kept for inspection: {root}")
    return codes.CHECK_FAILED


def _print(report: SmokeReport, target: str) -> None:
    click.echo(f"smoke: {report.model} at {report.base_url} ({target}, {report.provider})")
    if target == "vendor stub":
        click.echo(
            "  the live provider path against the bundled stub: this checks Proctor's wiring, "
            "not a model's quality"
        )
    rows = [(c.scenario, c.name, "PASS" if c.passed else "FAIL", c.detail) for c in report.checks]
    click.echo(
        tabulate(
            rows,
            headers=("scenario", "check", "result", "why"),
            maxcolwidths=[None, None, None, 90],
        )
    )
    total = len(report.checks)
    if report.passed:
        click.echo(f"smoke passed: {total}/{total} checks")
        return
    failed = report.failed
    names = ", ".join(f"{c.scenario}/{c.name}" for c in failed)
    click.echo(f"smoke FAILED: {len(failed)} of {total} checks failed: {names}")
