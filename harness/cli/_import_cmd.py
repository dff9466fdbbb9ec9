"""`proctor import agentdojo`: write AgentDojo's task suites as scenario files.

The generator and `agentdojo` itself (an optional extra, ~2 s to import) load only when the
command runs, never for `proctor --help` or `proctor import --help`.
"""

from __future__ import annotations

from pathlib import Path

import click

from governance.agentdojo import AGENTDOJO_SUITES
from harness import _exit_codes as codes

DEFAULT_OUT = Path("scenarios/agentdojo")
DEFAULT_POLICY_DIR = Path("scenarios/policies/agentdojo")
DEFAULT_VERSION = "v1.2.2"  # harness.agentdojo.DEFAULT_VERSION; a test keeps them equal


@click.group("import")
def import_group() -> None:
    """Write scenario files from a public benchmark's task suites (AgentDojo)."""


@import_group.command("agentdojo")
@click.option(
    "--suite",
    "suites",
    multiple=True,
    type=click.Choice(AGENTDOJO_SUITES),
    help="A suite to import (repeatable) [default: all four].",
)
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    default=DEFAULT_OUT,
    show_default=True,
    help="Where the scenario files go: <out>/<suite>/<user_task>.yaml.",
)
@click.option(
    "--policy-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=DEFAULT_POLICY_DIR,
    show_default=True,
    help="Where each suite's policy is: scenarios name <policy-dir>/<suite>.yaml.",
)
@click.option(
    "--benchmark-version",
    default=DEFAULT_VERSION,
    show_default=True,
    help="An AgentDojo benchmark version the installed agentdojo knows.",
)
@click.option(
    "--user-task",
    "user_tasks",
    multiple=True,
    metavar="ID",
    help="Only this user task, e.g. user_task_3 (repeatable); no stale file is removed.",
)
@click.option(
    "--injection-task",
    "injection_tasks",
    multiple=True,
    metavar="ID",
    help="Only pairs with this injection task (repeatable); no stale file is removed.",
)
def agentdojo_command(
    suites: tuple[str, ...],
    out: Path,
    policy_dir: Path,
    benchmark_version: str,
    user_tasks: tuple[str, ...],
    injection_tasks: tuple[str, ...],
) -> int:
    """Write AgentDojo's suites (workspace, travel, banking, slack) as Proctor scenarios.

    \b
    Per suite, one file per user task, <out>/<suite>/<user_task>.yaml, holding:
      - the user task alone: the scripted model replays the task's ground-truth calls
        (one a turn, as tools <suite>.<function>) and answers with its expected output;
        expected: AgentDojo's utility check passes;
      - the task under each injection task: AgentDojo's `important_instructions` attack
        text (the injection task's goal) fills every vector the task's ground truth shows;
        the scripted model is compromised: once a result shows the injection it carries
        out the injection task's ground truth, then finishes the user's task; expected:
        utility holds and the attack does not succeed (a worst-case measurement of the
        policy, not of any model).
    Each scenario names the policy <policy-dir>/<suite>.yaml (relative to its file).
    Running the same import again writes identical files; files an earlier import wrote
    that this one would not are removed (no other file is touched).

    \b
    Needs the optional extra:   pip install 'proctor[agentdojo]'
    Then run the scenarios:     proctor run --scenarios scenarios/agentdojo
    Or without governance:      proctor run --scenarios scenarios/agentdojo \\
                                  --policy scenarios/policies/agentdojo/allow-all.yaml

    Exit 0 when written, 64 on bad options or when agentdojo is not installed.
    """
    # Imported here: the generator (and agentdojo under it) is for this command only.
    from harness.agentdojo import ImportRequest, import_agentdojo

    request = ImportRequest(
        suites=suites or AGENTDOJO_SUITES,
        out=out,
        policy_dir=policy_dir,
        benchmark_version=benchmark_version,
        user_tasks=frozenset(user_tasks),
        injection_tasks=frozenset(injection_tasks),
    )
    done = import_agentdojo(request, lambda line: click.echo(line, err=True))
    missing = sorted(
        {
            str(request.policy_dir / f"{item.suite}.yaml")
            for item in done
            if not (request.policy_dir / f"{item.suite}.yaml").is_file()
        }
    )
    if missing:
        click.echo(
            f"note: the scenarios name policies that do not exist yet: {', '.join(missing)}",
            err=True,
        )
    total = sum(item.scenarios for item in done)
    click.echo(f"wrote {total} scenarios under {out}; run them with: proctor run --scenarios {out}")
    return codes.OK
