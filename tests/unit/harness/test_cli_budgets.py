"""`proctor budgets status|reset` over a real state directory."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from governance import Principal, ToolCall
from governance._gateway import Gateway
from harness import _exit_codes as codes
from harness.cli._app import cli

POLICY = """
version: 1
rules:
  - {id: delete-notes, effect: allow, match: {tool: fs.delete}}
budgets:
  - {id: one-per-run, scope: agent_run, limit: 1, window_seconds: 3600}
"""
ANN = Principal("ann", "cleaner", "ops")


def _setup(tmp_path: Path) -> tuple[Path, Path]:
    state, policy = tmp_path / "state", tmp_path / "policy.yaml"
    policy.write_text(POLICY)
    with Gateway(state_dir=state, policy_path=policy) as gw:
        gw.firewall.call(ToolCall("c1", "fs.delete", {"path": "notes/todo.txt"}, "run-1", ANN))
    return state, policy


def _run(state: Path, policy: Path, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(
        cli, [*args[:2], "--state-dir", str(state), "--policy", str(policy), *args[2:]]
    )
    return result.exit_code, result.stdout, result.stderr


def test_status_shows_an_exhausted_budget(tmp_path: Path) -> None:
    state, policy = _setup(tmp_path)
    code, out, _ = _run(state, policy, "budgets", "status", "--json")
    assert code == codes.OK
    assert [(r["budget"], r["key"], r["used"], r["remaining"]) for r in json.loads(out)] == [
        ("one-per-run", "run-1", 1, 0)
    ]
    code, out, _ = _run(state, policy, "budgets", "status")
    assert "EXHAUSTED" in out


def test_a_reset_needs_two_different_people_and_keeps_the_evidence(tmp_path: Path) -> None:
    state, policy = _setup(tmp_path)
    base = ("budgets", "reset", "--scope", "agent_run", "--key", "run-1", "--reason", "loop fixed")
    code, _, err = _run(state, policy, *base, "--by", "dana", "--approved-by", "dana")
    assert code == codes.CHECK_FAILED and "same_person" in err
    code, _, err = _run(state, policy, *base, "--by", "ann", "--approved-by", "erin")
    assert code == codes.CHECK_FAILED and "self_release" in err  # ann's own calls are charged
    code, out, _ = _run(state, policy, *base, "--by", "dana", "--approved-by", "erin")
    assert code == codes.OK and "reset one-per-run for agent_run=run-1" in out
    rows = json.loads(_run(state, policy, "budgets", "status", "--json")[1])
    assert rows[0]["used"] == 0 and rows[0]["watermark"] is not None
    with Gateway(state_dir=state, policy_path=policy) as gw:
        assert len(gw.budgets.ledger("one-per-run", "run-1")) == 1


def test_a_scope_without_a_budget_is_a_usage_error(tmp_path: Path) -> None:
    state, policy = _setup(tmp_path)
    code, _, err = _run(
        state, policy, "budgets", "reset", "--scope", "team", "--key", "ops",
        "--by", "a", "--approved-by", "b", "--reason", "r",
    )  # fmt: skip
    assert code == codes.USAGE and "no team budget" in err
