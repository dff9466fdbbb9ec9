"""A malformed file given to any command exits with its documented code and one message.

Before, a NUL byte, deep nesting or a huge number in a policy, scenario, MCP config, pin file,
baseline or stored run ended in exit 70 with a traceback.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from harness import _exit_codes as codes
from harness.cli._app import cli

ROOT = Path(__file__).resolve().parents[3]
DEEP_YAML = b"version: 1\nx: " + b"[" * 3000 + b"]" * 3000 + b"\n"
DEEP_JSON = b'{\n"version": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
BAD_YAML = {
    "nul": b"version: 1\n\x00\n",
    "control": b"version: 1\nx: a\x07\n",
    "deep": DEEP_YAML,
    "surrogate": b'version: 1\nx: "\\udfff"\n',
    "huge-number": b"version: 1\nx: " + b"7" * 5000 + b"\n",
}


def _proctor(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, list(args), prog_name="proctor")
    return result.exit_code, result.stderr


def _refused(code: int, stderr: str, path: Path, line: int, expected: int) -> None:
    assert code == expected, stderr
    assert f"{path}:{line}: " in stderr, stderr
    assert "Traceback" not in stderr and "internal error" not in stderr, stderr


@pytest.mark.parametrize("raw", BAD_YAML.values(), ids=BAD_YAML.keys())
def test_policy_check_of_a_malformed_policy_exits_3(tmp_path: Path, raw: bytes) -> None:
    path = tmp_path / "policy.yaml"
    path.write_bytes(raw)
    code, stderr = _proctor("policy", "check", str(path))
    _refused(code, stderr, path, 2, codes.INVALID_SUITE)


@pytest.mark.parametrize("raw", BAD_YAML.values(), ids=BAD_YAML.keys())
def test_check_of_a_malformed_scenario_exits_3(tmp_path: Path, raw: bytes) -> None:
    path = tmp_path / "suite" / "case.yaml"
    path.parent.mkdir()
    path.write_bytes(raw)
    code, stderr = _proctor("check", "--scenarios", str(path.parent))
    _refused(code, stderr, path, 2, codes.INVALID_SUITE)


@pytest.mark.parametrize("raw", BAD_YAML.values(), ids=BAD_YAML.keys())
def test_mcp_list_with_a_malformed_config_exits_3(tmp_path: Path, raw: bytes) -> None:
    path = tmp_path / "servers.yaml"
    path.write_bytes(raw)
    code, stderr = _proctor("mcp", "list", "--config", str(path))
    _refused(code, stderr, path, 2, codes.INVALID_SUITE)


def test_mcp_list_with_a_deeply_nested_pin_file_exits_3(tmp_path: Path) -> None:
    config = tmp_path / "servers.yaml"
    config.write_bytes((ROOT / "scenarios/mcp/servers/demo.yaml").read_bytes())
    lock = tmp_path / "servers.lock.json"
    lock.write_bytes(DEEP_JSON)
    code, stderr = _proctor("mcp", "list", "--config", str(config), "--lock", str(lock))
    _refused(code, stderr, lock, 2, codes.INVALID_SUITE)


@pytest.mark.parametrize("raw", BAD_YAML.values(), ids=BAD_YAML.keys())
def test_ask_with_a_malformed_replay_script_exits_3(tmp_path: Path, raw: bytes) -> None:
    path = tmp_path / "script.yaml"
    path.write_bytes(raw)
    code, stderr = _proctor(
        "ask", "hello", "--script", str(path), "--state-dir", str(tmp_path / "state")
    )
    _refused(code, stderr, path, 2, codes.INVALID_SUITE)


def test_a_deeply_nested_baseline_exits_3(tmp_path: Path) -> None:
    path = tmp_path / "baseline.json"
    path.write_bytes(DEEP_JSON)
    code, stderr = _proctor(
        "run", "--scenarios", str(ROOT / "scenarios/reads.yaml"), "--baseline", str(path)
    )
    _refused(code, stderr, path, 2, codes.INVALID_SUITE)


def test_score_of_a_run_whose_report_nests_deeply_is_a_usage_error(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / "report.json").write_bytes(DEEP_JSON)
    code, stderr = _proctor("score", str(run))
    _refused(code, stderr, run / "report.json", 2, codes.USAGE)
