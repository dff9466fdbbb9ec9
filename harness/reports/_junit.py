"""`junit.xml`: one testsuite, one testcase per scenario, plus a `gate` testcase for regressions.

CI systems render this natively. ElementTree escapes markup; characters XML 1.0 cannot carry at
all (NUL, ANSI escapes, lone surrogates) are replaced by a visible `\\xNN` first.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Iterator

from harness._results import SuiteResult
from harness.reports._common import (
    escape_char,
    exit_code,
    notice,
    provider_label,
    regression_text,
    scenarios,
)
from harness.reports._live import live_junit_cases, live_junit_properties

_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def xml_text(text: str) -> str:
    """`text` with every character XML 1.0 forbids shown as an escape instead."""
    return _NOT_XML.sub(lambda m: escape_char(m.group()), text)


def render_junit(result: SuiteResult) -> bytes:
    return "".join(junit_chunks(result)).encode("utf-8")


def junit_chunks(result: SuiteResult) -> Iterator[str]:
    """The document in pieces, byte for byte what ElementTree writes for the whole tree
    indented, but one testcase at a time: a big suite's report is never held whole. The
    counts on `<testsuite>` come from the checks, before any testcase is written."""
    live = result.live_run
    # A live run: one testcase per scenario over its K runs (each run's own junit.xml is in
    # its rN/ directory), not one per run.
    summaries = scenarios(result) if live is None else []
    extra = [] if live is None else live_junit_cases(live, xml_text)
    gate = result.gate
    tests = len(summaries) + (gate is not None) + len(extra)
    failures = (
        sum(1 for s in summaries if s.failed)
        + bool(gate and gate.regressions)
        + sum(1 for case in extra if case.find("failure") is not None)
    )
    yield (
        "<?xml version='1.0' encoding='utf-8'?>\n"
        f'<testsuite name="proctor" tests="{tests}" failures="{failures}" errors="0" '
        f'skipped="{sum(1 for case in extra if case.find("skipped") is not None)}">'
    )
    props = ET.Element("properties")
    for name, value in (
        ("run_id", result.run_id),
        ("provider", provider_label(result)),
        ("live", str(result.live).lower()),
        ("notice", notice(result) or ""),
        ("exit_code", str(exit_code(result))),
        *(live_junit_properties(live) if live is not None else ()),
        *_partial_properties(result),
    ):
        ET.SubElement(props, "property", name=name, value=xml_text(value))
    yield _child(props)
    for summary in summaries:
        case = ET.Element(
            "testcase", classname=xml_text(summary.file or "proctor"), name=xml_text(summary.id)
        )
        failed = summary.failed
        if failed:
            failure = ET.SubElement(
                case, "failure", message=f"{len(failed)} check(s) failed", type="check_failed"
            )
            failure.text = xml_text("\n".join(f"{c.id}: {c.why}" for c in failed))
        trace = summary.facts
        out = ET.SubElement(case, "system-out")
        out.text = xml_text(
            f"status={trace.status} termination={trace.termination} digest={trace.digest}"
            if trace
            else "no trace: the scenario did not run"
        )
        yield _child(case)

    if gate is not None:
        case = ET.Element("testcase", classname="proctor", name="gate")
        regressions = gate.regressions
        if regressions:
            failure = ET.SubElement(
                case, "failure", message=f"{len(regressions)} regression(s)", type="regression"
            )
            failure.text = xml_text(
                "\n".join(f"{r.kind} {regression_text(r)}" for r in regressions)
            )
        yield _child(case)
    for case in extra:
        yield _child(case)
    yield "\n</testsuite>\n"


# -- a partial run (--id, -k, --tag, --limit) ---------------------------------------------------
def _partial_properties(result: SuiteResult) -> tuple[tuple[str, str], ...]:
    """A focused run says so: its selectors and how many of the suite's scenarios it ran."""
    chosen = result.selected
    if chosen is None:
        return ()
    return (
        ("partial_run", chosen.describe()),
        ("selectors", " ".join(chosen.flags)),
        ("selected", f"{len(chosen.ids)} of {chosen.total} scenarios"),
    )


# -- end of a partial run -------------------------------------------------------------------------


def _child(element: ET.Element) -> str:
    """A child of `<testsuite>` as `ET.indent` lays it out inside the whole tree."""
    ET.indent(element, level=1)
    return "\n  " + ET.tostring(element, encoding="unicode")
