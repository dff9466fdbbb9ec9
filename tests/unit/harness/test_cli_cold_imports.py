"""The CLI's cold paths load only what they use: no SDK, server, store or report module.

Each case runs the real group in a fresh interpreter and lists what ended up in `sys.modules`.
Speed itself is measured in benchmarks/cli_cold.py, never here.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from harness import _exit_codes as codes
from harness.cli._app import cli
from harness.cli._commands import COMMANDS

REPO = Path(__file__).resolve().parents[3]
SHIPPED_POLICY = REPO / "governance" / "data" / "default_policy.yaml"

# Top-level packages that cost tenths of a second to import, and Proctor's own modules that
# only running, serving or reporting needs.
HEAVY_PACKAGES = {
    "openai",
    "mcp",
    "mcp_types",
    "uvicorn",
    "starlette",
    "sse_starlette",
    "httpx",
    "httpx2",
    "anyio",
    "jinja2",
    "dotenv",
    "numpy",
    "bm25s",
    "agentdojo",
    "opentelemetry",
}
HEAVY_MODULES = {
    "harness.agentdojo",
    "harness.agentdojo._import",
    "harness.reports",
    "harness.reports._html",
    "harness._scenario_runner",
    "harness._loop",
    "harness._suite",
    "harness._baseline",
    "harness._baseline_record",
    "harness.providers._openai",
    "governance._gateway",
    "governance._firewall",
    "governance.stores._audit",
    "governance.stores._approvals",
    "governance.stores._budgets",
    "governance.mcp._client",
    "governance.tools._http_wire",
    "governance.tools._http_text",
    "governance._mcp_server",
    "governance.mcp._config",
    "stubs.openai_stub",
    "governance.telemetry",
    "governance.telemetry._sdk",
}

SPAWN_EVENTS = ("subprocess.Popen", "os.posix_spawn", "os.fork", "os.exec", "os.spawn", "os.system")
# Runs one CLI command in a fresh interpreter; reports its exit code, every module it loaded
# and every process it tried to start (an audit hook sees those before they happen).
PROBE = """
import json, sys
spawned = []
def hook(event, args):
    if event.startswith(SPAWN_EVENTS):
        spawned.append(event)
sys.addaudithook(hook)
from harness.cli._app import cli
code = cli.main(sys.argv[2:], prog_name="proctor", standalone_mode=False)
with open(sys.argv[1], "w", encoding="utf-8") as out:
    json.dump({"code": code, "modules": sorted(sys.modules), "spawned": spawned}, out)
"""

SCENARIO = """\
scenarios:
  - id: cold-read
    description: reads one file
    request: Read the README
    script:
      - calls: [{tool: fs.read, args: {path: README.txt}}]
      - answer: done
    expect:
      status: completed
      must_execute: [fs.read]
