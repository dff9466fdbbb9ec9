"""`proctor mutate`: prove the suite notices each rule and budget being weakened."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING

import click

from harness import _exit_codes as codes
from harness._mutants_file import DEFAULT_MUTANTS_FILE, load_equivalents
from harness._mutate_run import MutantResult, mutate_suite
from harness._suite import load_checked_suite
from harness.cli._options import DEFAULT_SCENARIOS, suite_options

if TYPE_CHECKING:
    from harness._select import Selection


@click.command("mutate")
@suite_options
@click.option(
    "--policy",
    "policy_path",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    default=None,
    help="Mutate only this policy file [default: every policy a scenario runs with].",
)
@click.option(
    "--mutants-file",
    type=click.Path(dir_okay=False, path_type=Path),
    default=DEFAULT_MUTANTS_FILE,
    show_default=True,
    help="Mutants accepted as equivalent, each with a reason.",
)
@click.option(
    "-j",
    "--jobs",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="Mutants run in this many processes (verdicts are identical either way).",
)
def mutate_command(
    scenario_paths: tuple[Path, ...],
    selection: Selection,
    policy_path: Path | None,
    mutants_file: Path,
    jobs: int,
) -> int:
    """Weaken each rule and budget in turn and run the suite against every mutant.

    Weakenings only: a rule's effect one step weaker (block -> require_approval -> allow) or
    the rule disabled; an allow rule's match selectors and conditions each dropped and each
    condition loosened (path_prefix to its parent, a top-level folder to the string prefix
    that also accepts siblings, regex to '.*', max/max_length x1000, min -1000); a block or
    require_approval rule's conditions narrowed (a deeper folder, a tighter bound); a budget's
    limit raised 1000-fold, its window shrunk 60-fold, the budget deleted. A mutant is killed
    when a check that passes against the real policy fails (or its contract breaks). Survivors
    are printed with the weakening that survived; mark a true equivalent in the mutants file
    (policy, target, mutation, reason).

    Exit codes: 0 every mutant killed or equivalent, 2 a mutant survived, 3 the suite or the
    mutants file is invalid.
    """
    scenarios = load_checked_suite(list(scenario_paths) or [DEFAULT_SCENARIOS], selection=selection)
    equivalents = load_equivalents(mutants_file)
    only = str(policy_path) if policy_path is not None else None
    started = time.monotonic()
    results = mutate_suite(
        scenarios, only=only, equivalents=equivalents, jobs=jobs, progress=_progress
    )
    elapsed = time.monotonic() - started
    counts = {
        v: sum(1 for r in results if r.verdict == v) for v in ("killed", "survived", "equivalent")
    }
    survivors = [r for r in results if r.verdict == "survived"]
    if survivors:
        click.echo(f"\nSurviving mutants ({len(survivors)}):")
        for r in survivors:
            click.echo(f"  ✗ {r.policy_file} {r.mutant.target} {r.mutant.mutation}: "
                       f"{r.mutant.description} — no scenario noticed")  # fmt: skip
    click.echo(
        f"\n{len(results)} mutant(s): {counts['killed']} killed, {counts['survived']} survived, "
        f"{counts['equivalent']} equivalent · {elapsed:.1f}s"
    )
    code = codes.REGRESSED if survivors else codes.OK
    click.echo(f"exit {code}: " + ("a weakened policy passes the suite" if survivors else "clean"))
    return code


def _progress(result: MutantResult) -> None:
    mutant = result.mutant
    line = f"{result.verdict:<10} {result.policy_file} {mutant.target} {mutant.mutation}"
    if result.kill is not None:
        line += f" (by {result.kill.scenario_id}: {result.kill.detail})"
    elif result.equivalent is not None:
        line += f" (equivalent: {result.equivalent.reason})"
    else:
        line += f" ({mutant.description})"
    click.echo(line, err=True)
