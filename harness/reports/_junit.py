"""`junit.xml`: one testsuite, one testcase per scenario, plus a `gate` testcase for regressions.

CI systems render this natively. ElementTree escapes markup; characters XML 1.0 cannot carry at
all (NUL, ANSI escapes, lone surrogates) are replaced by a visible `\\xNN` first.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from harness._results import SuiteResult
from harness.reports._common import (
    escape_char,
    exit_code,
    notice,
    provider_label,
    regression_subject,
    scenarios,
)

_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def xml_text(text: str) -> str:
    """`text` with every character XML 1.0 forbids shown as an escape instead."""
    return _NOT_XML.sub(lambda m: escape_char(m.group()), text)


def render_junit(result: SuiteResult) -> bytes:
    suite = ET.Element("testsuite", name="proctor")
    props = ET.SubElement(suite, "properties")
    for name, value in (
        ("run_id", result.run_id),
        ("provider", provider_label(result)),
        ("live", str(result.live).lower()),
        ("notice", notice(result) or ""),
        ("exit_code", str(exit_code(result))),
    ):
        ET.SubElement(props, "property", name=name, value=xml_text(value))

    tests = failures = 0
    for summary in scenarios(result):
        case = ET.SubElement(
            suite,
            "testcase",
            classname=xml_text(summary.file or "proctor"),
            name=xml_text(summary.id),
        )
        tests += 1
        failed = summary.failed
        if failed:
            failures += 1
            failure = ET.SubElement(
                case, "failure", message=f"{len(failed)} check(s) failed", type="check_failed"
            )
            failure.text = xml_text("\n".join(f"{c.id}: {c.why}" for c in failed))
        trace = summary.trace
        out = ET.SubElement(case, "system-out")
        out.text = xml_text(
            f"status={trace.status} termination={trace.termination} digest={trace.digest}"
            if trace
            else "no trace: the scenario did not run"
        )

    if result.gate is not None:
        case = ET.SubElement(suite, "testcase", classname="proctor", name="gate")
        tests += 1
        regressions = result.gate.regressions
        if regressions:
            failures += 1
            failure = ET.SubElement(
                case, "failure", message=f"{len(regressions)} regression(s)", type="regression"
            )
            failure.text = xml_text(
                "\n".join(
                    f"{r.kind} {regression_subject(r.metric, r.scenario_id, r.check_id)}: "
                    f"{r.detail}"
                    for r in regressions
                )
            )

    suite.set("tests", str(tests))
    suite.set("failures", str(failures))
    suite.set("errors", "0")
    suite.set("skipped", "0")
    ET.indent(suite)
    data: bytes = ET.tostring(suite, encoding="utf-8", xml_declaration=True)
    return data + b"\n"
