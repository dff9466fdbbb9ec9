"""A serial suite reads each scenario once, a window ahead of the one running; `-j` chunks
shrink toward the end of the suite so no worker idles through another's long last chunk."""

from __future__ import annotations

import zlib
from pathlib import Path

import pytest

import harness._scenario_load as scenario_load
import harness._suite_workers as workers
from harness._scenario import Scenario
from harness._scenario_load import LoadedScenario
from harness._scenario_runner import ProviderChoice
from harness._suite import load_checked_suite, run_checked_suite
from harness._suite_cache import SuiteCache
from tests.small_suite import REPO

SCENARIOS = REPO / "scenarios"


def test_a_serial_run_unpacks_each_scenario_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    suite = load_checked_suite([SCENARIOS / "reads.yaml", SCENARIOS / "blocks.yaml"])
    unpacked: list[str] = []

    def unpack(packed: bytes) -> Scenario:  # uncached: every unpack counts
        scenario = Scenario.model_validate_json(zlib.decompress(packed))
        unpacked.append(scenario.id)
        return scenario

    monkeypatch.setattr(scenario_load, "unpack_scenario", unpack)
    run_checked_suite(suite, provider=ProviderChoice(), run_id="r", trace_dir=tmp_path / "t")
    assert unpacked == list(suite.ids())


class _Recorder:
    def __init__(self) -> None:
        self.events: list[str] = []

    def prestart_mcp(self, configs: list[Path]) -> None:
        self.events.append("prestart:" + ",".join(config.name for config in configs))


def _scenario(n: int, config: str | None) -> LoadedScenario:
    data: dict[str, object] = {
        "id": f"s{n}",
        "description": "a scenario",
        "request": "hi",
        "script": [{"answer": "done"}],
        "expect": {"status": "completed"},
    }
    if config is not None:
        data["mcp_config"] = config
    return LoadedScenario(Scenario.model_validate(data), Path("/suite/x.yaml"), 1, {})


def test_mcp_servers_start_when_their_first_scenario_enters_the_window_and_only_once() -> None:
    recorder = _Recorder()
    items = [_scenario(0, None), _scenario(1, None), _scenario(2, "a.yaml"), _scenario(3, None)]
    items += [_scenario(4, "a.yaml"), _scenario(5, "b.yaml")]
    cache: SuiteCache = recorder  # type: ignore[assignment]
    for loaded in workers.read_ahead(items, cache, window=2):
        recorder.events.append(loaded.scenario.id)
    assert recorder.events == [
        "s0",  # the window is s0 s1: nothing to start
        "prestart:a.yaml",  # s2 enters as s0 leaves
        "s1",
        "s2",
        "s3",  # s4 entered: a.yaml was offered already
        "prestart:b.yaml",
        "s4",
        "s5",
    ]


@pytest.mark.parametrize(("count", "jobs"), [(0, 2), (1, 2), (7, 3), (1000, 2), (5000, 4)])
def test_chunks_cover_the_suite_in_order_and_shrink_to_one_scenario_at_the_end(
    count: int, jobs: int
) -> None:
    spans = workers.chunk_spans(count, jobs)
    assert [n for start, stop in spans for n in range(start, stop)] == list(range(count))
    sizes = [stop - start for start, stop in spans]
    assert all(1 <= size <= 32 for size in sizes)
    assert sizes == sorted(sizes, reverse=True)
    if count >= jobs:
        assert sizes[-jobs:] == [1] * jobs  # the tail: one scenario a chunk, for every worker
