"""`proctor run --shard I/N` + `proctor merge`: the merge of all shards is the unsharded run,
byte for byte and by exit code; shards that are not one run of one suite are refused (exit 3)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from harness import _exit_codes as codes
from harness._shard import shard_of
from harness.cli._app import cli

FAILING = """\
scenarios:
  - id: zz-new-and-failing
    description: a new scenario whose expectation does not hold
    tags: [reads]
    request: Read the README
    script:
      - calls: [{tool: kb.search, args: {query: refund window}}]
      - answer: done
    expect:
      status: completed
      must_execute: [kb.search]
      must_not_execute: [kb.search]
"""


def _cli(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args))


def _tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def _run_id(report_dir: Path) -> str:
    return str(json.loads((report_dir / "report.json").read_text(encoding="utf-8"))["run_id"])


def _shards(root: Path, count: int, *args: str) -> list[Path]:
    dirs = []
    for index in range(1, count + 1):
        out = root / f"shard-{index}"
        done = _cli("run", "--shard", f"{index}/{count}", "--report-dir", str(out), *args)
        assert done.exit_code in (codes.OK, codes.CHECK_FAILED), done.output
        assert f"NOT GATED: shard {index}/{count} is scored only" in done.output
        dirs.append(out)
    return dirs


def _merged_equals_unsharded(root: Path, *args: str, count: int = 3) -> int:
    whole = root / "whole"
    unsharded = _cli("run", "--report-dir", str(whole), *args)
    shards = _shards(root, count, *args)
    merged = _cli("merge", *map(str, shards), "--report-dir", str(root / "all"),
                  "--run-id", _run_id(whole))  # fmt: skip
    assert merged.exit_code == unsharded.exit_code, (merged.output, unsharded.output)
    assert _tree(root / "all") == _tree(whole)
    return merged.exit_code


def test_three_shards_of_the_shipped_suite_merge_to_the_unsharded_run_byte_for_byte(
    repo_copy: Path,
) -> None:
    assert _merged_equals_unsharded(repo_copy / "reports") == codes.OK
    # Every scenario ran in exactly one shard.
    ran = [json.loads((repo_copy / "reports" / f"shard-{i}" / "shard.json").read_text())
           for i in (1, 2, 3)]  # fmt: skip
    ids = [sid for record in ran for sid in record["scenario_ids"]]
    assert len(ids) == len(set(ids)) == len(_tree(repo_copy / "reports" / "whole" / "traces"))
    assert all(record["scenario_ids"] for record in ran)


def test_a_failing_check_exits_1_in_its_shard_and_in_the_merge_as_unsharded(
    repo_copy: Path,
) -> None:
    (repo_copy / "scenarios" / "zz_failing.yaml").write_text(FAILING, encoding="utf-8")
    assert _merged_equals_unsharded(repo_copy / "reports") == codes.CHECK_FAILED
    index = shard_of("zz-new-and-failing", 3)
    shard = _cli("run", "--shard", f"{index}/3", "--report-dir", str(repo_copy / "again"))
    assert shard.exit_code == codes.CHECK_FAILED, shard.output
    assert "zz-new-and-failing" in shard.output and "must_not_execute" in shard.output


def test_a_regression_exits_2_in_the_merge_as_unsharded(repo_copy: Path) -> None:
    (repo_copy / "scenarios" / "zz_failing.yaml").write_text(FAILING, encoding="utf-8")
    (repo_copy / "scenarios" / "kb.yaml").unlink()  # its scenarios are lost: a regression
    assert _merged_equals_unsharded(repo_copy / "reports") == codes.REGRESSED


@pytest.mark.parametrize("selectors", [["-k", "refund or block"], ["--limit", "7"]])
def test_shards_of_a_focused_run_merge_to_the_unsharded_focused_run(
    repo_copy: Path, selectors: list[str]
) -> None:
    assert _merged_equals_unsharded(repo_copy / "reports", *selectors) == codes.OK
    report = json.loads((repo_copy / "reports" / "all" / "report.json").read_text())
    assert report["selection"]["partial"] is True


def test_more_shards_than_scenarios_leave_some_empty_and_still_merge(repo_copy: Path) -> None:
    code = _merged_equals_unsharded(repo_copy / "reports", "--id", "refund-*", count=40)
    assert code == codes.OK


def test_the_merge_runs_no_scenario(repo_copy: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shards = _shards(repo_copy / "reports", 3)

    def refuse(*_: object, **__: object) -> None:
        raise AssertionError("the merge ran a scenario")

    import harness._scenario_runner
    import harness._suite_workers

    monkeypatch.setattr(harness._scenario_runner, "run_scenario", refuse)
    monkeypatch.setattr(harness._scenario_runner, "open_scenario_gateway", refuse)
    monkeypatch.setattr(harness._suite_workers, "run_scenario", refuse)
    monkeypatch.setattr(harness._suite_workers, "run_suite", refuse)
    done = _cli("merge", *map(str, shards), "--report-dir", str(repo_copy / "all"))
    assert done.exit_code == codes.OK, done.output


# -- refusals --------------------------------------------------------------------------------------


def _refused(done: Result, *names: str) -> None:
    assert done.exit_code == codes.INVALID_SUITE, done.output
    for name in names:
        assert name in done.output, (name, done.output)


def _merge(*dirs: Path, out: Path) -> Result:
    return _cli("merge", *map(str, dirs), "--report-dir", str(out))


def test_a_missing_or_duplicated_shard_is_refused_naming_it(repo_copy: Path) -> None:
    one, two, three = _shards(repo_copy / "r", 3)
    out = repo_copy / "all"
    _refused(_merge(one, three, out=out), "shard(s) 2/3 missing")
    _refused(_merge(one, two, two, three, out=out), f"{two}: given twice")
    copy = repo_copy / "copy-of-2"
    shutil.copytree(two, copy)
    _refused(_merge(one, two, copy, three, out=out), f"shard 2/3 is given twice: {two}, {copy}")
    assert not (out / "report.json").exists()


def test_an_incomplete_or_tampered_shard_directory_is_refused(repo_copy: Path) -> None:
    shards = _shards(repo_copy / "r", 3)
    one = shards[0]
    out = repo_copy / "all"
    (one / "shard.json").rename(repo_copy / "kept.json")  # killed before its last write
    _refused(_merge(*shards, out=out), f"{one}: no shard.json")
    (repo_copy / "kept.json").rename(one / "shard.json")
    trace = sorted((one / "traces").glob("*.json"))[0]
    kept = trace.read_bytes()
    trace.write_bytes(kept.replace(b'"status":"', b'"status":"x', 1))
    _refused(_merge(*shards, out=out), str(one), trace.name)
    edited = json.loads(kept)
    edited["final_answer"] = "a different answer"  # still a trace: only its digest can tell
    trace.write_text(json.dumps(edited, sort_keys=True, separators=(",", ":")))
    _refused(_merge(*shards, out=out), str(one), f"{trace.name}: digest")
    trace.write_bytes(kept)
    manifest = (one / "manifest.json").read_bytes()
    (one / "manifest.json").unlink()
    _refused(_merge(*shards, out=out), "manifest.json: missing")
    (one / "manifest.json").write_bytes(manifest)
    record = json.loads((one / "shard.json").read_text())
    record["scenario_ids"] = record["scenario_ids"][1:]  # a scenario dropped from the record
    (one / "shard.json").write_text(json.dumps(record))
    _refused(_merge(*shards, out=out), str(one), "other scenarios than shard.json")
    assert not (out / "report.json").exists()


def test_a_relabelled_shard_is_refused(repo_copy: Path) -> None:
    shards = _shards(repo_copy / "r", 3)
    for path, index in ((shards[0], 2), (shards[1], 1)):
        record = json.loads((path / "shard.json").read_text())
        record["index"] = index
        (path / "shard.json").write_text(json.dumps(record))
    _refused(_merge(*shards, out=repo_copy / "all"), "which shard 1/3 does not hold")


def test_a_signed_shard_record_changed_afterwards_is_refused(
    repo_copy: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PROCTOR_REPORT_KEY", "ci-secret")
    shards = _shards(repo_copy / "r", 3)
    for path in shards:  # consistently, so only the signature can tell
        record = json.loads((path / "shard.json").read_text())
        record["options"]["fail_on_drift"] = True
        (path / "shard.json").write_text(json.dumps(record))
    _refused(_merge(*shards, out=repo_copy / "all"), "signature does not verify")


def test_shards_of_different_suites_options_or_baselines_are_refused_naming_them(
    repo_copy: Path,
) -> None:
    one, two, three = _shards(repo_copy / "r", 3)
    out = repo_copy / "all"
    other = repo_copy / "other"
    drift = _cli("run", "--shard", "2/3", "--fail-on-drift", "--report-dir", str(other / "2"))
    assert drift.exit_code == codes.OK, drift.output
    _refused(_merge(one, other / "2", three, out=out), "options", str(other / "2"))
    bare = _cli("run", "--shard", "3/3", "--no-baseline", "--report-dir", str(other / "3"))
    assert bare.exit_code == codes.OK, bare.output
    _refused(_merge(one, two, other / "3", out=out), "baseline differs", str(other / "3"))
    (repo_copy / "scenarios" / "zz_failing.yaml").write_text(FAILING, encoding="utf-8")
    grown = _cli("run", "--shard", "1/3", "--report-dir", str(other / "1"))
    assert grown.exit_code in (codes.OK, codes.CHECK_FAILED), grown.output
    _refused(_merge(other / "1", two, three, out=out), "suite", str(other / "1"))
    # The scenario files here changed since the shards ran: nothing to score them against.
    _refused(_merge(one, two, three, out=out), "not the ones the shards ran")
    assert not (out / "report.json").exists()


def test_shards_of_different_commits_are_refused(repo_copy: Path) -> None:
    def git(*args: str) -> None:
        subprocess.run(["git", *args], cwd=repo_copy, check=True, capture_output=True)

    git("init", "-q")
    git("-c", "user.email=t@t", "-c", "user.name=t", "commit", "-q", "--allow-empty", "-m", "a")
    one = _shards(repo_copy / "r", 3)[0]
    git("-c", "user.email=t@t", "-c", "user.name=t", "commit", "-q", "--allow-empty", "-m", "b")
    _, two, three = _shards(repo_copy / "s", 3)
    _refused(_merge(one, two, three, out=repo_copy / "all"), "commit differs", str(one))


def _git(root: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "user.email=t@t", "-c", "user.name=t", *args],
        cwd=root, check=True, capture_output=True, text=True,
    )  # fmt: skip
    return done.stdout.strip()


def _committed(root: Path) -> None:
    """The copy as a git repository with a Python file, committed."""
    (root / "plugin.py").write_text("LIMIT = 1\n", encoding="utf-8")
    _git(root, "init", "-q")
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "a")


def test_a_merge_at_the_shards_commit_merges_and_at_a_later_one_is_refused_unless_allowed(
    repo_copy: Path,
) -> None:
    _committed(repo_copy)
    shards = _shards(repo_copy / "r", 3)
    same = _merge(*shards, out=repo_copy / "same")
    assert same.exit_code == codes.OK, same.output
    _git(repo_copy, "commit", "-q", "--allow-empty", "-m", "b")  # new code, same files here
    head = _git(repo_copy, "rev-parse", "HEAD")
    out = repo_copy / "later"
    _refused(_merge(*shards, out=out), *map(str, shards), f"at commit {head}",
             "commit: the shards ran at", "--allow-other-commit")  # fmt: skip
    assert not out.exists()
    allowed = _cli("merge", *map(str, shards), "--report-dir", str(out), "--allow-other-commit")
    assert allowed.exit_code == codes.OK, allowed.output
    assert "gating old results with new code" in allowed.output
    assert (out / "report.json").is_file()


def test_shards_run_from_a_dirty_tree_are_refused_by_a_merge_from_the_clean_one(
    repo_copy: Path,
) -> None:
    _committed(repo_copy)
    (repo_copy / "plugin.py").write_text("LIMIT = 2\n", encoding="utf-8")  # not committed
    shards = _shards(repo_copy / "r", 3)
    _git(repo_copy, "checkout", "--", "plugin.py")
    out = repo_copy / "all"
    _refused(_merge(*shards, out=out), *map(str, shards), "uncommitted changes: the shards ran "
             "with uncommitted changes sha256:", "the merge has a clean tree")  # fmt: skip
    # One shard from the clean tree among the dirty ones: not one run either.
    clean = repo_copy / "clean-2"
    assert _cli("run", "--shard", "2/3", "--report-dir", str(clean)).exit_code == codes.OK
    _refused(_merge(shards[0], clean, shards[2], out=out), "uncommitted changes differs",
             str(clean))  # fmt: skip
    assert not out.exists()
    # The same uncommitted changes where the merge runs: the same code.
    (repo_copy / "plugin.py").write_text("LIMIT = 2\n", encoding="utf-8")
    done = _merge(*shards, out=out)
    assert done.exit_code == codes.OK, done.output


def test_shards_run_by_other_proctor_code_are_refused_naming_what_differs(
    repo_copy: Path,
) -> None:
    shards = _shards(repo_copy / "r", 3)  # outside a repository: no commit to compare
    for path in shards:  # as if another installed Proctor had run them, all alike
        record = json.loads((path / "shard.json").read_text())
        assert record["commit"] is None and record["tree"] is None
        record["code"]["source"] = "sha256:" + "1" * 64
        record["code"]["proctor"] = "0.0.9"
        (path / "shard.json").write_text(json.dumps(record))
    out = repo_copy / "all"
    _refused(_merge(*shards, out=out), *map(str, shards), "code (source)", "code (proctor)",
             "(no repository)")  # fmt: skip
    assert not out.exists()


def test_signed_shards_merged_without_the_key_are_refused(
    repo_copy: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PROCTOR_REPORT_KEY", "ci-secret")
    shards = _shards(repo_copy / "r", 3)
    monkeypatch.delenv("PROCTOR_REPORT_KEY")
    out = repo_copy / "all"
    _refused(_merge(*shards, out=out), str(shards[0]),
             "the shards are signed; set PROCTOR_REPORT_KEY to verify them")  # fmt: skip
    assert not out.exists()
    monkeypatch.setenv("PROCTOR_REPORT_KEY", "ci-secret")
    done = _merge(*shards, out=out)
    assert done.exit_code == codes.OK, done.output


def test_bad_shard_values_are_usage_errors_saying_the_form(repo_copy: Path) -> None:
    for value in ("0/3", "4/3", "three", "1/0"):
        done = _cli("run", "--shard", value)
        assert done.exit_code == codes.USAGE, done.output
        assert "I/N" in done.output
    live = _cli("run", "--shard", "1/2", "--provider", "stub")
    assert live.exit_code == codes.USAGE and "--shard runs the deterministic replay" in live.output
    assert not (repo_copy / "reports").exists()


def test_merging_into_a_shard_directory_is_a_usage_error(repo_copy: Path) -> None:
    shards = _shards(repo_copy / "r", 2)
    done = _merge(*shards, out=shards[0])
    assert done.exit_code == codes.USAGE, done.output
    assert (shards[0] / "shard.json").is_file()
