"""A `stateless` MCP config's servers are started once per suite worker and shared by its
scenarios; a session that crashed (or restarted, or timed out) is replaced, so no scenario sees
another's state, in either order, serial or with -j 2, and the traces are the same bytes."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from governance import McpToolSource
from harness._scenario_runner import ProviderChoice, run_scenario
from harness._suite import load_checked_suite, run_checked_suite
from harness._suite_cache import SuiteCache
from harness._trace import Trace

REPO = Path(__file__).resolve().parents[2]
CONFIG = f"""\
version: 1
servers:
  demo:
    transport: stdio
    stateless: {{stateless}}
    command: python
    args: ["-m", "stubs.mcp_demo"]
    cwd: {REPO}
    tools:
      echo: {{{{action_type: read, risk: low, reversible: true, external_side_effect: false}}}}
      crash: {{{{action_type: read, risk: low, reversible: true, external_side_effect: false}}}}
"""
POLICY = """\
version: 1
rules:
  - id: demo-reads
    description: the demo server's mapped tools
    effect: allow
    match: {namespace: mcp.demo, action_type: read}
"""
SCENARIO = """\
  - id: {id}
    description: calls {tool} on the demo server
    request: go
    policy: policy.yaml
    mcp_config: servers.yaml
    script:
      - calls: [{{tool: mcp.demo.{tool}, args: {args}}}]
      - answer: "said {{{{tool:mcp.demo.{tool}}}}}"
    expect: {{must_execute: [mcp.demo.{tool}]}}
"""
KINDS = {"echo": "{text: hello}", "crash": "{}"}


def _suite(tmp_path: Path, order: list[str], *, stateless: bool = True) -> Path:
    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / "servers.yaml").write_text(
        CONFIG.format(stateless=str(stateless).lower()), encoding="utf-8"
    )
    (tmp_path / "policy.yaml").write_text(POLICY, encoding="utf-8")
    parts = ["scenarios:\n"]
    for n, tool in enumerate(order):
        parts.append(SCENARIO.format(id=f"{tool}-{n}", tool=tool, args=KINDS[tool]))
    path = tmp_path / "suite.yaml"
    path.write_text("".join(parts), encoding="utf-8")
    return path


def _bytes(trace: Trace) -> str:
    return trace.model_dump_json()


def _without_inputs(text: str) -> str:
    return re.sub(r'"inputs_digest":"sha256:[0-9a-f]+"', "", text)


def _sources(cache: SuiteCache, config: Path) -> list[McpToolSource]:
    found = cache.shared_mcp_sources(config)
    assert found is not None
    return found


def test_clean_scenarios_share_one_session_and_a_crashed_one_is_replaced(
    tmp_path: Path,
) -> None:
    suite = load_checked_suite([_suite(tmp_path, ["echo", "echo", "crash", "echo"])])
    config = tmp_path / "servers.yaml"
    cache = SuiteCache()
    try:
        first = run_scenario(suite[0], run_id="r", provider=ProviderChoice(), cache=cache)
        (source,) = _sources(cache, config)
        second = run_scenario(suite[1], run_id="r", provider=ProviderChoice(), cache=cache)
        assert _sources(cache, config) == [source]  # the same session, not a new server
        run_scenario(suite[2], run_id="r", provider=ProviderChoice(), cache=cache)
        assert source.status.state == "closed"  # the crashed session is not handed on
        last = run_scenario(suite[3], run_id="r", provider=ProviderChoice(), cache=cache)
        (fresh,) = _sources(cache, config)
        assert fresh is not source
        assert fresh.status.restarts == 0  # the crash left nothing behind
    finally:
        cache.close()
    assert first.final_answer == second.final_answer == last.final_answer == "said hello"


def test_a_crashed_session_would_leak_into_the_next_scenario_if_it_were_handed_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The test above can fail: reusing every session, the crash shows up as a restart."""
    suite = load_checked_suite([_suite(tmp_path, ["crash", "echo"])])
    monkeypatch.setattr(McpToolSource, "reusable", lambda self: True)
    cache = SuiteCache()
    try:
        run_scenario(suite[0], run_id="r", provider=ProviderChoice(), cache=cache)
        run_scenario(suite[1], run_id="r", provider=ProviderChoice(), cache=cache)
        (source,) = _sources(cache, tmp_path / "servers.yaml")
        assert source.status.restarts == 1
    finally:
        cache.close()


@pytest.mark.parametrize("order", [["crash", "echo", "echo"], ["echo", "crash", "echo"]])
def test_traces_are_the_same_bytes_shared_or_not_serial_or_in_parallel(
    tmp_path: Path, order: list[str]
) -> None:
    runs = {}
    for stateless in (True, False):
        for jobs in (1, 2):
            where = tmp_path / f"{stateless}-{jobs}"
            suite = load_checked_suite([_suite(where, order, stateless=stateless)])
            traces = run_checked_suite(suite, provider=ProviderChoice(), jobs=jobs).traces
            runs[stateless, jobs] = [
                _bytes(t.model_copy(update={"run_id": "r", "scenario_file": "s"})) for t in traces
            ]
    shared = runs[True, 1]
    assert runs[True, 2] == shared and runs[False, 2] == runs[False, 1]
    # Across the two configs only the inputs digest may differ: `stateless` is a config input.
    assert [_without_inputs(t) for t in runs[False, 1]] == [_without_inputs(t) for t in shared]
    echoes = [t for t in shared if '"scenario_id":"echo-' in t]
    assert len(echoes) == order.count("echo")
    assert all('"final_answer":"said hello"' in t for t in echoes)


PRESTART_PROBE = """
import importlib.abc, os, sys
from pathlib import Path

def demo_children():
    found = []
    for entry in os.listdir("/proc"):
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
            argv = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\\0")
        except (OSError, ValueError):
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == os.getpid() and b"stubs.mcp_demo" in argv:
            found.append(int(entry))
    return found

class Watch(importlib.abc.MetaPathFinder):
    seen = None
    def find_spec(self, name, path=None, target=None):
        if name == "mcp" and Watch.seen is None:
            Watch.seen = demo_children()
        return None

sys.meta_path.insert(0, Watch())
from harness._suite_cache import SuiteCache
cache = SuiteCache()
try:
    cache.prestart_mcp([Path(p) for p in sys.argv[1:]])
    print(len(Watch.seen or []), len(set(Watch.seen or [])), "mcp" in sys.modules)
finally:
    cache.close()
"""


@pytest.mark.skipif(not Path("/proc/self/stat").is_file(), reason="reads /proc")
def test_a_suites_stateless_server_is_running_once_before_the_mcp_sdk_is_imported() -> None:
    import subprocess
    import sys

    servers = REPO / "scenarios" / "mcp" / "servers"
    done = subprocess.run(
        [sys.executable, "-c", PRESTART_PROBE, str(servers / "demo.yaml"),
         str(servers / "demo-mapped.yaml")],
        capture_output=True, text=True, check=True, cwd=REPO,
    )  # fmt: skip
    # The two configs launch the same stateless server: one process for both, already started.
    assert done.stdout.split() == ["1", "1", "True"]
