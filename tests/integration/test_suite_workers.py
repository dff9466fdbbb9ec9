"""`-j` workers: forked when the parent has one thread, from a forkserver otherwise, the same
trace bytes either way; a worker that dies fails the run naming every scenario left without a
trace; a suite's stateless MCP servers are started before the scenarios that use them."""

from __future__ import annotations

import multiprocessing
import os
import signal
import threading
from pathlib import Path

import pytest
from click.testing import CliRunner

import harness._suite_workers as workers
from governance import McpToolSource
from harness import _exit_codes as codes
from harness._errors import HarnessError
from harness._scenario_load import LoadedScenario
from harness._scenario_runner import ProviderChoice, run_scenario
from harness._suite import load_checked_suite, run_checked_suite
from harness._suite_cache import SuiteCache
from harness._trace_store import StoredTraces
from harness.cli import cli

REPO = Path(__file__).resolve().parents[2]
SCENARIOS = REPO / "scenarios"


def _suite() -> list[LoadedScenario]:
    return load_checked_suite([SCENARIOS / "reads.yaml", SCENARIOS / "blocks.yaml"])


def test_workers_are_forked_only_while_the_parent_has_a_single_thread() -> None:
    if threading.active_count() == 1:
        assert workers.worker_context().get_start_method() == "fork"
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        assert workers.worker_context().get_start_method() == "forkserver"
    finally:
        stop.set()
        other.join()


