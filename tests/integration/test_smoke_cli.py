"""`proctor smoke` as a user runs it (a real subprocess) and through CliRunner: exit codes."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness import _exit_codes as codes
from harness._smoke import CHECK_NAMES, SMOKE_SCENARIOS
from harness.cli._app import cli

pytestmark = pytest.mark.slow

REPO = Path(__file__).parents[2]
KEY = "sk-smoke-SECRET-0123456789"
ALL_CHECKS = len(SMOKE_SCENARIOS) * len(CHECK_NAMES)


def _clean_env() -> dict[str, str]:
    """The environment minus every PROCTOR_* setting; the repo importable from anywhere."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PROCTOR_")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    return env


def _proctor(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "harness", "smoke", *args],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=cwd,
        env=_clean_env(),
        check=False,
    )


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _broken(state_dir: Path) -> list[str]:
    url = f"http://127.0.0.1:{_closed_port()}/v1"
    return ["--base-url", url, "--model", "m", "--api-key", KEY, "--max-retries", "0",
            "--state-dir", str(state_dir)]  # fmt: skip


# -- a real subprocess ------------------------------------------------------------------------


def test_no_credential_anywhere_is_skipped_with_77_never_a_pass(tmp_path: Path) -> None:
    assert not (tmp_path / ".env").exists()
    done = _proctor(tmp_path)
    assert done.returncode == codes.SKIPPED == 77, done.stderr
    assert done.stdout.startswith("SKIPPED: no live credential\n")
    assert "PROCTOR_LLM_API_KEY" in done.stdout and "PROCTOR_LLM_BASE_URL" in done.stdout
    assert "passed" not in done.stdout


def test_stub_mode_passes_every_check_and_exits_0(tmp_path: Path) -> None:
    done = _proctor(tmp_path, "--stub")
    assert done.returncode == 0, done.stdout + done.stderr
    names = [s.name for s in SMOKE_SCENARIOS]
    cells = [line.split() for line in done.stdout.splitlines()]
    rows = [row[:3] for row in cells if row and row[0] in names]
    assert rows == [[s, c, "PASS"] for s in names for c in CHECK_NAMES]
    assert f"smoke passed: {ALL_CHECKS}/{ALL_CHECKS} checks" in done.stdout
    assert not list(tmp_path.iterdir())  # nothing written where it ran


def test_a_closed_port_exits_1_naming_the_failing_check_without_a_crash(tmp_path: Path) -> None:
    done = _proctor(tmp_path, *_broken(tmp_path / "state"))
    assert done.returncode == codes.CHECK_FAILED, done.stdout + done.stderr
    assert "read-order/http" in done.stdout and "Connection refused" in done.stdout
    assert "Traceback" not in done.stdout + done.stderr
    assert KEY not in done.stdout + done.stderr


# -- CliRunner ----------------------------------------------------------------------------------


@pytest.fixture
def bare(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """No PROCTOR_* variable and a working directory without .env."""
    for name in list(os.environ):
        if name.startswith("PROCTOR_"):
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)
    yield tmp_path


def _invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, ["smoke", *args])
    return result.exit_code, result.stdout, result.stderr


def test_cli_without_a_credential_exits_77(bare: Path) -> None:
    code, out, _ = _invoke()
    assert code == codes.SKIPPED
    assert out.splitlines()[0] == "SKIPPED: no live credential"


def test_cli_a_dotenv_in_the_working_directory_is_a_configured_credential(bare: Path) -> None:
    url = f"http://127.0.0.1:{_closed_port()}/v1"
    (bare / ".env").write_text(
        f"PROCTOR_LLM_API_KEY={KEY}\nPROCTOR_LLM_BASE_URL={url}\nPROCTOR_LLM_MODEL=m\n"
    )
    code, out, _ = _invoke("--max-retries", "0", "--state-dir", str(bare / "state"))
    assert code == codes.CHECK_FAILED  # it ran (and failed): not skipped
    assert "SKIPPED" not in out and url.removesuffix("/v1") in out  # the origin alone


def test_cli_json_skip_says_skipped_not_passed(bare: Path) -> None:
    code, out, _ = _invoke("--json")
    assert code == codes.SKIPPED
    assert json.loads(out)["result"] == "skipped"


def test_cli_stub_with_json_lists_every_check_as_passed(bare: Path) -> None:
    code, out, _ = _invoke("--stub", "--json", "--state-dir", str(bare / "state"))
    assert code == codes.OK
    report = json.loads(out)
    assert (report["result"], report["target"]) == ("passed", "vendor stub")
    assert len(report["checks"]) == ALL_CHECKS and all(c["passed"] for c in report["checks"])
    assert (bare / "state" / "read-order" / "audit.sqlite").is_file()  # --state-dir is kept


def test_cli_stub_with_a_misbehaving_model_exits_1(bare: Path) -> None:
    code, out, _ = _invoke(
        "--stub", "--model", "proctor-stub-1:prose-tool-call", "--state-dir", str(bare / "s")
    )
    assert code == codes.CHECK_FAILED
    assert "read-order/tool_names" in out and "read-order/governance" in out


def test_cli_a_closed_port_exits_1_naming_the_check(bare: Path) -> None:
    code, out, _ = _invoke(*_broken(bare / "state"))
    assert code == codes.CHECK_FAILED
    assert "FAIL" in out and "read-order/http" in out
    assert f"state kept for inspection: {bare / 'state'}" in out


def test_cli_stub_refuses_a_base_url_as_a_usage_error(bare: Path) -> None:
    code, _, err = _invoke("--stub", "--base-url", "http://example.com/v1")
    assert code == codes.USAGE
    assert "--stub serves its own endpoint" in err


def test_cli_a_used_state_dir_is_a_usage_error(bare: Path) -> None:
    (bare / "used").mkdir()
    (bare / "used" / "x").write_text("x")
    code, _, err = _invoke("--stub", "--state-dir", str(bare / "used"))
    assert code == codes.USAGE
    assert "is not empty" in err


def test_cli_a_key_without_a_base_url_is_a_config_error(bare: Path) -> None:
    code, _, err = _invoke("--api-key", KEY)
    assert code == codes.INVALID_SUITE
    assert "PROCTOR_LLM_BASE_URL" in err and KEY not in err
