"""`proctor policy check` flags rules whose `match` names no known tool, at the name's line."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness import _exit_codes as codes
from harness.cli._app import cli

REPO = Path(__file__).resolve().parents[3]
SERVERS = REPO / "scenarios" / "mcp" / "servers"
SHIPPED = Path(str(resources.files("governance") / "data" / "default_policy.yaml"))

HEAD = "version: 1\nrules:\n  - id: fine\n    effect: allow\n    match: {tool: fs.read}\n"


def _check(tmp_path: Path, rule: str, *options: str) -> tuple[int, str, str, Path]:
    path = tmp_path / "policy.yaml"
    path.write_text(HEAD + rule, encoding="utf-8")
    result = CliRunner().invoke(cli, ["policy", "check", str(path), *options])
    return result.exit_code, result.stdout, result.stderr, path


def test_a_misspelt_tool_name_exits_3_at_its_line_with_a_suggestion(tmp_path: Path) -> None:
    rule = "  - id: lookups\n    effect: allow\n    match:\n      tool: [fs.list, orders.lookp]\n"
    code, out, err, path = _check(tmp_path, rule)
    assert code == codes.INVALID_SUITE
    assert (
        f"{path}:9: rule lookups: tool 'orders.lookp' is not a known tool "
        "(did you mean 'orders.lookup'?)"
    ) in err
    assert "OK" not in out
    assert "fs.list" not in err  # the known name in the same list is fine


def test_a_glob_that_matches_no_known_tool_is_flagged(tmp_path: Path) -> None:
    rule = "  - id: writes\n    effect: allow\n    match: {tool: 'fs.wirte*'}\n"
    code, _, err, path = _check(tmp_path, rule)
    assert code == codes.INVALID_SUITE
    assert f"{path}:8: rule writes: tool 'fs.wirte*' matches no known tool" in err


def test_a_glob_or_namespace_matching_a_known_tool_passes(tmp_path: Path) -> None:
    rule = (
        "  - id: globs\n    effect: allow\n    match: {tool: ['fs.*', '*.lookup']}\n"
        "  - id: spaces\n    effect: allow\n    match: {namespace: ['orders', 'f?']}\n"
    )
    code, out, err, _ = _check(tmp_path, rule)
    assert code == codes.OK, err
    assert "OK: 3 rules" in out


def test_a_namespace_that_matches_no_known_tool_is_flagged_even_in_a_disabled_rule(
    tmp_path: Path,
) -> None:
    rule = "  - id: ns\n    effect: allow\n    enabled: false\n    match: {namespace: order}\n"
    code, _, err, path = _check(tmp_path, rule)
    assert code == codes.INVALID_SUITE
    assert (
        f"{path}:9: rule ns: namespace 'order' matches no known tool (did you mean 'orders'?)"
    ) in err


def test_tool_and_namespace_that_select_nothing_together_are_flagged(tmp_path: Path) -> None:
    rule = "  - id: both\n    effect: allow\n    match: {tool: 'fs.*', namespace: orders}\n"
    code, _, err, path = _check(tmp_path, rule)
    assert code == codes.INVALID_SUITE
    assert f"{path}:8: rule both: tool and namespace together match no known tool" in err


def test_every_bad_name_is_listed_with_its_line(tmp_path: Path) -> None:
    rule = (
        "  - id: one\n    effect: allow\n    match: {tool: fs.raed}\n"
        "  - id: two\n    effect: block\n    match: {tool: email.sned}\n"
    )
    code, _, err, path = _check(tmp_path, rule)
    assert code == codes.INVALID_SUITE
    assert f"{path}:8: rule one: tool 'fs.raed'" in err
    assert f"{path}:11: rule two: tool 'email.sned'" in err


def test_an_mcp_tool_name_is_a_note_without_mcp_config(tmp_path: Path) -> None:
    rule = "  - id: mcp\n    effect: allow\n    match: {tool: mcp.demo.ecko}\n"
    code, out, err, _ = _check(tmp_path, rule)
    assert code == codes.OK
    assert "'mcp.demo.ecko' (rule mcp) names MCP tools: not checked without --mcp-config" in err
    assert "OK: 2 rules" in out


def test_a_glob_that_may_name_an_mcp_tool_is_judged_only_with_mcp_config(tmp_path: Path) -> None:
    rule = "  - id: echoes\n    effect: allow\n    match: {tool: '*.echo'}\n"
    code, _, err, _ = _check(tmp_path, rule)
    assert code == codes.OK
    assert "tool '*.echo' (rule echoes) names MCP tools" in err
    code, _, err, _ = _check(tmp_path, rule, "--mcp-config", str(SERVERS / "demo.yaml"))
    assert code == codes.OK, err
    assert "note:" not in err
    code, _, err, path = _check(tmp_path, rule, "--mcp-config", str(SERVERS / "demo-mapped.yaml"))
    assert code == codes.OK, err  # demo-mapped maps echo too
    code, _, err, path = _check(
        tmp_path, rule.replace("*.echo", "*.ecko"), "--mcp-config", str(SERVERS / "demo.yaml")
    )
    assert code == codes.INVALID_SUITE
    assert f"{path}:8: rule echoes: tool '*.ecko' matches no known tool" in err


def test_a_misspelt_mcp_tool_name_exits_3_with_mcp_config(tmp_path: Path) -> None:
    rule = "  - id: mcp\n    effect: allow\n    match: {tool: mcp.demo.ecko}\n"
    config = str(SERVERS / "demo.yaml")
    code, _, err, path = _check(tmp_path, rule, "--mcp-config", config)
    assert code == codes.INVALID_SUITE
    assert (
        f"{path}:8: rule mcp: tool 'mcp.demo.ecko' is not a known tool "
        "(did you mean 'mcp.demo.echo'?)"
    ) in err


def test_an_mcp_tool_of_the_config_passes_with_mcp_config(tmp_path: Path) -> None:
    rule = "  - id: mcp\n    effect: allow\n    match: {tool: mcp.demo.echo}\n"
    code, out, err, _ = _check(tmp_path, rule, "--mcp-config", str(SERVERS / "demo.yaml"))
    assert code == codes.OK, err
    assert "note:" not in err
    assert "OK: 2 rules" in out


def test_an_mcp_namespace_of_another_server_exits_3_with_mcp_config(tmp_path: Path) -> None:
    rule = "  - id: mcp\n    effect: allow\n    match: {namespace: mcp.dmeo}\n"
    code, _, err, path = _check(tmp_path, rule, "--mcp-config", str(SERVERS / "demo.yaml"))
    assert code == codes.INVALID_SUITE
    assert f"{path}:8: rule mcp: namespace 'mcp.dmeo' matches no known tool" in err


@pytest.mark.parametrize(
    ("policy", "config"),
    [
        (SHIPPED, None),
        (REPO / "scenarios/policies/budgets.yaml", None),
        (REPO / "scenarios/policies/http.yaml", None),
        (REPO / "scenarios/policies/mcp.yaml", None),
        (REPO / "scenarios/policies/mcp.yaml", SERVERS / "demo.yaml"),
        (REPO / "scenarios/policies/mcp.yaml", SERVERS / "demo-mapped.yaml"),
    ],
    ids=lambda value: value.name if isinstance(value, Path) else "-",
)
def test_the_shipped_policies_pass_as_a_user_checks_them(policy: Path, config: Path | None) -> None:
    options = [] if config is None else ["--mcp-config", str(config)]
    result = CliRunner().invoke(cli, ["policy", "check", str(policy), *options])
    assert result.exit_code == codes.OK, result.stderr
    assert "is not a known tool" not in result.stderr