@pytest.mark.parametrize("method", ["fork", "forkserver"])
def test_forked_and_forkserver_workers_write_the_serial_trace_bytes(
    tmp_path: Path, method: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    suite = _suite()
    run_checked_suite(suite, provider=ProviderChoice(), run_id="r", trace_dir=tmp_path / "one")
    context = multiprocessing.get_context(method)
    if method == "forkserver":
        context.set_forkserver_preload([workers.__name__])
    monkeypatch.setattr(workers, "worker_context", lambda: context)
    run = run_checked_suite(
        suite, provider=ProviderChoice(), run_id="r", jobs=2, trace_dir=tmp_path / "two"
    )
    names = sorted(p.name for p in (tmp_path / "one").iterdir())
    assert len(names) == len(suite)
    assert names == sorted(p.name for p in (tmp_path / "two").iterdir())
    for name in names:
        assert (tmp_path / "one" / name).read_bytes() == (tmp_path / "two" / name).read_bytes()
    assert list(run.traces.digests) == [item.scenario.id for item in suite]  # suite order


def _kill_worker_at(monkeypatch: pytest.MonkeyPatch, victim: str) -> None:
    """A forked worker SIGKILLs itself when it reaches `victim` (no Python error, no cleanup)."""
    parent = os.getpid()
    real = workers.run_scenario

    def dying(loaded: LoadedScenario, **kwargs: object) -> object:
        if os.getpid() != parent and loaded.scenario.id == victim:
            os.kill(os.getpid(), signal.SIGKILL)
        return real(loaded, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(workers, "run_scenario", dying)
    monkeypatch.setattr(workers, "worker_context", lambda: multiprocessing.get_context("fork"))


def test_a_worker_killed_mid_suite_fails_the_run_naming_the_scenarios_without_a_trace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    suite = _suite()
    victim = suite[len(suite) // 2].scenario.id
    _kill_worker_at(monkeypatch, victim)
    finished: list[str] = []
    with pytest.raises(HarnessError) as caught:
        run_checked_suite(
            suite,
            provider=ProviderChoice(),
            jobs=2,
            trace_dir=tmp_path / "traces",
            progress=lambda done, total, item: finished.append(item.scenario_id),
        )
    message = str(caught.value)
    assert "worker process died" in message
    lost = [item.scenario.id for item in suite if item.scenario.id not in finished]
    assert victim in lost
    assert f"{len(lost)} of {len(suite)} scenarios have no trace" in message
    for sid in lost[: workers._NAMED_LOST]:
        assert sid in message


def test_proctor_run_exits_non_zero_when_a_worker_is_killed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    suite = _suite()
    victim = suite[3].scenario.id
    _kill_worker_at(monkeypatch, victim)
    monkeypatch.chdir(REPO)
    result = CliRunner().invoke(
        cli,
        [
            "run", "--no-baseline", "-j", "2", "--report-dir", str(tmp_path / "report"),
            "--scenarios", str(SCENARIOS / "reads.yaml"),
            "--scenarios", str(SCENARIOS / "blocks.yaml"),
        ],
    )  # fmt: skip
    assert result.exit_code == codes.INTERNAL
    assert "worker process died" in result.output
    assert victim in result.output
    assert not (tmp_path / "report" / "report.json").exists()  # nothing scored, nothing reported


STATELESS_CONFIG = f"""\
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
"""


def test_prestarted_servers_are_the_sessions_the_scenarios_then_use(tmp_path: Path) -> None:
    config = tmp_path / "servers.yaml"
    config.write_text(STATELESS_CONFIG.format(stateless="true"), encoding="utf-8")
    cache = SuiteCache()
    try:
        cache.prestart_mcp([config])
        (started,) = cache._mcp.values()  # begun before any scenario asked for them
        (source,) = started
        assert source.status.state == "starting"  # not waited for: it boots meanwhile
        assert cache.shared_mcp_sources(config) == [source]  # no second server
        assert source.status.state == "up"
        assert source.pid is not None
    finally:
        cache.close()
    assert source.status.state == "closed"


def test_prestart_starts_no_server_for_a_config_that_is_not_stateless(tmp_path: Path) -> None:
    config = tmp_path / "servers.yaml"
    config.write_text(STATELESS_CONFIG.format(stateless="false"), encoding="utf-8")
    broken = tmp_path / "broken.yaml"
    broken.write_text("version: 1\nservers: [\n", encoding="utf-8")
    cache = SuiteCache()
    try:
        cache.prestart_mcp([config, broken, tmp_path / "missing.yaml"])
        assert cache._mcp == {}
    finally:
        cache.close()


def test_a_serial_suite_starts_its_mcp_servers_before_running_its_first_scenario(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    suite = load_checked_suite([SCENARIOS / "reads.yaml", SCENARIOS / "mcp" / "demo.yaml"])
    order: list[str] = []
    real_prestart = SuiteCache.prestart_mcp

    def prestart(self: SuiteCache, configs: list[Path]) -> None:
        order.append("prestart:" + ",".join(sorted(p.name for p in configs)))
        real_prestart(self, configs)

    def run(loaded: LoadedScenario, **kwargs: object) -> object:
        order.append(loaded.scenario.id)
        return run_scenario(loaded, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(SuiteCache, "prestart_mcp", prestart)
    monkeypatch.setattr(workers, "run_scenario", run)
    monkeypatch.chdir(REPO)
    run_checked_suite(suite, provider=ProviderChoice())
    assert order[0] == "prestart:demo-mapped.yaml,demo.yaml"
    assert order[1:] == [item.scenario.id for item in suite]


def test_a_serial_suite_stops_its_mcp_servers_in_the_background_and_none_outlives_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    suite = load_checked_suite([SCENARIOS / "mcp" / "demo.yaml"])
    seen: list[tuple[list[McpToolSource], threading.Thread | None]] = []
    real_close = SuiteCache.close_in_background

    def close_in_background(self: SuiteCache) -> threading.Thread | None:
        sources = [source for found in self._mcp.values() for source in found]
        pids = [source.pid for source in sources]
        assert all(pid is not None for pid in pids)  # the servers still run at this point
        seen.append((sources, real_close(self)))
        return seen[-1][1]

    monkeypatch.setattr(SuiteCache, "close_in_background", close_in_background)
    monkeypatch.chdir(REPO)
    run_checked_suite(suite, provider=ProviderChoice())
    ((sources, closer),) = seen
    assert len(sources) == 2 and closer is not None
    closer.join(timeout=30)
    assert not closer.is_alive()
    assert [source.status.state for source in sources] == ["closed", "closed"]
    assert [source.pid for source in sources] == [None, None]


@pytest.mark.parametrize("method", ["fork", "forkserver"])
def test_with_a_trace_directory_the_workers_write_every_trace_and_the_parent_none(
    tmp_path: Path, method: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The parent only adopts what a worker wrote: it neither parses a trace nor writes one
    (it did both for every scenario while the store was empty, which read as false)."""
    context = multiprocessing.get_context(method)
    if method == "forkserver":
        context.set_forkserver_preload([workers.__name__])
    monkeypatch.setattr(workers, "worker_context", lambda: context)
    parent = os.getpid()
    real_add = StoredTraces.add

    def add(self: StoredTraces, trace: object) -> None:
        assert os.getpid() != parent, "the parent wrote a trace a worker had run"
        real_add(self, trace)  # type: ignore[arg-type]

    monkeypatch.setattr(StoredTraces, "add", add)
    suite = _suite()
    run = run_checked_suite(
        suite, provider=ProviderChoice(), run_id="r", jobs=2, trace_dir=tmp_path / "traces"
    )
    assert isinstance(run.traces, StoredTraces)
    assert sorted(p.name for p in (tmp_path / "traces").iterdir()) == sorted(
        f"{item.scenario.id}.json" for item in suite
    )
