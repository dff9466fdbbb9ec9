"""`run_smoke` against the vendor stub over loopback: each misbehaviour fails the right check."""

from __future__ import annotations

import socket
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from harness._errors import HarnessError
from harness._smoke import CHECK_NAMES, SMOKE_SCENARIOS, SmokeReport, SmokeScenario, run_smoke
from harness.providers import ProviderSettings
from stubs.openai_stub import running_stub

pytestmark = pytest.mark.slow  # a loopback vendor stub in a thread

SCENARIOS = [s.name for s in SMOKE_SCENARIOS]
READ_ORDER = SMOKE_SCENARIOS[:1]


@pytest.fixture(scope="module")
def stub_url() -> Iterator[str]:
    with running_stub() as url:
        yield url


def settings(url: str, model: str = "proctor-stub-1") -> ProviderSettings:
    return ProviderSettings(base_url=url, model=model, api_key="smoke-key", timeout=5.0)


def smoke(
    url: str,
    tmp_path: Path,
    model: str = "proctor-stub-1",
    scenarios: Sequence[SmokeScenario] = SMOKE_SCENARIOS,
) -> SmokeReport:
    sleeps: list[float] = []
    return run_smoke(
        settings(url, model), state_dir=tmp_path / "smoke", scenarios=scenarios, sleep=sleeps.append
    )


def failed(report: SmokeReport) -> dict[str, set[str]]:
    """scenario -> the names of its failed checks (scenarios with none left out)."""
    out: dict[str, set[str]] = {}
    for check in report.failed:
        out.setdefault(check.scenario, set()).add(check.name)
    return out


def test_an_honest_vendor_passes_every_check_of_every_scenario(
    stub_url: str, tmp_path: Path
) -> None:
    report = smoke(stub_url, tmp_path)
    assert report.passed, [(c.scenario, c.name, c.detail) for c in report.failed]
    assert [(c.scenario, c.name) for c in report.checks] == [
        (s, n) for s in SCENARIOS for n in CHECK_NAMES
    ]
    for name in SCENARIOS:
        assert (tmp_path / "smoke" / name / "audit.sqlite").is_file()  # a fresh gateway each


def test_a_prose_tool_call_fails_the_wire_governance_and_answer_checks(
    stub_url: str, tmp_path: Path
) -> None:
    report = smoke(stub_url, tmp_path, "proctor-stub-1:prose-tool-call")
    assert not report.passed
    assert failed(report) == {name: {"tool_names", "governance", "answer"} for name in SCENARIOS}
    tool_names = next(c for c in report.failed if c.name == "tool_names")
    assert "proposed no structured call" in tool_names.detail


def test_a_hallucinated_tool_is_named_as_unregistered(stub_url: str, tmp_path: Path) -> None:
    report = smoke(stub_url, tmp_path, "proctor-stub-1:hallucinated-tool", READ_ORDER)
    details = {c.detail for c in report.failed if c.name == "tool_names"}
    assert details == {"proposed shell_exec: not a registered Proctor tool"}


def test_empty_choices_fail_the_model_turn_check(stub_url: str, tmp_path: Path) -> None:
    report = smoke(stub_url, tmp_path, "proctor-stub-1:empty-choices", READ_ORDER)
    turn = next(c for c in report.checks if c.name == "model_turn")
    assert not turn.passed
    assert "1 2xx response(s) but 0 model turn(s)" in turn.detail
    assert "empty 'choices'" in turn.detail


def test_missing_usage_fails_only_the_usage_check(stub_url: str, tmp_path: Path) -> None:
    report = smoke(stub_url, tmp_path, "proctor-stub-1:missing-usage")
    assert failed(report) == {name: {"usage"} for name in SCENARIOS}


def test_a_false_claim_after_a_real_read_fails_the_answer_check(
    stub_url: str, tmp_path: Path
) -> None:
    report = smoke(stub_url, tmp_path, "proctor-stub-1:false-claim")
    assert failed(report) == {"read-order": {"answer"}}


