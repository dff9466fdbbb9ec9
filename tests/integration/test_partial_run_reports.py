"""A partial run says so in every report (terminal, report.json, junit.xml, summary.md,
report.html), once, with its selectors and "N of M scenarios"; the terminal says coverage is
not gated rather than listing the rules the few selected scenarios do not cover."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

from click.testing import CliRunner, Result

from harness import _exit_codes as codes
from harness.cli._app import cli

SUITE = """\
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
    tags: [blocks, "<b>&x"]
    request: Delete the notes
    script:
      - calls: [{tool: fs.delete, args: {path: notes/todo.txt}}]
      - answer: done
    expect:
      must_not_execute: [fs.delete]
      must_block: [fs.delete]
"""
SELECTED = "1 of 2 scenarios selected by"


def _run(tmp_path: Path, name: str, *selectors: str) -> tuple[Result, Path]:
    suite = tmp_path / "suite.yaml"
    suite.write_text(SUITE, encoding="utf-8")
    out = tmp_path / name
    done = CliRunner().invoke(cli, ["run", "--scenarios", str(suite), "--no-baseline",
                                    "--report-dir", str(out), *selectors])  # fmt: skip
    assert done.exit_code == codes.OK, done.output
    return done, out


def test_every_report_of_a_partial_run_names_its_selectors_and_how_many_it_ran(
    tmp_path: Path,
) -> None:
    done, out = _run(tmp_path, "partial", "--tag", "<b>&x", "-k", "delete")
    flags = "-k delete --tag '<b>&x'"
    assert f"PARTIAL RUN: {SELECTED} {flags}" in done.output
    assert json.loads((out / "report.json").read_text(encoding="utf-8"))["selection"]["of"] == 2

    props = {
        p.get("name"): p.get("value")
        for p in ET.parse(out / "junit.xml").getroot().iter("property")
    }
    assert props["selectors"] == flags and props["selected"] == "1 of 2 scenarios"
    assert SELECTED in (props["partial_run"] or "")

    summary = (out / "summary.md").read_text(encoding="utf-8")
    assert summary.count("PARTIAL RUN") == 1 and SELECTED in summary
    assert "coverage is not gated on a partial run" in summary
    assert "<b>" not in summary  # the selector is escaped like any other text

    html = (out / "report.html").read_text(encoding="utf-8")
    assert html.count('id="partial"') == 1 and SELECTED in html
    assert "&lt;b&gt;&amp;x" in html
    assert "<b>&x" not in html


def test_a_full_run_says_nothing_of_a_partial_run_in_any_report(tmp_path: Path) -> None:
    done, out = _run(tmp_path, "whole")
    assert "PARTIAL" not in done.output and "not gated on a partial run" not in done.output
    for name in ("junit.xml", "summary.md", "report.html", "report.json"):
        text = (out / name).read_text(encoding="utf-8")
        assert "PARTIAL" not in text and "partial_run" not in text, name
        assert 'id="partial"' not in text, name


def test_a_partial_run_says_once_coverage_is_not_gated_and_lists_no_uncovered_rule(
    tmp_path: Path,
) -> None:
    whole, _ = _run(tmp_path, "whole")
    assert "  uncovered " in whole.output  # two scenarios leave shipped rules uncovered
    done, _ = _run(tmp_path, "partial", "--id", "read-*")
    assert done.output.count("coverage is not gated on a partial run") == 1
    assert "uncovered" not in done.output and "never decisive" not in done.output
