"""`proctor merge`: the shards of a `--shard I/N` run, merged into one report directory, scored
and gated as the unsharded run would be, without running anything or needing a provider."""

from __future__ import annotations

import json
from pathlib import Path

import click
from pydantic import ValidationError

from governance.config import decode_text, read_capped
from harness._manifest import MANIFEST_NAME, bytes_digest
from harness._merge import (
    CodeHere,
    ShardDir,
    ShardsRefused,
    listing,
    other_code_problems,
    partition_problems,
    record_problems,
)
from harness._shard import SHARD_RECORD_NAME, ShardRecord
from harness._trace import Trace
from harness.cli._eval_common import finish, report_key
from harness.cli._score import RunFiles, read_run
from harness.cli._shard_run import digest_of_suite, gate_baseline, selection_of


@click.command("merge")
@click.argument(
    "shard_dirs",
    metavar="DIR...",
    nargs=-1,
    required=True,
    type=click.Path(exists=True, file_okay=False, path_type=Path),
)
@click.option(
    "--report-dir",
    required=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="Where the merged run's reports and traces go (not one of the shard directories).",
)
@click.option(
    "--run-id",
    default=None,
    help="The merged run's id [default: the shards' run id when they share one, else new]. "
    "Traces are re-labelled with it; their digests do not include it.",
)
@click.option(
    "--allow-other-commit",
    is_flag=True,
    help="Merge even though this checkout's commit, uncommitted changes or code (Proctor, "
    "Python, dependencies) differ from the shards': you are gating old results with new code.",
)
def merge_command(
    shard_dirs: tuple[Path, ...], report_dir: Path, run_id: str | None, allow_other_commit: bool
) -> int:
    """Merge the report directories of `proctor run --shard I/N` (all N), then score and gate.

    The merged traces, report.json, the other reports and the exit code are those of the
    unsharded run of the same suite against the same baseline: the merge gates with the
    baseline and options the shards recorded (shard.json), reading the scenario files here.

    Refused (exit 3, naming the directories): shards of different commits, uncommitted
    changes, code (Proctor, Python, dependency versions, harness source), suites, baselines or
    options; shards whose commit, uncommitted changes or code differ from this merge's (the
    merge scores and gates them: --allow-other-commit merges anyway, and you are gating old
    results with new code; outside a git repository commits and uncommitted changes are not
    compared, the code still is); a missing shard; a shard or scenario given twice; a directory
    that is not a complete shard (no shard.json: killed before the end) or whose files do not
    verify (manifest digests, consistency, HMAC signatures: signed shards need
    PROCTOR_REPORT_KEY set, unsigned ones are refused when it is set); scenario files here that
    differ from the ones the shards ran. Exit codes otherwise as `proctor run`.
    """
    out = report_dir.resolve()
    for directory in shard_dirs:
        if out == directory.resolve() or out.is_relative_to(directory.resolve()):
            raise click.BadParameter(
                f"{report_dir} is (inside) the shard directory {directory}: merge into a new "
                "directory, e.g. reports/all",
                param_hint="--report-dir",
            )
    if run_id is not None and (not run_id.strip() or not run_id.isprintable()):
        raise click.BadParameter(
            f"{run_id!r} is not a run id (e.g. ci-1234)", param_hint="--run-id"
        )
    key = report_key()
    shards = _read_records(shard_dirs, key)
    problems = record_problems(shards)
    if problems:
        raise ShardsRefused(shards[0].where, None, listing("the shards are not one run", problems))
    _refuse_other_code(shards, allow_other_commit)
    first = shards[0].record

    traces: dict[str, Trace] = {}
    for shard in shards:
        traces.update(_verified_traces(Path(shard.where), shard.record, key))

    from harness._suite import assemble, load_checked_suite, new_run_id, trace_names
    from harness._trace_store import StoredTraces
    from harness.cli._live_run import without_live_only
    from harness.cli._options import DEFAULT_SCENARIOS
    from harness.reports._write import prepare_report_dir

    options = first.options
    paths = [Path(p) for p in options.scenarios] or [DEFAULT_SCENARIOS]
    suite = without_live_only(load_checked_suite(paths, selection=selection_of(options.selection)))
    found = digest_of_suite(suite)
    if found != first.suite_digest:
        raise ShardsRefused(
            paths[0], None,
            f"the scenario files here (suite digest {found}) are not the ones the shards ran "
            f"({first.suite_digest}, at commit {first.commit or '(no repo)'}): merge in a "
            "checkout of the shards' commit",
        )  # fmt: skip
    problems = partition_problems(suite.ids(), shards)
    if problems:
        raise ShardsRefused(shards[0].where, None, listing("the shards do not cover the suite "
                                                            "once", problems))  # fmt: skip
    recorded = first.baseline
    gating = gate_baseline(
        Path(recorded.path) if recorded.path is not None else None,
        recorded.ref,
        no_baseline=recorded.path is None,
    )
    if gating.record != recorded:
        raise ShardsRefused(
            recorded.path or "(no baseline)", None,
            f"the baseline here ({gating.record.digest}) is not the one the shards recorded "
            f"({recorded.digest}): merge where the shards ran, with the same baseline",
        )  # fmt: skip

    run_ids = {shard.record.run_id for shard in shards}
    run_id = run_id or (run_ids.pop() if len(run_ids) == 1 else new_run_id())
    (report_dir / SHARD_RECORD_NAME).unlink(missing_ok=True)  # a merged run is no shard
    store = StoredTraces(prepare_report_dir(report_dir), trace_names(suite))
    for sid in suite.ids():  # the unsharded run's order
        trace = traces.pop(sid)
        store.add(trace if trace.run_id == run_id else trace.model_copy(update={"run_id": run_id}))
    click.echo(f"merged {len(shards)} shards ({len(store)} scenarios) into {report_dir}")
    result = assemble(
        run_id,
        suite,
        store,
        baseline=gating.baseline,
        baseline_traces=gating.traces,
        acknowledged=gating.acknowledged,
        selected=suite.selected,
    )
    return finish(result, report_dir, fail_on_drift=options.fail_on_drift)


