"""One real shipped rule weakened and run against the real shipped scenarios that touch it."""

from __future__ import annotations

from pathlib import Path

import yaml

from governance.policy._load import load_policy
from harness._mutate import Mutant, mutants_of
from harness._mutate_run import _reference, _try_mutant
from harness._scenario_load import resolve_policy_path
from harness._suite import load_checked_suite

SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"


def test_the_shipped_suite_kills_fs_no_delete_weakened() -> None:
    suite = load_checked_suite([SCENARIOS / "blocks.yaml"])
    touching = [s for s in suite if s.scenario.id == "block-delete-by-rule"]
    path = resolve_policy_path(touching[0])
    reference, likely = _reference(touching, load_policy(path))
    assert likely["rule:fs-no-delete"] == ["block-delete-by-rule"]
    document = yaml.safe_load(path.read_text(encoding="utf-8"))
    weakened = [m for m in mutants_of(document) if m.target == "rule:fs-no-delete"]
    assert [m.mutation for m in weakened] == ["effect:require_approval", "disable"]
    for mutant in weakened:
        kill = _try_mutant((mutant, "default", touching, reference))
        assert kill is not None, mutant.mutation
        assert kill.scenario_id == "block-delete-by-rule"
    # The real policy itself is not "killed": the same run gives the same checks.
    same = {**document}
    assert _try_mutant((Mutant("rule:x", "none", "", same), "default", touching, reference)) is None
