"""report.html: self-contained, escaped, parses, and shows every scenario's spans in order."""

from __future__ import annotations

import base64
import hashlib
import json
import re
from html.parser import HTMLParser
from pathlib import Path

from harness._results import SuiteResult
from harness._trace import DETERMINISTIC_NOTICE, Trace
from harness.reports import render_html, write_reports
from tests.unit.harness.test_reports_sample import XSS, clean_result, sample_result


class _Page(HTMLParser):
    """Collects tags, attributes, script bodies and text, and checks that elements nest."""

    VOID = {"meta", "br", "input", "hr", "img", "link"}

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[str] = []
        self.errors: list[str] = []
        self.starts: list[tuple[str, dict[str, str | None]]] = []
        self.scripts: list[tuple[dict[str, str | None], str]] = []
        self.styles: list[str] = []
        self.text: list[str] = []
        self._raw: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.starts.append((tag, dict(attrs)))
        if tag not in self.VOID:
            self.stack.append(tag)
        if tag in ("script", "style"):
            self._raw = ""

    def handle_endtag(self, tag: str) -> None:
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"</{tag}> closes {self.stack[-1:] or 'nothing'}")
            return
        self.stack.pop()
        if tag == "script":
            self.scripts.append((self.starts_of("script")[len(self.scripts)], self._raw or ""))
        if tag == "style":
            self.styles.append(self._raw or "")
        self._raw = None

    def handle_data(self, data: str) -> None:
        if self._raw is not None:
            self._raw += data
        else:
            self.text.append(data)

    def starts_of(self, tag: str) -> list[dict[str, str | None]]:
        return [attrs for t, attrs in self.starts if t == tag]


def _parse(page: str) -> _Page:
    parser = _Page()
    parser.feed(page)
    parser.close()
    return parser


def _csp_hash(source: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(source.encode()).digest()).decode() + "'"


def test_the_page_parses_with_balanced_tags_and_contains_each_scenario_id() -> None:
    page = _parse(render_html(sample_result()))
    assert page.errors == [] and page.stack == []
    scenarios = [a["data-scenario"] for a in page.starts_of("details") if "data-scenario" in a]
    assert scenarios == ["read-notes", "delete-notes", "refund-held"]


def test_trace_text_is_escaped_so_no_injected_script_exists() -> None:
    html = render_html(sample_result())
    assert XSS not in html and "<script>alert" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    page = _parse(html)
    assert len(page.scripts) == 2  # the JSON data block and our own script, nothing else
    assert "".join(page.text).count(XSS) >= 5  # shown as text: turn, args, reason, guardrail, loop


def test_control_characters_from_a_trace_are_shown_as_escapes() -> None:
    html = render_html(sample_result())
    assert "\x1b" not in html and "\x00" not in html
    assert "looped \\x1b[31mRED\\x1b[0m \\x00 nul" in html


def test_no_external_url_is_referenced_by_any_src_or_href() -> None:
    html = render_html(sample_result())
    page = _parse(html)
    for _, attrs in page.starts:
        for name in ("src", "href", "action", "data"):
            value = attrs.get(name)
            assert value is None or not re.match(r"\s*(https?:)?//", value), (name, value)
    assert not re.search(r"""(src|href)\s*=\s*["']?\s*(https?:)?//""", html)
    assert "https://evil.example" in "".join(page.text)  # trace text is shown, not linked
    assert "@import" not in html and "url(" not in html


def test_the_embedded_trace_json_cannot_break_out_and_round_trips() -> None:
    result = sample_result()
    page = _parse(render_html(result))
    data_blocks = [body for attrs, body in page.scripts if attrs.get("type") == "application/json"]
    assert len(data_blocks) == 1
    body = data_blocks[0]
    assert "<" not in body and ">" not in body and "&" not in body
    embedded = json.loads(body)
    assert set(embedded) == {t.scenario_id for t in result.traces}
    for trace in result.traces:
        assert Trace.model_validate(embedded[trace.scenario_id]) == trace


