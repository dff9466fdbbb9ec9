"""A suite loaded from the check cache runs and reports byte for byte as one loaded from its
files: traces, every report and the manifest."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness import _scenario_load
from harness._scenario_runner import ProviderChoice
from harness._suite import assemble, load_checked_suite, run_checked_suite
from harness.reports import write_reports

SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"


def _report(report_dir: Path) -> dict[str, bytes]:
    scenarios = load_checked_suite([SCENARIOS / "reads.yaml", SCENARIOS / "blocks.yaml"])
    run = run_checked_suite(
        scenarios, provider=ProviderChoice(), run_id="run-cache", trace_dir=report_dir / "traces"
    )
    write_reports(assemble(run.run_id, scenarios, run.traces), report_dir)
    return {
        str(p.relative_to(report_dir)): p.read_bytes()
        for p in sorted(report_dir.rglob("*"))
        if p.is_file()
    }


def test_reports_from_a_cached_suite_equal_reports_from_its_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cold = _report(tmp_path / "cold")
    parsed: list[Path] = []
    load_file = _scenario_load._load_file

    def counted(path: Path, *args: object) -> object:
        parsed.append(path)
        return load_file(path, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(_scenario_load, "_load_file", counted)
    warm = _report(tmp_path / "warm")
    assert parsed == []  # every file came from the cache
    assert warm.keys() == cold.keys()
    assert {"report.html", "report.json", "junit.xml", "summary.md", "manifest.json"} <= set(warm)
    assert warm == cold
