"""Policy coverage in `proctor run`, its gate, and `proctor mutate`, through the real CLI."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.integration.test_eval_exit_codes import clean_env

pytestmark = pytest.mark.slow

POLICY = """\
version: 1
rules:
  - id: notes-read
    effect: allow
    match: {tool: fs.read}
    when: [{arg: path, path_prefix: notes/}]
  - id: never-used
    effect: allow
    match: {tool: tickets.create}
budgets:
  - id: writes-per-run
    scope: agent_run
    limit: 5
    window_seconds: 60
    counts: [write]
"""

SCENARIOS = """\
scenarios:
  - id: read-a-note
    description: reads a note
    policy: ../p/policy.yaml
    request: read it
    setup: {files: {notes/a.txt: hello}}
    script:
      - calls: [{tool: fs.read, args: {path: notes/a.txt}}]
      - answer: "{{tool:fs.read}}"
    expect:
      must_execute: [fs.read]
      answer_contains: [hello]
"""


def proctor(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "harness", *args],
        cwd=cwd,
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.fixture
def suite(tmp_path: Path) -> Path:
    (tmp_path / "s").mkdir()
    (tmp_path / "p").mkdir()
    (tmp_path / "p" / "policy.yaml").write_text(POLICY, encoding="utf-8")
    (tmp_path / "s" / "suite.yaml").write_text(SCENARIOS, encoding="utf-8")
    return tmp_path


def test_run_names_the_uncovered_rule_and_budget_with_their_policy_file(suite: Path) -> None:
    done = proctor(suite, "run", "--scenarios", "s", "--no-baseline", "--report-dir", "r")
    assert done.returncode == 0, done.stdout + done.stderr
    # As coverage names it: relative to the scenario root (with no pyproject.toml and no
    # scenarios/ folder above it, that is the scenario file's own folder).
    policy = "../p/policy.yaml"
    assert f"coverage {policy} (1 scenario(s))" in done.stdout
    assert "uncovered rule never-used: matched no call" in done.stdout
    assert "uncovered budget writes-per-run: charged 0 time(s), never denied" in done.stdout
    assert "uncovered rule notes-read" not in done.stdout


def test_lost_coverage_exits_2_naming_the_rule_and_the_policy_file(suite: Path) -> None:
    recorded = proctor(
        suite, "baseline", "record", "--scenarios", "s", "--baseline", "b/baseline.json",
        "--reason", "first",
    )  # fmt: skip
    assert recorded.returncode == 0, recorded.stdout + recorded.stderr
    policy_file = suite / "p" / "policy.yaml"
    # A second allow for the same reads: the run behaves the same, but notes-read is no longer
    # decisive (either rule alone allows), and the new rule is uncovered too.
    policy_file.write_text(
        POLICY.replace(
            "  - id: never-used",
            "  - id: any-read\n    effect: allow\n    match: {tool: fs.read}\n  - id: never-used",
        ),
        encoding="utf-8",
    )
    done = proctor(
        suite, "run", "--scenarios", "s", "--baseline", "b/baseline.json", "--report-dir", "r"
    )
    assert done.returncode == 2, done.stdout + done.stderr
    name = "../p/policy.yaml"
    assert f"rule:notes-read of {name} was covered by the suite" in done.stdout
    assert "lost_coverage" in done.stdout
    assert "failed" not in done.stdout.split("Regressions")[0].lower().replace("0 failed", "")


def test_a_surviving_mutant_is_named_with_its_weakening_and_exits_2(suite: Path) -> None:
    done = proctor(suite, "mutate", "--scenarios", "s", "--mutants-file", "none.yaml")
    assert done.returncode == 2, done.stdout + done.stderr
    assert "rule:notes-read when[0]:drop: condition when[0] on 'path' dropped" in done.stdout
    assert "budget:writes-per-run limit:x1000: limit 5 -> 5000" in done.stdout
    assert "killed" in done.stderr  # progress: one line per mutant


def test_equivalent_marked_mutants_are_reported_and_do_not_fail(suite: Path) -> None:
    # As coverage names it: relative to the scenario root (with no pyproject.toml and no
    # scenarios/ folder above it, that is the scenario file's own folder).
    policy = "../p/policy.yaml"
    first = proctor(suite, "mutate", "--scenarios", "s", "--mutants-file", "none.yaml")
    survivors = [line.split()[2:4] for line in first.stdout.splitlines() if line.startswith("  ✗ ")]
    assert survivors
    entries = "".join(
        f"  - {{policy: '{policy}', target: '{t}', mutation: '{m.rstrip(':')}', reason: untestable"
        f" here}}\n"
        for t, m in survivors
    )
    (suite / "mutants.yaml").write_text("equivalent:\n" + entries, encoding="utf-8")
    done = proctor(suite, "mutate", "--scenarios", "s", "--mutants-file", "mutants.yaml")
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"0 survived, {len(survivors)} equivalent" in done.stdout
    assert "equivalent: untestable here" in done.stderr


def test_a_malformed_mutants_file_exits_3_naming_file_and_line(suite: Path) -> None:
    (suite / "mutants.yaml").write_text(
        "equivalent:\n  - policy: p.yaml\n    target: rule:x\n    mutation: disable\n"
        "    reason: a good reason\n  - policy: p.yaml\n    target: 'nope'\n"
        "    mutation: disable\n    reason: another reason\n",
        encoding="utf-8",
    )
    done = proctor(suite, "mutate", "--scenarios", "s", "--mutants-file", "mutants.yaml")
    assert done.returncode == 3, done.stdout + done.stderr
    assert "mutants.yaml:7" in done.stdout + done.stderr