def _refuse_other_code(shards: list[ShardDir], allow: bool) -> None:
    from harness._code_state import code_state, current_commit, tree_state

    here = CodeHere(current_commit(), tree_state(), code_state())
    problems = other_code_problems(shards, here)
    if not problems:
        return
    named = ", ".join(shard.where for shard in shards)
    head = (
        f"the shards ({named}) ran other code than this merge (at commit "
        f"{here.commit or '(no repository)'})"
    )
    if allow:
        click.echo(listing(f"--allow-other-commit: gating old results with new code: {head}",
                           problems), err=True)  # fmt: skip
        return
    fix = ("\nmerge in a checkout of the shards' commit and code, or pass --allow-other-commit "
           "to gate old results with new code")  # fmt: skip
    raise ShardsRefused(shards[0].where, None, listing(head, problems) + fix)


def _read_records(shard_dirs: tuple[Path, ...], key: bytes | None) -> list[ShardDir]:
    seen: dict[Path, Path] = {}
    problems: list[str] = []
    shards: list[ShardDir] = []
    for directory in shard_dirs:
        real = directory.resolve()
        if real in seen:
            problems.append(f"{directory}: given twice (also as {seen[real]})")
            continue
        seen[real] = directory
        path = directory / SHARD_RECORD_NAME
        if not path.is_file():
            problems.append(
                f"{directory}: no {SHARD_RECORD_NAME}, so not a complete shard directory (a "
                "shard run writes it last; re-run that shard with `proctor run --shard I/N`)"
            )
            continue
        try:
            raw = read_capped(path, ShardsRefused, subject="shard record")
            text = decode_text(raw, str(path), ShardsRefused, subject="shard record",
                               yaml_breaks=False)  # fmt: skip
            record = ShardRecord.model_validate_json(text)
        except ValidationError as exc:
            error = exc.errors(include_url=False)[0]
            where = ".".join(str(p) for p in error["loc"]) or "(top level)"
            problems.append(f"{path}: not a shard record: {where}: {error['msg']}")
            continue
        except (OSError, ShardsRefused) as exc:
            problems.append(f"{path}: unreadable: {exc}")
            continue
        trouble = record.signature_problem(key)
        if trouble is not None:
            problems.append(f"{path}: {trouble}")
            continue
        shards.append(ShardDir(str(directory), record))
    if problems:
        raise ShardsRefused(str(shard_dirs[0]), None, listing("cannot merge", problems))
    return shards


def _verified_traces(directory: Path, record: ShardRecord, key: bytes | None) -> dict[str, Trace]:
    """The shard's traces, once its run verifies (manifest, report.json, traces) and its
    shard.json is the record of that very run."""
    from harness._run_verify import verify_run

    files = _quick_read(directory) or read_run(directory)
    verify_run(
        str(directory),
        report_bytes=files.report_bytes,
        report=files.report,
        manifest_text=files.manifest_text,
        traces=files.traces,
        key=key,
    )
    problems = []
    if bytes_digest(files.report_bytes) != record.report_digest:
        problems.append(f"report.json is not the report of the run {SHARD_RECORD_NAME} records")
    if files.run_id != record.run_id:
        problems.append(f"run id {files.run_id!r}, but {SHARD_RECORD_NAME} says {record.run_id!r}")
    ran = [str(stored.entry.get("id")) for stored in files.traces]
    if sorted(ran) != sorted(record.scenario_ids):
        problems.append(f"report.json lists other scenarios than {SHARD_RECORD_NAME}")
    if problems:
        raise ShardsRefused(directory, None, listing("the shard does not verify", problems))
    return {stored.trace.scenario_id: stored.trace for stored in files.traces}


def _quick_read(directory: Path) -> RunFiles | None:
    """`read_run(directory)`, each file parsed straight from its bytes (the line-mapped reader
    costs a millisecond a trace); None when anything does not parse so, and `read_run` reads it
    again to name the file, line and problem. What is read is verified the same either way."""
    from harness._run_verify import StoredTrace

    try:
        report_bytes = read_capped(directory / "report.json", ShardsRefused, subject="report")
        report = json.loads(report_bytes)
        root = directory.resolve()
        traces = []
        for entry in report["scenarios"]:
            path = (directory / str(entry["trace"])).resolve()
            if not path.is_relative_to(root):
                return None
            raw = read_capped(path, ShardsRefused, subject="stored trace")
            traces.append(StoredTrace(entry, str(entry["trace"]), Trace.model_validate_json(raw)))
        manifest = directory / MANIFEST_NAME
        manifest_text = manifest.read_bytes().decode("utf-8") if manifest.is_file() else None
    except (OSError, ValueError, KeyError, TypeError, AttributeError, ShardsRefused):
        return None  # ValidationError and JSONDecodeError are ValueErrors
    if not isinstance(report, dict) or isinstance(report.get("live_run"), dict):
        return None
    return RunFiles(
        run_id=str(report.get("run_id", directory.name)),
        report_bytes=report_bytes,
        report=report,
        manifest_text=manifest_text,
        traces=traces,
    )
