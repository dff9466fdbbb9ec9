"""`proctor tools list` decides each tool as `policy explain` and the firewall's real call do.

The listed decision is for a sample call (the required arguments without a default filled by
placeholders, `sample_arguments`): the firewall fills the schema's defaults and canonicalises
declared paths itself, so a tool such as `fs.list` with a defaulted path is judged on `"."`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from governance import Firewall, Principal, StaticPolicy, ToolCall
from governance.policy import load_policy
from governance.stores import MemoryAuditLog
from governance.tools import builtin_registry
from harness import _exit_codes as codes
from harness.cli._app import cli

REPO = Path(__file__).resolve().parents[3]
PRINCIPAL = Principal(actor="cli", agent="cli", team="cli")
SHIPPED = REPO / "governance" / "data" / "default_policy.yaml"

# Globs, namespaces, conditions on defaulted and on required arguments, descriptor selectors.
CRAFTED = """\
version: 1
rules:
  - {id: list-root-only, effect: allow, match: {tool: [fs.list]}, when: [{arg: path, enum: ["."]}]}
  - id: fs-reads
    effect: allow
    match: {namespace: [fs], action_type: read}
    when: [{arg: path, path_prefix: sample, negate: false}]
  - {id: search-default-path, effect: require_approval, match: {tool: ['fs.sea*']},
     when: [{arg: path, enum: ["."]}]}
  - {id: kb-top-k, effect: allow, match: {tool: ['kb.*']}, when: [{arg: top_k, max: 5}]}
  - {id: tickets-normal, effect: allow, match: {tool: [tickets.create]},
     when: [{arg: priority, enum: [normal]}]}
  - {id: no-high-risk, effect: block, match: {risk: [high]}}
  - {id: refunds-small, effect: allow, match: {namespace: [refunds]},
     when: [{arg: amount, max: 10}]}
"""


def _policy(tmp_path: Path, which: str) -> Path:
    if which == "shipped":
        return SHIPPED
    path = tmp_path / "crafted.yaml"
    path.write_text(CRAFTED, encoding="utf-8")
    return path


def _invoke(*args: str) -> Any:
    done = CliRunner().invoke(cli, list(args))
    assert done.exit_code == codes.OK, done.output
    return json.loads(done.stdout)


@pytest.mark.parametrize("which", ["shipped", "crafted"])
def test_every_builtin_tool_is_listed_with_the_decision_explain_and_a_real_call_give(
    tmp_path: Path, which: str
) -> None:
    policy_path = _policy(tmp_path, which)
    check = CliRunner().invoke(cli, ["policy", "check", str(policy_path)])
    assert check.exit_code == codes.OK, check.output
    rows = {r["name"]: r for r in _invoke("tools", "list", "--json", "--policy", str(policy_path))}
    registry = builtin_registry()
    assert set(rows) == {d.name for d in registry.descriptors()}
    firewall = Firewall(registry, StaticPolicy(load_policy(policy_path)), MemoryAuditLog())
    called = 0
    for name, row in rows.items():
        listed = (row["decision"], row["reason"], row["decided_by"])
        sample = json.dumps(row["sample_arguments"])
        told = _invoke("policy", "explain", str(policy_path), "--tool", name, "--args", sample,
                       "--json")  # fmt: skip
        assert (told["effect"], told["reason"], told.get("rule_ids", [])) == listed, name
        call = ToolCall(call_id=f"c-{name}", tool=name, arguments=row["sample_arguments"],
                        run_id="r", principal=PRINCIPAL)  # fmt: skip
        decided = firewall.decide(call)
        assert (decided.effect, decided.reason) == listed[:2], name
        result = firewall.call(call)
        if result.reason == "invalid_arguments":  # a placeholder failing the schema: refused
            assert result.decision is None and result.outcome == "failed", name  # before policy
            continue
        assert result.decision is not None, name
        assert (result.decision.effect, result.decision.reason) == listed[:2], name
        called += 1
    assert called >= len(rows) // 2  # most placeholders pass the schema: the real call decides


def test_a_defaulted_path_is_judged_on_its_default_as_a_real_call_is() -> None:
    rows = {r["name"]: r for r in _invoke("tools", "list", "--json")}
    assert rows["fs.list"]["sample_arguments"] == {}
    assert (rows["fs.list"]["decision"], rows["fs.list"]["decided_by"]) == ("allow", ["fs-read"])
    # fs.search's default "." is under neither notes/ nor reports/: blocked, as a real call is.
    assert rows["fs.search"]["sample_arguments"] == {"query": "sample"}
    assert rows["fs.search"]["decision"] == "block"


def test_the_firewall_decides_on_the_arguments_it_would_execute() -> None:
    firewall = Firewall(builtin_registry(), StaticPolicy(load_policy(SHIPPED)), MemoryAuditLog())

    def decide(tool: str, arguments: dict[str, Any]) -> tuple[str, str]:
        call = ToolCall(
            call_id="c", tool=tool, arguments=arguments, run_id="r", principal=PRINCIPAL
        )
        decision = firewall.decide(call)
        return decision.effect, decision.reason

    assert decide("fs.list", {}) == ("allow", "allowed")  # the default path, not a missing one
    assert decide("fs.read", {"path": "notes/../secrets/key.txt"})[0] == "block"  # canonical
    assert decide("fs.read", {"path": "../outside"}) == decide("fs.read", {"path": "/etc/passwd"})
    assert decide("fs.read", {"path": "../outside"})[0] == "block"
    assert decide("fs.read", {"path": {"not": "json-safe", "x": object()}})[0] == "block"