def test_an_unknown_model_gets_responses_but_fails_without_a_turn(
    stub_url: str, tmp_path: Path
) -> None:
    report = smoke(stub_url, tmp_path, "gpt-nope", READ_ORDER)
    http = next(c for c in report.checks if c.name == "http")
    assert not http.passed and "statuses: 404" in http.detail
    assert {"http", "model_turn", "governance"} <= failed(report)["read-order"]


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_an_unreachable_endpoint_stops_after_the_first_scenario(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{_closed_port()}/v1"
    sleeps: list[float] = []
    report = run_smoke(
        ProviderSettings(base_url=url, model="m", api_key="k", max_retries=1),
        state_dir=tmp_path / "smoke",
        sleep=sleeps.append,
    )
    assert [(c.scenario, c.name, c.passed) for c in report.checks] == [
        (name, "http", False) for name in SCENARIOS
    ]
    assert "Connection refused" in report.checks[0].detail
    # The endpoint by its origin alone: a gateway's path may hold a token.
    origin = url.removesuffix("/v1")
    assert report.checks[1].detail == f"not run: {origin} gave no HTTP response in read-order"
    assert sleeps == [1.0]  # one retry, then no more scenarios
    assert not (tmp_path / "smoke" / "email-held").exists()


def test_a_rate_limited_vendor_passes_after_waiting_as_asked(tmp_path: Path) -> None:
    sleeps: list[float] = []
    with running_stub() as url:  # its own stub: `-once` faults remember conversations
        report = run_smoke(
            settings(url, "proctor-stub-1:rate-limit-once"),
            state_dir=tmp_path / "smoke",
            sleep=sleeps.append,
        )
    assert report.passed
    assert sleeps and all(delay >= 1.0 for delay in sleeps)
    assert "statuses 429, 200, 429, 200" in report.checks[0].detail


def test_an_effect_in_the_workspace_fails_the_workspace_check(
    stub_url: str, tmp_path: Path
) -> None:
    write = SmokeScenario(
        name="write",
        request="Write a report to reports/x.md saying hi",
        tool="fs.write",
        outcome="executed",
        status="completed",
    )
    report = smoke(stub_url, tmp_path, scenarios=(write,))
    assert failed(report) == {"write": {"workspace"}}
    check = next(c for c in report.checks if c.name == "workspace")
    assert "files changed: reports/x.md" in check.detail


def test_text_that_must_not_be_quoted_fails_the_answer_check(stub_url: str, tmp_path: Path) -> None:
    readme = SmokeScenario(
        name="readme",
        request="Read the file README.txt",
        tool="fs.read",
        outcome="executed",
        status="completed",
        answer_excludes=("Demo workspace",),
    )
    report = smoke(stub_url, tmp_path, scenarios=(readme,))
    assert failed(report) == {"readme": {"answer"}}


def test_a_scenario_expecting_a_hold_fails_when_the_call_runs(
    stub_url: str, tmp_path: Path
) -> None:
    wrong = SmokeScenario(
        name="wrong",
        request="Look up order ORD-0001 and tell me its status.",
        tool="orders.lookup",
        outcome="held",
        status="waiting_approval",
    )
    report = smoke(stub_url, tmp_path, scenarios=(wrong,))
    assert failed(report) == {"wrong": {"governance", "answer"}}
    check = next(c for c in report.checks if c.name == "governance")
    assert "expected orders.lookup held" in check.detail


def test_a_used_state_dir_is_refused_before_anything_runs(tmp_path: Path) -> None:
    used = tmp_path / "smoke"
    used.mkdir()
    (used / "leftover").write_text("x")
    with pytest.raises(HarnessError, match="is not empty"):
        run_smoke(settings("http://127.0.0.1:9/v1"), state_dir=used)
    assert sorted(p.name for p in used.iterdir()) == ["leftover"]


def test_a_smoke_with_no_scenarios_is_not_a_pass(tmp_path: Path) -> None:
    report = run_smoke(settings("http://127.0.0.1:9/v1"), state_dir=tmp_path / "s", scenarios=())
    assert report.checks == () and not report.passed
    assert report.to_dict()["result"] == "failed"
