"""Scenario pages (`setup.http_pages`): served by a real loopback server, reachable at exactly
the declared URLs while their scenario runs, invisible in traces, refused at load elsewhere."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from governance.tools import ToolExecutionError
from harness._errors import ScenarioError
from harness._scenario import HttpPage
from harness._scenario_load import load_scenarios
from harness._scenario_runner import ProviderChoice, run_scenario
from harness._suite_cache import SuiteCache

ROOT = Path(__file__).resolve().parents[3]
PAGES = {"http://docs.fixture.test/refunds": HttpPage(content_type="text/plain", body="30 days")}


def _never(host: str, port: int) -> list[str]:
    raise OSError("no DNS in tests")


@pytest.fixture
def cache() -> Iterator[SuiteCache]:
    made = SuiteCache()
    try:
        yield made
    finally:
        made.close()


def test_a_declared_page_is_fetched_from_the_loopback_server_under_its_own_url(
    cache: SuiteCache,
) -> None:
    cache.http_pages.serve(PAGES)
    fetcher = cache.http_pages.fetcher(resolver=_never)
    result = fetcher.fetch("http://docs.fixture.test/refunds")
    assert result == {
        "url": "http://docs.fixture.test/refunds",
        "status": 200,
        "content_type": "text/plain",
        "text": "30 days",
        "truncated": False,
    }
    assert fetcher.fetch("http://DOCS.fixture.test./nope")["status"] == 404


def test_only_the_declared_hosts_at_port_80_are_routed_and_nothing_after_the_scenario(
    cache: SuiteCache,
) -> None:
    fetcher = cache.http_pages.fetcher(resolver=_never)
    cache.http_pages.serve(PAGES)
    with pytest.raises(ToolExecutionError) as other_host:
        fetcher.fetch("http://other.fixture.test/refunds")
    assert other_host.value.reason == "unresolvable"
    with pytest.raises(ToolExecutionError) as other_port:
        fetcher.fetch("http://docs.fixture.test:8080/refunds")
    assert other_port.value.reason == "port_not_allowed"
    cache.http_pages.clear()
    with pytest.raises(ToolExecutionError) as after:
        fetcher.fetch("http://docs.fixture.test/refunds")
    assert after.value.reason == "unresolvable"  # the route is gone, DNS is never asked


def test_a_scenario_without_pages_leaves_no_route_from_the_one_before(cache: SuiteCache) -> None:
    cache.http_pages.serve(PAGES)
    cache.http_pages.serve({})
    with pytest.raises(ToolExecutionError) as refused:
        cache.http_pages.fetcher(resolver=_never).fetch("http://docs.fixture.test/refunds")
    assert refused.value.reason == "unresolvable"


def _shipped(scenario_id: str) -> object:
    loaded = load_scenarios([ROOT / "scenarios" / "http_pages.yaml"])
    return next(item for item in loaded if item.scenario.id == scenario_id)


def test_traces_name_the_declared_url_only_whatever_port_the_server_got() -> None:
    loaded = _shipped("http-fetch-declared-page")
    traces: list[str] = []
    ports: list[int] = []
    for _ in range(2):
        cache = SuiteCache()
        try:
            trace = run_scenario(
                loaded,  # type: ignore[arg-type]
                run_id="r",
                provider=ProviderChoice(),
                cache=cache,
            )
            ports.append(cache.http_pages._start())
        finally:
            cache.close()
        traces.append(json.dumps(trace.model_dump(mode="json"), sort_keys=True))
    assert ports[0] != ports[1]  # two servers, two ephemeral ports...
    assert traces[0] == traces[1]  # ...and not a byte of difference
    assert "Refunds are accepted within 30 days of delivery." in traces[0]
    for port in ports:
        assert f":{port}" not in traces[0]
    assert "127.0.0.1" not in traces[0]


@pytest.mark.parametrize(
    ("url", "fix"),
    [
        ("http://docs.example.com/a", "reserved test TLD"),
        ("http://127.0.0.1/a", "reserved test TLD"),
        ("http://localhost/a", "reserved test TLD"),
        ("https://docs.fixture.test/a", "plain http:// on port 80"),
        ("http://docs.fixture.test:8080/a", "plain http:// on port 80"),
        ("http://user@docs.fixture.test/a", "not a URL http.get reads"),
    ],
)
def test_a_page_off_the_reserved_test_hosts_is_refused_at_load_with_its_line(
    tmp_path: Path, url: str, fix: str
) -> None:
    path = tmp_path / "pages.yaml"
    path.write_text(
        "id: pages\ndescription: d\nrequest: r\nsetup:\n  http_pages:\n"
        '    "http://ok.fixture.test/": {body: fine}\n'
        f'    "{url}": {{body: nope}}\n'
        "script: [{answer: ok}]\nexpect: {}\n",
        encoding="utf-8",
    )
    with pytest.raises(ScenarioError) as refused:
        load_scenarios([path])
    message = str(refused.value)
    assert f"{path}:7:" in message and fix in message
    assert "ok.fixture.test" not in message


def test_two_spellings_of_one_page_are_refused_at_load(tmp_path: Path) -> None:
    path = tmp_path / "pages.yaml"
    path.write_text(
        "id: pages\ndescription: d\nrequest: r\nsetup:\n  http_pages:\n"
        '    "http://docs.fixture.test/a": {body: one}\n'
        '    "http://DOCS.fixture.test:80/a": {body: two}\n'
        "script: [{answer: ok}]\nexpect: {}\n",
        encoding="utf-8",
    )
    with pytest.raises(ScenarioError, match="name the same page"):
        load_scenarios([path])