def test_a_content_security_policy_allows_only_the_inline_style_and_script_by_hash() -> None:
    page = _parse(render_html(sample_result()))
    csp = next(
        a["content"] or ""
        for a in page.starts_of("meta")
        if a.get("http-equiv") == "Content-Security-Policy"
    )
    assert "default-src 'none'" in csp and "unsafe-inline" not in csp
    code = [body for attrs, body in page.scripts if "type" not in attrs]
    assert f"script-src {_csp_hash(code[0])};" in csp
    assert f"style-src {_csp_hash(page.styles[0])};" in csp
    inline_style = [a for _, a in page.starts if "style" in a]
    handlers = [a for _, a in page.starts for k in a if k.startswith("on")]
    assert inline_style == [] and handlers == []  # the CSP would block them anyway


def test_the_notice_shows_for_a_deterministic_run_and_not_for_a_live_one() -> None:
    assert f'<p class="notice" id="notice">{DETERMINISTIC_NOTICE}</p>' in render_html(
        sample_result()
    )
    assert DETERMINISTIC_NOTICE not in render_html(clean_result(live=True))


def test_tool_spans_are_coloured_by_outcome_and_show_rule_reason_and_approval() -> None:
    page = _parse(render_html(sample_result()))
    items = [a.get("class") or "" for a in page.starts_of("li")]
    assert "k-tool_call o-executed" in items
    assert "k-tool_call o-blocked" in items
    assert "k-tool_call o-held" in items
    text = "\n".join(page.text)
    for expected in ("rule-blocked", "reason_held", "ap-1", "sha256:result", "for a reviewer"):
        assert expected in text


def test_spans_are_listed_in_trace_order_within_each_scenario() -> None:
    html = render_html(sample_result())
    start = html.index('data-scenario="delete-notes"')
    section = html[start : html.index('data-scenario="refund-held"')]
    kinds = re.findall(r'<li class="k-([a-z_]+)', section)
    assert kinds == ["model_turn", "tool_call", "guardrail", "loop", "model_turn"]


def test_failures_regressions_drift_and_metrics_are_on_the_page() -> None:
    html = render_html(sample_result())
    text = "".join(_parse(html).text)
    assert "Failed checks (2)" in text and "answer_not_contains:deleted" in text
    assert "Regressions (2)" in text and "rate_drop" in text
    assert "Drifted scenarios (1)" in text and "+  outcome: blocked" in text
    assert "33.3%" in text and "-33.3 pp" in text and "absent" in text
    opened = [a for a in _parse(html).starts_of("details") if "open" in a]
    assert [a["data-scenario"] for a in opened] == ["delete-notes"]  # failing ones start open
    assert opened[0]["class"] == "scenario has-failures"


def test_write_reports_writes_the_same_page_to_disk(tmp_path: Path) -> None:
    result = sample_result()
    path = write_reports(result, tmp_path)["report.html"]
    assert path.read_text(encoding="utf-8") == render_html(result)


def test_rendering_is_deterministic() -> None:
    assert render_html(sample_result()) == render_html(sample_result())


def test_embedded_trace_text_is_ascii_and_round_trips_non_ascii_and_markup(
    tmp_path: Path,
) -> None:
    # The embed is the trace file's canonical text, escaped rather than parsed and re-encoded:
    # accents, line separators, astral characters and markup must all come back as they were.
    hostile = "café \u2028 \u2029 \U0001f600 " + XSS + " & <b>"
    trace = clean_result().traces[0].model_copy(update={"final_answer": hostile})
    result = SuiteResult(run_id="run-1", traces=(trace,), checks=(), metrics=())
    for page in (render_html(result), write_reports(result, tmp_path)["report.html"].read_text()):
        body = next(b for a, b in _parse(page).scripts if a.get("type") == "application/json")
        assert body.isascii()
        assert "<" not in body and ">" not in body and "&" not in body
        assert "\u2028" not in body and "\U0001f600" not in body
        embedded = json.loads(body)
        assert Trace.model_validate(embedded[trace.scenario_id]) == trace
        assert embedded[trace.scenario_id]["final_answer"] == hostile
