"""`proctor run --shard I/N`: run one shard of the suite and record what `proctor merge` checks.

A shard is scored, not gated: the gate is a property of the whole suite (lost scenarios,
coverage, rates), which only the merge sees. Its exit code is the checks' (0 clean, 1 a check
of this shard failed; 3/64/70 as for any run), so a failing check is visible in the shard's job
as well as in the merge, which gates it.
"""

from __future__ import annotations

import dataclasses
import os
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from governance import digest
from harness._manifest import REPORT_KEY_ENV, bytes_digest
from harness._shard import (
    SHARD_RECORD_NAME,
    BaselineRecord,
    SelectionRecord,
    Shard,
    ShardOptions,
    ShardRecord,
    ShardSelected,
    ShardSpecError,
    suite_digest,
)

if TYPE_CHECKING:
    from governance.telemetry import Telemetry
    from harness._baseline import Baseline
    from harness._scenario_load import LoadedScenario
    from harness._select import Selection
    from harness._suite_check import CheckedSuite
    from harness._suite_workers import Progress

F = TypeVar("F", bound=Callable[..., Any])


def _parse_shard(_: click.Context, __: click.Parameter, value: str | None) -> Shard | None:
    if value is None:
        return None
    try:
        return Shard.parse(value)
    except ShardSpecError as exc:
        raise click.BadParameter(str(exc), param_hint="--shard") from None


def shard_option(func: F) -> F:
    return click.option(
        "--shard",
        metavar="I/N",
        default=None,
        callback=_parse_shard,
        help="Run only the I-th of N shards (1 <= I <= N) of the selected scenarios: scenario s "
        "is in shard sha256(s) mod N + 1, so adding a scenario moves no other one (shard sizes "
        "vary by a few). Scored, not gated: `proctor merge` of all N report dirs gates the "
        "whole suite. Exit 0 or 1 (a check of this shard failed).",
    )(func)


def refuse_shard_combination(shard: Shard | None, provider: str, record: object) -> None:
    if shard is None:
        return
    if provider != "replay" or record is not None:
        raise click.UsageError(
            "--shard runs the deterministic replay suite (--provider replay, no --record); "
            "shard a live or cassette run by selecting scenarios (--id, -k, --tag) instead"
        )


@dataclasses.dataclass(frozen=True, slots=True)
class RunOptions:
    """What the command line said that changes results (recorded in shard.json)."""

    provider: str
    scenario_paths: tuple[Path, ...]
    selection: Selection
    baseline_path: Path | None
    baseline_ref: str | None
    no_baseline: bool
    fail_on_drift: bool

    def record(self) -> ShardOptions:
        chosen = self.selection
        return ShardOptions(
            provider=self.provider,
            scenarios=[p.as_posix() for p in self.scenario_paths],
            selection=SelectionRecord(
                ids=list(chosen.ids),
                expression=chosen.expression,
                tags=list(chosen.tags),
                limit=chosen.limit,
            ),
            fail_on_drift=self.fail_on_drift,
        )


# -- what a shard and the merge both compute -----------------------------------------------------


@dataclasses.dataclass(frozen=True, slots=True)
class GateBaseline:
    record: BaselineRecord
    baseline: Baseline | None = None
    traces: dict[str, dict[str, Any]] | None = None
    acknowledged: dict[tuple[str, str], str] = dataclasses.field(default_factory=dict)


def gate_baseline(path: Path | None, ref: str | None, no_baseline: bool) -> GateBaseline:
    """The baseline an unsharded `proctor run` with these options would gate against, loaded
    and verified, with a digest of it and of the acknowledgements that count with it."""
    from harness.cli._eval_common import acknowledgements, baseline_from_file, baseline_from_ref
    from harness.cli._options import DEFAULT_BASELINE

    if no_baseline:
        return GateBaseline(BaselineRecord(path=None))
    acknowledged: dict[tuple[str, str], str] = {}
    if ref is not None:
        baseline, traces = baseline_from_ref(ref, path or DEFAULT_BASELINE)
        acknowledged = acknowledgements(baseline, path or DEFAULT_BASELINE)
    elif path is not None or DEFAULT_BASELINE.is_file():
        baseline, traces = baseline_from_file(path or DEFAULT_BASELINE)
    else:
        return GateBaseline(BaselineRecord(path=None))
    acks = sorted([sid, inputs, reason] for (sid, inputs), reason in acknowledged.items())
    found = digest({"baseline": baseline.model_dump(mode="json"), "acknowledged": acks})
    shown = (path or DEFAULT_BASELINE).as_posix()
    return GateBaseline(BaselineRecord(path=shown, ref=ref, digest=found), baseline, traces,
                        acknowledged)  # fmt: skip


