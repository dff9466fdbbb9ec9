"""A scenario's inputs: what is fed to the run counts, what only names or judges it does not."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from harness._identity import scenario_inputs
from harness._scenario import Scenario

REPO = Path(__file__).resolve().parents[3]

BASE: dict[str, Any] = {
    "id": "s1",
    "description": "d",
    "request": "Delete my notes",
    "script": [{"calls": [{"tool": "fs.delete", "args": {"path": "secrets/x"}}]}],
    "expect": {"must_not_execute": ["fs.delete"]},
}
REPLAY = {"name": "replay", "model": "scripted", "live": False}


def digest_of(**changes: Any) -> str:
    surface = {
        "provider": changes.pop("provider", REPLAY),
        "policy_digest": changes.pop("policy_digest", "sha256:p"),
        "registry_digest": changes.pop("registry_digest", "sha256:r"),
        "mcp_config_digest": changes.pop("mcp_config_digest", None),
    }
    scenario = Scenario.model_validate({**BASE, **changes})
    return scenario_inputs(scenario, **surface).digest


def test_what_is_fed_to_the_run_changes_the_digest() -> None:
    harmless = [{"calls": [{"tool": "fs.delete", "args": {"path": "notes/x"}}]}]
    variants = [
        digest_of(),
        digest_of(script=harmless),
        digest_of(request="Delete nothing"),
        digest_of(setup={"files": {"notes/x": "x"}}),
        digest_of(policy_digest="sha256:q"),
        digest_of(registry_digest="sha256:s"),
        digest_of(mcp_config_digest="sha256:m"),
        digest_of(provider={"name": "openai", "model": "gpt", "live": True}),
        digest_of(principal={"actor": "root"}),
        digest_of(max_steps=3),
        digest_of(reviews=[{"action": "approve"}]),
    ]
    assert len(set(variants)) == len(variants)


def test_what_only_names_documents_or_judges_it_does_not() -> None:
    assert (
        digest_of()
        == digest_of(description="other words", tags=["x"], expect={"status": "blocked"})
        == digest_of(policy="default", max_steps=8, tools="builtin")
        == digest_of(id="renamed")
    )


def test_the_shown_form_is_redacted_and_the_digest_still_sees_the_secret() -> None:
    key = "sk-proj-" + "a1B2c3D4e5F6g7H8i9J0" * 2
    scenario = Scenario.model_validate({**BASE, "request": f"use {key}"})
    other = Scenario.model_validate({**BASE, "request": f"use {key[:-1]}Z"})
    surface: dict[str, Any] = {
        "provider": REPLAY,
        "policy_digest": "p",
        "registry_digest": "r",
        "mcp_config_digest": None,
    }
    one, two = scenario_inputs(scenario, **surface), scenario_inputs(other, **surface)
    assert key not in str(one.shown)
    assert one.shown == two.shown and one.digest != two.digest


def test_an_mcp_scenarios_identity_counts_the_pinned_digests_not_the_lock_format(
    tmp_path: Path,
) -> None:
    import shutil

    from harness._scenario_load import load_scenarios, mcp_config_digest

    shutil.copytree(REPO / "scenarios" / "mcp", tmp_path / "mcp")
    lock = tmp_path / "mcp" / "servers" / "demo.lock.json"
    (scenario, *_) = load_scenarios([tmp_path / "mcp" / "demo.yaml"])
    before = mcp_config_digest(scenario)
    data = json.loads(lock.read_text(encoding="utf-8"))
    data.pop("definitions", None)  # the older format: digests only
    lock.write_text(json.dumps(data), encoding="utf-8")
    assert mcp_config_digest(scenario) == before
    server, pins = next(iter(data["servers"].items()))
    tool = next(iter(pins))
    data["servers"][server][tool] = "sha256:" + "0" * 64  # another definition pinned
    lock.write_text(json.dumps(data), encoding="utf-8")
    assert mcp_config_digest(scenario) != before


def _mcp_scenario(tmp_path: Path, config_text: str) -> Any:
    import shutil

    from harness._scenario_load import load_scenarios

    shutil.copytree(REPO / "scenarios" / "mcp", tmp_path / "mcp")
    (tmp_path / "mcp" / "servers" / "demo.yaml").write_text(config_text, encoding="utf-8")
    return load_scenarios([tmp_path / "mcp" / "demo.yaml"])[0]


def test_an_mcp_config_with_a_key_given_twice_is_refused_at_its_line_not_read_last_wins(
    tmp_path: Path,
) -> None:
    import pytest

    from harness._errors import ScenarioError
    from harness._scenario_load import mcp_config_digest

    shipped = (REPO / "scenarios/mcp/servers/demo.yaml").read_text(encoding="utf-8")
    scenario = _mcp_scenario(tmp_path, shipped + "version: 1\n")  # `version` again
    with pytest.raises(ScenarioError) as refused:
        mcp_config_digest(scenario)
    assert refused.value.path is not None and refused.value.path.endswith("demo.yaml")
    assert refused.value.line == shipped.count("\n") + 1


def test_an_mcp_config_value_is_digested_as_the_gateway_reads_it(tmp_path: Path) -> None:
    from harness._scenario_load import mcp_config_digest

    shipped = (REPO / "scenarios/mcp/servers/demo.yaml").read_text(encoding="utf-8")
    # The gateway's reader keeps a date-like scalar as text; PyYAML's would make it a date.
    dated = _mcp_scenario(tmp_path / "a", shipped + "# 2026-12-01\nnote: 2026-12-01\n")
    quoted = _mcp_scenario(tmp_path / "b", shipped + "note: '2026-12-01'\n")
    assert mcp_config_digest(dated) == mcp_config_digest(quoted)
