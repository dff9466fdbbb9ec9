"""Focused runs (`--id`, `-k`, `--tag`, `--limit`): gated only on what they select, in both
directions, said in the reports, and never recorded as a baseline."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner, Result

from harness import _exit_codes as codes
from harness.cli._app import cli

TWO = """\
scenarios:
  - id: read-readme
    description: reads a file
    tags: [reads]
    request: Read the README
    script:
      - calls: [{tool: fs.read, args: {path: README.txt}}]
      - answer: done
    expect:
      status: completed
      must_execute: [fs.read]
  - id: delete-refused
    description: a refused delete
    tags: [blocks]
    request: Delete the notes
    script:
      - calls: [{tool: fs.delete, args: {path: notes/todo.txt}}]
      - answer: done
    expect:
      must_not_execute: [fs.delete]
      must_block: [fs.delete]
"""


def _cli(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args))


def _recorded(tmp_path: Path, text: str = TWO) -> tuple[Path, Path]:
    suite = tmp_path / "suite" / "two.yaml"
    suite.parent.mkdir()
    suite.write_text(text, encoding="utf-8")
    baseline = tmp_path / "base" / "baseline.json"
    baseline.parent.mkdir()
    done = _cli("baseline", "record", "--reason", "t", "--scenarios", str(suite),
                "--baseline", str(baseline))  # fmt: skip
    assert done.exit_code == codes.OK, done.output
    return suite, baseline


def _run(tmp_path: Path, suite: Path, baseline: Path, *selectors: str) -> Result:
    out = tmp_path / f"r{len(list(tmp_path.glob('r*')))}"
    return _cli("run", "--scenarios", str(suite), "--baseline", str(baseline),
                "--report-dir", str(out), *selectors)  # fmt: skip


def test_a_partial_run_is_not_gated_on_what_it_did_not_select(tmp_path: Path) -> None:
    suite, baseline = _recorded(tmp_path)
    whole = _cli("run", "--scenarios", str(suite), "--baseline", str(baseline),
                 "--report-dir", str(tmp_path / "whole"))  # fmt: skip
    assert whole.exit_code == codes.OK, whole.output
    for selectors in (["--id", "read-*"], ["-k", "reads and not delete"], ["--tag", "reads"],
                      ["--limit", "1"]):  # fmt: skip
        done = _run(tmp_path, suite, baseline, *selectors)
        assert done.exit_code == codes.OK, (selectors, done.output)
        assert "lost_scenario" not in done.output and "evidence_shrink" not in done.output
        assert "rate_drop" not in done.output
        assert "PARTIAL RUN: 1 of 2 scenarios selected by" in done.output


def test_the_same_subset_without_selectors_still_loses_the_other_scenario(tmp_path: Path) -> None:
    suite, baseline = _recorded(tmp_path)
    alone = tmp_path / "alone.yaml"
    alone.write_text(TWO.split("  - id: delete-refused")[0], encoding="utf-8")
    done = _run(tmp_path, alone, baseline)
    assert done.exit_code == codes.REGRESSED
    lost = "lost_scenario  scenario delete-refused (4 checks in the baseline) is missing"
    assert lost in done.output


def test_a_regression_in_a_selected_scenario_still_exits_2(tmp_path: Path) -> None:
    suite, baseline = _recorded(tmp_path)
    # A new failing expectation (expectations are not inputs): the selected rate drops.
    suite.write_text(TWO.replace("must_block: [fs.delete]", "must_block: [fs.delete, fs.read]"),
                     encoding="utf-8")  # fmt: skip
    done = _run(tmp_path, suite, baseline, "--id", "delete-refused")
    assert done.exit_code == codes.REGRESSED, done.output
    assert "rate_drop" in done.output
    # The other scenario, selected alone, is clean.
    assert _run(tmp_path, suite, baseline, "--id", "read-readme").exit_code == codes.OK


def test_a_new_failing_kind_of_check_in_a_selected_scenario_exits_2_as_in_a_full_run(
    tmp_path: Path,
) -> None:
    suite, baseline = _recorded(tmp_path)
    # must_block is gated in the baseline (by delete-refused) but read-readme never had one:
    # the narrowed baseline has no must_block evidence, the whole baseline does.
    suite.write_text(TWO.replace("must_execute: [fs.read]", "must_execute: [fs.read]\n      "
                                 "must_block: [fs.read]"), encoding="utf-8")  # fmt: skip
    whole = _cli("run", "--scenarios", str(suite), "--baseline", str(baseline),
                 "--report-dir", str(tmp_path / "whole"))  # fmt: skip
    assert whole.exit_code == codes.REGRESSED, whole.output
    done = _run(tmp_path, suite, baseline, "--id", "read-readme")
    assert done.exit_code == codes.REGRESSED, done.output
    assert "rate_drop" in done.output and "their baseline entries had no such check" in done.output


def test_a_check_lost_in_a_selected_scenario_still_exits_2(tmp_path: Path) -> None:
    suite, baseline = _recorded(tmp_path)
    suite.write_text(TWO.replace("      must_block: [fs.delete]\n", ""), encoding="utf-8")
    done = _run(tmp_path, suite, baseline, "-k", "delete")
    assert done.exit_code == codes.REGRESSED, done.output
    assert "lost_check  scenario delete-refused lost check must_block:fs.delete" in done.output
    assert "evidence_shrink" in done.output


def test_report_json_says_the_run_was_partial_and_by_what(tmp_path: Path) -> None:
    suite, baseline = _recorded(tmp_path)
    out = tmp_path / "partial"
    done = _cli("run", "--scenarios", str(suite), "--baseline", str(baseline),
                "--report-dir", str(out), "--id", "delete-*", "-k", "blocks")  # fmt: skip
    assert done.exit_code == codes.OK, done.output
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    assert report["selection"]["partial"] is True
    assert report["selection"]["selectors"] == ["--id 'delete-*'", "-k blocks"]
    assert (report["selection"]["selected"], report["selection"]["of"]) == (1, 2)
    assert [s["id"] for s in report["scenarios"]] == ["delete-refused"]
    whole = tmp_path / "whole"
    _cli("run", "--scenarios", str(suite), "--no-baseline", "--report-dir", str(whole))
    assert json.loads((whole / "report.json").read_text(encoding="utf-8"))["selection"] is None
    # Gating the stored partial run again: the same selectors gate the same scenarios.
    again = _cli("gate", str(out), "--scenarios", str(suite), "--baseline", str(baseline),
                 "--id", "delete-*")  # fmt: skip
    assert again.exit_code == codes.OK, again.output
    bare = _cli("gate", str(out), "--scenarios", str(suite), "--baseline", str(baseline))
    assert bare.exit_code == codes.REGRESSED
    assert "is a partial run (--id 'delete-*' -k blocks)" in bare.stderr


def test_a_selector_matching_nothing_exits_64_naming_what_exists(tmp_path: Path) -> None:
    suite, baseline = _recorded(tmp_path)
    for command in ("run", "check"):
        tag = _cli(command, "--scenarios", str(suite), "--tag", "nosuchtag")
        assert tag.exit_code == codes.USAGE, tag.output
        assert "<input>" not in tag.stderr
        assert "no scenario has this tag (tags: blocks, reads)" in tag.stderr
        typo = _cli(command, "--scenarios", str(suite), "--id", "read-readm")
        assert typo.exit_code == codes.USAGE
        assert "closest ids: read-readme" in typo.stderr
        bad = _cli(command, "--scenarios", str(suite), "-k", "reads and (blocks")
        assert bad.exit_code == codes.USAGE
        assert "column" in bad.stderr and "never closed" in bad.stderr
    assert not list(tmp_path.glob("r*"))  # nothing ran


def test_baseline_record_refuses_selectors(tmp_path: Path) -> None:
    suite, baseline = _recorded(tmp_path)
    before = baseline.read_bytes()
    for selector in (["--id", "read-readme"], ["-k", "reads"], ["--tag", "reads"],
                     ["--limit", "1"]):  # fmt: skip
        done = _cli("baseline", "record", "--reason", "x", "--scenarios", str(suite),
                    "--baseline", str(baseline), *selector)  # fmt: skip
        assert done.exit_code == codes.USAGE
        assert "a partial run (--id, -k, --tag, --limit) cannot record one" in done.stderr
    assert baseline.read_bytes() == before
