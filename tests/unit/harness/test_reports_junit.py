"""junit.xml: one testsuite, a testcase per scenario, the gate as a testcase; always valid XML."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

from harness._results import CheckResult, GateResult, SuiteResult
from harness.reports import render_junit, write_reports
from tests.unit.harness.test_reports_sample import XSS, clean_result, clean_trace, sample_result


def _suite(result: SuiteResult) -> ET.Element:
    return ET.fromstring(render_junit(result))


def _cases(suite: ET.Element) -> dict[str, ET.Element]:
    return {case.get("name", ""): case for case in suite.iter("testcase")}


def test_one_testcase_per_scenario_plus_the_gate_with_matching_counts() -> None:
    suite = _suite(sample_result())
    assert suite.tag == "testsuite"
    cases = _cases(suite)
    assert list(cases) == ["read-notes", "delete-notes", "refund-held", "gate"]
    assert suite.get("tests") == "4"
    assert suite.get("failures") == "2"  # delete-notes and the gate
    assert len(suite.findall(".//failure")) == 2
    assert cases["read-notes"].find("failure") is None


def test_classname_is_the_scenario_file_or_proctor() -> None:
    result = SuiteResult(
        run_id="r",
        traces=(clean_trace(),),
        checks=(CheckResult("never-ran", "must_execute:x", "must_execute", False, "no trace"),),
        metrics=(),
        scenario_files={"never-ran": ""},
    )
    cases = _cases(_suite(result))
    assert cases["read-notes"].get("classname") == "scenarios/read-notes.yaml"
    assert cases["never-ran"].get("classname") == "proctor"


def test_a_failing_scenario_has_one_failure_listing_each_failed_check_and_why() -> None:
    failures = _cases(_suite(sample_result()))["delete-notes"].findall("failure")
    assert len(failures) == 1
    assert failures[0].get("message") == "2 check(s) failed"
    text = failures[0].text or ""
    assert f"answer_not_contains:deleted: answer said {XSS}" in text  # parsed back unescaped
    assert "no_loop: looped" in text
    assert "must_block:fs.delete" not in text


def test_regressions_fail_the_gate_testcase() -> None:
    gate = _cases(_suite(sample_result()))["gate"]
    failure = gate.find("failure")
    assert failure is not None and failure.get("message") == "2 regression(s)"
    assert "rate_drop task_success_rate" in (failure.text or "")
    assert "lost_check delete-notes › no_loop" in (failure.text or "")


def test_a_clean_run_has_no_failures_and_no_gate_testcase_without_a_gate() -> None:
    suite = _suite(clean_result())
    assert suite.get("tests") == "1" and suite.get("failures") == "0"
    assert suite.find(".//failure") is None
    assert "gate" not in _cases(suite)


def test_markup_and_characters_xml_cannot_hold_still_give_valid_xml(tmp_path: Path) -> None:
    hostile = "</failure><x a='\"'>&amp; \x1b[31m \x00 \ud800 ]]>"
    result = SuiteResult(
        run_id="r",
        traces=(clean_trace(),),
        checks=(CheckResult("read-notes", hostile, "k", False, hostile),),
        metrics=(),
    )
    path = write_reports(result, tmp_path)["junit.xml"]
    suite = ET.parse(path).getroot()
    failure = suite.find(".//failure")
    assert failure is not None and suite.get("failures") == "1"
    assert "</failure><x a='\"'>&amp;" in (failure.text or "")
    assert "\\x1b[31m \\x00 \\ud800" in (failure.text or "")
    assert b"\x1b" not in path.read_bytes() and b"\x00" not in path.read_bytes()


def test_the_suite_properties_carry_the_deterministic_notice() -> None:
    props = {p.get("name"): p.get("value") for p in _suite(sample_result()).iter("property")}
    assert props["notice"] == "deterministic workflow run — NOT a model-quality measurement"
    assert props["exit_code"] == "2" and props["live"] == "false"


def test_a_gate_without_regressions_is_a_passing_gate_testcase() -> None:
    result = SuiteResult(
        run_id="r",
        traces=(clean_trace(),),
        checks=(),
        metrics=(),
        gate=GateResult(new_scenarios=("read-notes",)),
    )
    suite = _suite(result)
    assert suite.get("tests") == "2" and suite.get("failures") == "0"
    assert _cases(suite)["gate"].find("failure") is None


def test_the_streamed_document_is_byte_for_byte_what_elementtree_writes_for_the_tree() -> None:
    for result in (sample_result(), clean_result()):
        data = render_junit(result)
        tree = ET.fromstring(data)
        for element in tree.iter():  # drop the layout, then let ElementTree lay it out again
            if len(element):
                element.text = None
            element.tail = None
        ET.indent(tree)
        assert data == ET.tostring(tree, encoding="utf-8", xml_declaration=True) + b"\n"


def test_junit_xml_is_written_in_pieces_not_as_one_document(tmp_path: Path) -> None:
    # The file is written from the chunk stream: no element tree of the whole suite is built.
    from harness.reports import _junit

    chunks = list(_junit.junit_chunks(sample_result()))
    assert len(chunks) == 2 + 3 + 1 + 1  # head, properties, 3 scenarios, gate, tail
    write_reports(sample_result(), tmp_path)
    assert (tmp_path / "junit.xml").read_bytes() == "".join(chunks).encode("utf-8")