def digest_of_suite(scenarios: Sequence[LoadedScenario]) -> str:
    """The whole selected suite: each scenario's inputs (definition, policy, registry,
    provider) and its whole definition (expectations too: they decide the score)."""
    from harness._suite import planned_inputs

    inputs = planned_inputs(scenarios)
    return suite_digest(
        (item.scenario_id, inputs[item.scenario_id].digest,
         digest(item.scenario.model_dump(mode="json")))
        for item in scenarios
    )  # fmt: skip


def write_record(report_dir: Path, record: ShardRecord) -> Path:
    """shard.json, atomically: its presence says the shard directory is complete."""
    target = report_dir / SHARD_RECORD_NAME
    fd, tmp = tempfile.mkstemp(dir=report_dir, prefix=".shard-", suffix=".json")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(record.model_dump_json(indent=2) + "\n")
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target


# -- the shard run -------------------------------------------------------------------------------


def run_shard(
    shard: Shard,
    scenarios: CheckedSuite,
    options: RunOptions,
    *,
    jobs: int,
    report_dir: Path | None,
    progress: Progress,
    telemetry: Telemetry | None = None,
) -> int:
    from harness._code_state import code_state, current_commit, tree_state
    from harness._suite import assemble, new_run_id, run_checked_suite
    from harness._suite_check import CheckedSuite
    from harness.cli._eval_common import report_key
    from harness.reports import exit_meaning, render_terminal, write_reports
    from harness.reports._write import prepare_report_dir

    baseline = gate_baseline(options.baseline_path, options.baseline_ref, options.no_baseline)
    whole = digest_of_suite(scenarios)
    part = CheckedSuite(item for item in scenarios if shard.holds(item.scenario_id))
    ids = tuple(part.ids())
    flags = scenarios.selected.flags if scenarios.selected is not None else ()
    part.selected = ShardSelected(flags, ids, len(scenarios), shard=str(shard))
    run_id = new_run_id()
    report_dir = report_dir or Path("reports") / run_id
    report_dir.mkdir(parents=True, exist_ok=True)
    (report_dir / SHARD_RECORD_NAME).unlink(missing_ok=True)  # an earlier shard's must not vouch
    trace_dir = prepare_report_dir(report_dir)
    run = run_checked_suite(
        part,
        provider=_replay(),
        jobs=jobs,
        run_id=run_id,
        progress=progress,
        trace_dir=trace_dir,
        telemetry=telemetry,
    )
    result = assemble(run.run_id, part, run.traces, selected=part.selected)
    result = dataclasses.replace(result, fail_on_drift=options.fail_on_drift)
    click.echo(render_terminal(result))
    key = report_key()
    written = write_reports(result, report_dir, key=key)
    record = ShardRecord(
        index=shard.index,
        count=shard.count,
        run_id=run.run_id,
        scenario_ids=list(ids),
        suite_digest=whole,
        suite_size=len(scenarios),
        commit=current_commit(),
        tree=tree_state(),
        code=code_state(),
        baseline=baseline.record,
        options=options.record(),
        report_digest=bytes_digest(written["report.json"].read_bytes()),
    ).signed(key)
    write_record(report_dir, record)
    click.echo(f"reports: {report_dir}")
    signed = f"signed with {REPORT_KEY_ENV}" if key else f"unsigned ({REPORT_KEY_ENV} is not set)"
    click.echo(f"shard {shard}: {len(ids)} of {len(scenarios)} scenarios; {SHARD_RECORD_NAME} "
               f"{signed}")  # fmt: skip
    click.echo(
        f"NOT GATED: shard {shard} is scored only; `proctor merge` of all {shard.count} shard "
        "directories gates the whole suite"
    )
    code = result.exit_code(fail_on_drift=options.fail_on_drift)
    click.echo(f"exit {code}: {exit_meaning(result)}")
    return code


def _replay() -> Any:
    from harness._scenario_runner import ProviderChoice

    return ProviderChoice()


def selection_of(record: SelectionRecord) -> Selection:
    from harness._select import Selection

    return Selection.of(
        ids=record.ids, expression=record.expression, tags=record.tags, limit=record.limit
    )
