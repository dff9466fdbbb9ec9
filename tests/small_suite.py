"""Support for the eval CLI tests: a few shipped scenarios with their own baseline, and helpers."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from html.parser import HTMLParser
from importlib import resources
from pathlib import Path
from typing import Any

import pytest
import yaml

from governance import ManualClock, digest
from harness._baseline import load_baseline, write_baseline, write_baseline_traces
from harness._baseline_record import build_baseline, failing_checks
from harness._scenario_runner import ProviderChoice
from harness._suite import load_checked_suite, run_checked_suite, run_inputs, score

REPO = Path(__file__).resolve().parents[1]
SHIPPED_POLICY = Path(str(resources.files("governance") / "data" / "default_policy.yaml"))
SMALL_SUITE = {
    "blocks.yaml": ["block-delete-by-rule", "block-unknown-tool"],
    "budgets.yaml": ["budget-run-limit-stops-a-loop"],
    "reads.yaml": ["read-order-lookup", "read-two-tools-then-ticket"],
}
SMALL_IDS = sorted(sid for ids in SMALL_SUITE.values() for sid in ids)


def build_small_suite(root: Path) -> None:
    """scenarios/ (policies/ and scripts/ included) cut down to SMALL_SUITE, and its baseline."""
    shutil.copytree(REPO / "scenarios", root / "scenarios")
    for family in sorted((root / "scenarios").iterdir()):
        if family.is_dir() and family.name not in ("policies", "scripts"):
            shutil.rmtree(family)  # e.g. scenarios/mcp/: not part of the small suite
    for path in sorted((root / "scenarios").glob("*.yaml")):
        keep = SMALL_SUITE.get(path.name)
        if keep is None:
            path.unlink()
            continue
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        data["scenarios"] = [s for s in data["scenarios"] if s["id"] in keep]
        assert [s["id"] for s in data["scenarios"]] == keep
        path.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True), "utf-8")
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(root)
        scenarios = load_checked_suite([Path("scenarios")])
        run = run_checked_suite(scenarios, provider=ProviderChoice(), run_id="run-fixture")
        checks, metrics = score(scenarios, run.traces)
        assert not failing_checks(checks)
        baseline = build_baseline(
            checks,
            metrics,
            run.traces,
            reason="the small suite",
            clock=ManualClock(),
            previous=None,
            allow_regression=False,
            inputs=run_inputs(scenarios, run.traces),
        )
        write_baseline(baseline, Path("baselines/baseline.json"))
        write_baseline_traces(run.traces, Path("baselines/traces"))
    shipped = load_baseline(REPO / "baselines" / "baseline.json")
    for sid in SMALL_IDS:
        assert baseline.scenarios[sid].checks == shipped.scenarios[sid].checks


def edit_scenario(
    root: Path, file: str, sid: str, change: Callable[[dict[str, Any]], None]
) -> None:
    """Apply `change` to one scenario of `root/scenarios/<file>`, in place."""
    path = root / "scenarios" / file
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    (scenario,) = [s for s in data["scenarios"] if s["id"] == sid]
    change(scenario)
    path.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True), "utf-8")


def age_baseline_trace(root: Path, sid: str, change: Callable[[dict[str, Any]], None]) -> None:
    """Edit the baseline's stored trace of `sid` (and its digest) as if an older Proctor had
    recorded it: behaviour drift with unchanged inputs, which no scenario edit can produce."""
    stored = root / "baselines" / "traces" / f"{sid}.json"
    trace = json.loads(stored.read_text(encoding="utf-8"))
    change(trace)
    stored.write_text(json.dumps(trace, indent=2, sort_keys=True) + "\n", "utf-8")
    path = root / "baselines" / "baseline.json"
    baseline = json.loads(path.read_text(encoding="utf-8"))
    baseline["scenarios"][sid]["trace_digest"] = digest(trace)
    path.write_text(json.dumps(baseline, indent=2, sort_keys=True) + "\n", "utf-8")


def report_exit_code(report_dir: Path) -> int:
    """The exit code a run wrote into its report.json."""
    code = json.loads((report_dir / "report.json").read_text(encoding="utf-8"))["exit_code"]
    assert isinstance(code, int)
    return code


class Page(HTMLParser):
    """Visible text and every attribute value that could load something."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.text: list[str] = []
        self.links: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if name in ("src", "href", "action", "srcset", "data", "poster") and value:
                self.links.append(value)

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def parse_html(html: str) -> Page:
    page = Page()
    page.feed(html)
    page.close()
    return page
