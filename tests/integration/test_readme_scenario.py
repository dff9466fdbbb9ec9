"""The README's first scenario example runs as written, and its list of what a scenario can rely
on (workspace files, business data) is the real seeded workspace, so neither can go stale."""

from __future__ import annotations

import re
from pathlib import Path

from click.testing import CliRunner

from governance.tools import Workspace, database_dump, file_tree
from harness import _exit_codes as codes
from harness.cli._app import cli

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
BEGIN, END = "<!-- scenario-workspace:begin -->", "<!-- scenario-workspace:end -->"


def _first_scenario_block(text: str) -> str:
    """The first ```yaml block that holds a scenario (`request:`)."""
    for block in re.findall(r"^```yaml\n(.*?)^```$", text, flags=re.S | re.M):
        if "request:" in block:
            return str(block)
    raise AssertionError("README.md has no yaml block with a scenario in it")


def workspace_list(root: Path) -> str:
    """The README's list, generated from a freshly seeded workspace."""
    ws = Workspace(root).ensure()
    files = ", ".join(f"`{name}`" for name in sorted(file_tree(ws)))
    lines = [f"- workspace files (`fs.*`, `kb.search` reads `kb/`): {files}"]
    for table, rows in database_dump(ws).items():
        if not rows:
            lines.append(f"- table `{table}`: empty")
            continue
        columns = ", ".join(rows[0])
        lines.append(f"- table `{table}` ({columns}):")
        lines += [f"  - {' · '.join(str(v) for v in row.values())}" for row in rows]
    return "\n".join(lines)


def test_the_readme_first_scenario_checks_and_runs_as_written(tmp_path: Path) -> None:
    suite = tmp_path / "first.yaml"
    suite.write_text(_first_scenario_block(README.read_text(encoding="utf-8")), encoding="utf-8")
    runner = CliRunner()
    checked = runner.invoke(cli, ["check", "--scenarios", str(suite)])
    assert checked.exit_code == codes.OK, checked.output
    ran = runner.invoke(
        cli,
        ["run", "--no-baseline", "--scenarios", str(suite), "--report-dir", str(tmp_path / "r")],
    )
    assert ran.exit_code == codes.OK, ran.output
    assert "0 failed" in ran.output


def test_the_readme_lists_exactly_the_seeded_workspace_files_and_rows(tmp_path: Path) -> None:
    text = README.read_text(encoding="utf-8")
    assert BEGIN in text and END in text, f"README.md lost its {BEGIN} ... {END} markers"
    shown = text.split(BEGIN, 1)[1].split(END, 1)[0].strip()
    expected = workspace_list(tmp_path / "ws")
    assert shown == expected, f"update README.md between the markers to:\n{expected}"
