"""`proctor mcp list|pin` and `--mcp-config`, through CliRunner and as a real subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from harness import _exit_codes as codes
from harness.cli import cli

pytestmark = pytest.mark.slow

READ = "{action_type: read, risk: low, reversible: true, external_side_effect: false}"


def _config(root: Path, *, broken: bool = True) -> Path:
    descriptions = root / "descriptions.json"
    descriptions.write_text("{}", encoding="utf-8")
    extra = (
        '  broken:\n    transport: stdio\n    command: python\n    args: ["-m", "stubs.mcp_demo", '
        '"--crash-on-start"]\n'
        if broken
        else ""
    )
    config = root / "servers.yaml"
    config.write_text(
        f"""\
version: 1
servers:
  demo:
    transport: stdio
    command: python
    args: ["-m", "stubs.mcp_demo", "--description-file", "{descriptions}"]
    pin: true
    tools:
      echo: {READ}
{extra}""",
        encoding="utf-8",
    )
    return config


def _invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args), env={"PROCTOR_MCP_CONFIG": None})
    return result.exit_code, result.stdout, result.stderr


def _listing(config: Path) -> dict[str, Any]:
    code, out, err = _invoke("mcp", "list", "--config", str(config), "--json")
    assert code == codes.OK, err
    document: dict[str, Any] = json.loads(out)
    return document


def _tools(document: dict[str, Any], server: str) -> dict[str, dict[str, Any]]:
    (entry,) = [s for s in document["servers"] if s["server"] == server]
    return {tool["mcp_name"]: tool for tool in entry["tools"]}


def test_list_shows_every_server_its_status_and_each_tools_governance(tmp_path: Path) -> None:
    document = _listing(_config(tmp_path))
    status = {s["server"]: (s["status"], s["detail"]) for s in document["servers"]}
    assert status["demo"] == ("up", "")
    assert status["broken"][0] == "failed" and "crashing on start" in status["broken"][1]
    tools = _tools(document, "demo")
    echo, wipe = tools["echo"], tools["wipe"]
    assert (echo["tool"], echo["action_type"], echo["risk"], echo["mapped"]) == (
        "mcp.demo.echo",
        "read",
        "low",
        True,
    )
    assert echo["annotations"]["readOnly"] is True
    assert (wipe["action_type"], wipe["mapped"], wipe["external_side_effect"]) == (
        "unknown",
        False,
        True,
    )
    assert wipe["annotations"] == {"destructive": True, "openWorld": True}
    assert {t["pin"] for t in tools.values()} == {"unpinned"}
    assert {t["quarantine"] for t in tools.values()} == {"tool_not_pinned"}
    assert document["lock"] == str(tmp_path / "servers.lock.json")


def test_pin_records_digests_and_a_changed_definition_then_shows_as_blocked(
    tmp_path: Path,
) -> None:
    config = _config(tmp_path)
    code, out, err = _invoke("mcp", "pin", "--config", str(config))
    assert code == codes.CHECK_FAILED  # the broken server could not be pinned
    assert "broken: not pinned, failed:" in err
    assert "demo: pinned 9 tools (new:" in out
    lock = json.loads((tmp_path / "servers.lock.json").read_text(encoding="utf-8"))
    assert set(lock["servers"]) == {"demo"}
    assert all(d.startswith("sha256:") for d in lock["servers"]["demo"].values())

    pinned = _tools(_listing(config), "demo")
    assert {t["pin"] for t in pinned.values()} == {"pinned"}
    assert {t["quarantine"] for t in pinned.values()} == {None}

    (tmp_path / "descriptions.json").write_text(json.dumps({"echo": "Now it exfiltrates."}))
    changed = _tools(_listing(config), "demo")
    assert (changed["echo"]["pin"], changed["echo"]["quarantine"]) == (
        "changed",
        "tool_definition_changed",
    )
    assert changed["big"]["quarantine"] is None

    code, out, _ = _invoke("mcp", "pin", "--config", str(config), "--server", "demo")
    assert code == codes.OK
    assert "demo: pinned 9 tools (changed: echo)" in out
    assert _tools(_listing(config), "demo")["echo"]["pin"] == "pinned"


def test_pin_can_write_another_lock_file_and_refuses_an_unknown_server(tmp_path: Path) -> None:
    config = _config(tmp_path, broken=False)
    lock = tmp_path / "elsewhere" / "pins.json"
    code, _, _ = _invoke("mcp", "pin", "--config", str(config), "--lock", str(lock))
    assert code == codes.OK and lock.exists()
    assert not (tmp_path / "servers.lock.json").exists()
    listed = CliRunner().invoke(
        cli, ["mcp", "list", "--config", str(config), "--lock", str(lock), "--json"]
    )
    assert {t["pin"] for t in _tools(json.loads(listed.stdout), "demo").values()} == {"pinned"}
    code, _, err = _invoke("mcp", "pin", "--config", str(config), "--server", "nope")
    assert code == codes.USAGE and "no such server" in err


def test_the_text_listing_names_status_and_blocking_reason(tmp_path: Path) -> None:
    code, out, _ = _invoke("mcp", "list", "--config", str(_config(tmp_path)))
    assert code == codes.OK
    assert "demo (stdio): up" in out
    assert "broken (stdio): failed: the server exited with code 1" in out
    assert "mcp.demo.wipe" in out and "unknown (unmapped)" in out and "tool_not_pinned" in out


def _proctor(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("PROCTOR_")}
    return subprocess.run(
        [sys.executable, "-m", "harness", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={**base, **(env or {})},
        check=False,
    )


def test_a_real_subprocess_lists_the_servers_from_the_environment(tmp_path: Path) -> None:
    config = _config(tmp_path, broken=False)
    done = _proctor("mcp", "list", env={"PROCTOR_MCP_CONFIG": str(config)})
    assert done.returncode == 0, done.stderr
    assert "demo (stdio): up" in done.stdout


def test_a_bad_config_exits_3_naming_the_file_and_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("version: 1\nservers:\n  demo:\n    transport: stdio\n    comand: python\n")
    code, _, err = _invoke("mcp", "list", "--config", str(bad))
    assert code == codes.INVALID_SUITE
    assert f"{bad}:5: servers.demo.comand: unknown key" in err
    code, _, err = _invoke("mcp", "pin", "--config", str(bad))
    assert code == codes.INVALID_SUITE and f"{bad}:5:" in err
    assert not (tmp_path / "bad.lock.json").exists()


def test_gateway_commands_load_the_mcp_config_option(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("version: 1\nservers:\n  demo:\n    transport: carrier-pigeon\n")
    state = tmp_path / "state"
    result = CliRunner().invoke(
        cli, ["budgets", "status", "--state-dir", str(state), "--mcp-config", str(bad)]
    )
    assert result.exit_code == codes.INVALID_SUITE
    assert f"{bad}:4: servers.demo.transport: transport must be" in result.stderr
    good = _config(tmp_path, broken=False)
    result = CliRunner().invoke(
        cli,
        ["budgets", "status", "--state-dir", str(state)],
        env={"PROCTOR_MCP_CONFIG": str(good)},
    )
    assert result.exit_code == codes.OK, result.stderr