"""


def _spawned_and_loaded(tmp_path: Path, *args: str) -> tuple[int, list[str], set[str], str]:
    report = tmp_path / "probe.json"
    probe = f"SPAWN_EVENTS = {SPAWN_EVENTS!r}\n" + PROBE
    done = subprocess.run(
        [sys.executable, "-c", probe, str(report), *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )
    assert report.exists(), done.stderr
    found = json.loads(report.read_text(encoding="utf-8"))
    return found["code"], found["spawned"], set(found["modules"]), done.stderr


def _loaded_after(tmp_path: Path, *args: str) -> tuple[int, set[str]]:
    code, _, modules, _ = _spawned_and_loaded(tmp_path, *args)
    return code, modules


def _heavy(modules: set[str]) -> list[str]:
    return sorted(m for m in modules if m.split(".")[0] in HEAVY_PACKAGES or m in HEAVY_MODULES)


@pytest.mark.parametrize(
    "args",
    [
        ("--help",),
        ("check", "--help"),
        ("policy", "--help"),
        ("policy", "check", "--help"),
        ("policy", "check", str(SHIPPED_POLICY)),
        ("policy", "explain", str(SHIPPED_POLICY), "--tool", "fs.read", "--args", "{}"),
        ("policy", "check", "no-such-policy.yaml"),
        ("tools", "list"),
        ("import", "--help"),
        ("import", "agentdojo", "--help"),
        ("check", "-k", "kb and not injection"),
        ("check", "--tag", "nosuchtag"),
        ("no-such-command",),
    ],
    ids=lambda args: " ".join(args)[:40],
)
def test_help_and_policy_commands_load_no_heavy_module(
    tmp_path: Path, args: tuple[str, ...]
) -> None:
    code, modules = _loaded_after(tmp_path, *args)
    assert code in (codes.OK, codes.USAGE)
    assert _heavy(modules) == []


def test_checking_a_suite_without_mcp_servers_loads_no_heavy_module(tmp_path: Path) -> None:
    suite = tmp_path / "cold.yaml"
    suite.write_text(SCENARIO, encoding="utf-8")
    code, modules = _loaded_after(tmp_path, "check", "--scenarios", str(suite))
    assert code == codes.OK
    assert _heavy(modules) == []


def test_a_suite_that_breaks_its_contract_still_exits_3_without_heavy_modules(
    tmp_path: Path,
) -> None:
    suite = tmp_path / "broken.yaml"
    suite.write_text(SCENARIO.replace("fs.read", "fs.raed"), encoding="utf-8")
    code, modules = _loaded_after(tmp_path, "check", "--scenarios", str(suite))
    assert code == codes.INVALID_SUITE
    assert _heavy(modules) == []


def test_a_replay_run_loads_neither_an_sdk_nor_the_trace_diff_library(tmp_path: Path) -> None:
    suite = tmp_path / "cold.yaml"
    suite.write_text(SCENARIO, encoding="utf-8")
    code, modules = _loaded_after(
        tmp_path,
        "run",
        "--no-baseline",
        "--scenarios",
        str(suite),
        "--report-dir",
        str(tmp_path / "out"),
    )
    assert code == codes.OK
    sdks = {"openai", "mcp", "mcp_types", "httpx", "httpx2", "anyio", "uvicorn", "starlette"}
    assert sorted(m for m in modules if m.split(".")[0] in sdks) == []
    # Export is off: neither the OpenTelemetry SDK nor Proctor's exporter is loaded.
    assert sorted(m for m in modules if m.split(".")[0] == "opentelemetry") == []
    assert "governance.telemetry._sdk" not in modules
    # deepdiff (and numpy under it) only shows a drifted scenario's trace diff; bm25s (and
    # numpy) only ranks a kb.search.
    heavy = {"deepdiff", "numpy", "bm25s"}
    assert sorted(m for m in modules if m.split(".")[0] in heavy) == []


def test_the_probe_sees_opentelemetry_once_a_run_exports(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The pins above mean something only if the probe sees the SDK where it is used.
    suite = tmp_path / "cold.yaml"
    suite.write_text(SCENARIO, encoding="utf-8")
    monkeypatch.setenv("PROCTOR_OTEL_ENDPOINT", "http://127.0.0.1:9")
    code, modules = _loaded_after(
        tmp_path, "run", "--no-baseline", "--otel", "--scenarios", str(suite),
        "--report-dir", str(tmp_path / "out"),
    )  # fmt: skip
    assert code == codes.OK
    assert "opentelemetry.sdk.trace" in modules
    assert "governance.telemetry._sdk" in modules


def test_the_probe_sees_heavy_modules_when_a_command_really_needs_them(tmp_path: Path) -> None:
    # `run --help` declares provider options: it may load more. The point is that the probe
    # reports what a command imports, so the empty lists above mean something.
    _, modules = _loaded_after(tmp_path, "stub", "--help")
    assert "stubs.openai_stub" in _heavy(modules)


def test_each_lazy_entry_names_a_command_whose_help_starts_with_its_summary() -> None:
    for name, entry in COMMANDS.items():
        command = cli.get_command(click.Context(cli), name)
        assert isinstance(command, click.Command), name
        assert command.name == name
        first_paragraph = " ".join((command.help or "").split("\n\n")[0].split())
        assert first_paragraph == entry.summary, f"{name}: update its summary in _commands.py"


def test_the_command_list_reads_the_same_before_and_after_every_command_is_loaded() -> None:
    warm_up = "from harness.cli._app import cli; import click; "
    warm_up += "[cli.get_command(click.Context(cli), name) for name in cli.lazy]; "
    listings = []
    for prelude in ("", warm_up):
        probe = prelude + "from harness.cli._app import main; main()"
        done = subprocess.run(
            [sys.executable, "-c", probe, "--help"],
            cwd=REPO,
            capture_output=True,
            text=True,
            check=True,
        )
        listings.append(done.stdout)
    cold, warm = listings
    assert "Commands:" in cold and "policy     Validate policy files" in cold
    assert cold == warm


def test_an_unknown_command_exits_64_and_suggests_the_closest_name() -> None:
    result = CliRunner().invoke(cli, ["chek"])
    assert result.exit_code == codes.USAGE
    assert "No such command 'chek'" in result.stderr
    assert "Did you mean 'check'?" in result.stderr


def test_checking_the_shipped_suite_starts_no_process_and_loads_no_mcp_sdk(
    tmp_path: Path,
) -> None:
    # Its MCP configs require pins and their locks store the definitions: the check reads them.
    code, spawned, modules, stderr = _spawned_and_loaded(tmp_path, "check")
    assert code == codes.OK
    assert spawned == []
    assert "note:" not in stderr
    assert "governance.mcp._client" not in modules
    assert sorted(m for m in modules if m.split(".")[0] in HEAVY_PACKAGES) == []


def test_the_spawn_probe_sees_a_check_that_starts_an_mcp_server(tmp_path: Path) -> None:
    # Without a lock the demo server is started: the probe must see it, or the test above
    # proves nothing. The one-line note says why and how to avoid it.
    servers = REPO / "scenarios" / "mcp" / "servers"
    config = tmp_path / "demo.yaml"
    config.write_text((servers / "demo.yaml").read_text(encoding="utf-8"), encoding="utf-8")
    suite = tmp_path / "suite.yaml"
    original = (REPO / "scenarios" / "mcp" / "demo.yaml").read_text(encoding="utf-8")
    suite.write_text(
        original.replace("../policies/mcp.yaml", str(REPO / "scenarios/policies/mcp.yaml"))
        .replace("servers/demo-mapped.yaml", "demo.yaml")
        .replace("servers/demo.yaml", "demo.yaml"),
        encoding="utf-8",
    )
    code, spawned, modules, stderr = _spawned_and_loaded(
        tmp_path, "check", "--scenarios", str(suite)
    )
    assert "subprocess.Popen" in spawned or "os.posix_spawn" in spawned
    assert "mcp" in modules
    assert "proctor mcp pin --config" in stderr
    assert code in (codes.OK, codes.INVALID_SUITE)


def test_listing_tools_of_a_locked_mcp_config_loads_neither_openai_nor_the_mcp_sdk(
    tmp_path: Path,
) -> None:
    config = REPO / "scenarios" / "mcp" / "servers" / "demo.yaml"
    code, spawned, modules, _ = _spawned_and_loaded(
        tmp_path, "tools", "list", "--json", "--mcp-config", str(config)
    )
    assert code == codes.OK
    assert spawned == []
    assert sorted(m for m in modules if m.split(".")[0] in HEAVY_PACKAGES) == []


def test_checking_a_policy_against_a_locked_mcp_config_starts_nothing_and_loads_no_sdk(
    tmp_path: Path,
) -> None:
    config = REPO / "scenarios" / "mcp" / "servers" / "demo.yaml"
    policy = REPO / "scenarios" / "policies" / "mcp.yaml"
    code, spawned, modules, stderr = _spawned_and_loaded(
        tmp_path, "policy", "check", str(policy), "--mcp-config", str(config)
    )
    assert code == codes.OK, stderr
    assert spawned == []
    assert "note:" not in stderr
    assert "governance.mcp._client" not in modules
    assert sorted(m for m in modules if m.split(".")[0] in HEAVY_PACKAGES) == []
