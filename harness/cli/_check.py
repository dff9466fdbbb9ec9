"""`proctor check`: schema and contract check of the suite; runs nothing."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from harness import _exit_codes as codes
from harness.cli._options import DEFAULT_SCENARIOS, suite_options

if TYPE_CHECKING:
    from harness._select import Selection


@click.command("check")
@suite_options
def check_command(scenario_paths: tuple[Path, ...], selection: Selection) -> int:
    """Validate every scenario against its schema and the registry/policy it runs with.

    Exit 0 when the suite may run, 3 (naming file, line, scenario and the closest real name)
    when it may not.
    """
    # Imported here: `proctor check --help` needs only the options above.
    from harness._suite_check import load_checked_suite

    def note(line: str) -> None:
        click.echo(f"note: {line}", err=True)

    scenarios = load_checked_suite(
        list(scenario_paths) or [DEFAULT_SCENARIOS], note=note, selection=selection
    )
    click.echo(f"OK: {len(scenarios)} scenarios pass their schema and contract")
    return codes.OK
