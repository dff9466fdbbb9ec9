"""`report.html`: one self-contained page (inline CSS and JS, no URL anywhere) that opens from disk.

Everything is rendered server-side with every trace-derived string HTML-escaped; the traces are
also embedded as JSON (with `<`, `>`, `&` written as `\\u003c` ... so a string cannot close the
script element) for the "trace JSON" toggle. A Content-Security-Policy pins the one inline style
and the one inline script by hash, so even markup that slipped through could not run or load.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import json
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from harness._results import CheckResult, SuiteResult
from harness._spans import (
    ApprovalSpan,
    ClaimsSpan,
    GuardrailSpan,
    LoopSpan,
    ModelTurnSpan,
    Span,
    ToolCallSpan,
)
from harness._trace import Trace
from harness.reports._common import (
    METRIC_HEADERS,
    PARTIAL_COVERAGE,
    ScenarioSummary,
    canonical_trace_lookup,
    exit_code,
    exit_meaning,
    html_text,
    metric_rows,
    notice,
    provider_label,
    regression_text,
    scenario_anchors,
    scenarios,
    trace_ids,
)
from harness.reports._live import live_html

_CSS = """
:root{--ok:#1a7f37;--bad:#cf222e;--warn:#9a6700;--fail:#8250df;--mute:#6e7781;
--bg:#fff;--fg:#1f2328;--panel:#f6f8fa;--line:#d0d7de}
*{box-sizing:border-box}
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0 auto;max-width:1100px;
padding:16px 24px 48px;color:var(--fg);background:var(--bg)}
h1{font-size:22px;margin:8px 0}
h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid var(--line)}
code,pre{font:12.5px/1.4 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}
pre{background:var(--panel);border:1px solid var(--line);padding:8px;overflow:auto;
white-space:pre-wrap;word-break:break-word;margin:4px 0}
.notice{background:#fff8c5;border:1px solid #d4a72c;padding:8px 12px;font-weight:600}
.meta{color:var(--mute)}
table{border-collapse:collapse}th,td{border:1px solid var(--line);padding:4px 10px;text-align:left}
th{background:var(--panel)}td.num{text-align:right;font-variant-numeric:tabular-nums}
.absent{color:var(--mute);font-style:italic}.down{color:var(--bad);font-weight:600}
.up{color:var(--ok)}
ul.items li{margin:3px 0}
.badge{display:inline-block;border-radius:10px;padding:0 8px;font-size:12px;font-weight:600;
color:#fff;background:var(--mute)}
.b-ok,.b-executed,.b-pass,.b-completed,.b-approved,.b-allow{background:var(--ok)}
.b-bad,.b-blocked,.b-rejected,.b-block,.b-denied{background:var(--bad)}
.b-held,.b-waiting_approval,.b-flagged,.b-require_approval,.b-pending,.b-drift{background:var(--warn)}
.b-failed,.b-provider_error,.b-max_steps,.b-input_rejected,.b-expired{background:var(--fail)}
details.scenario{border:1px solid var(--line);border-left:6px solid var(--ok);margin:8px 0;
border-radius:4px}
details.scenario.has-failures{border-left-color:var(--bad)}
details.scenario>summary{cursor:pointer;padding:6px 10px;background:var(--panel)}
details.scenario>.body{padding:4px 14px 10px}
body.only-failing details.scenario:not(.has-failures){display:none}
.no-failing{display:none}body.only-failing .no-failing{display:block}
.status{color:var(--mute);font-size:12px;border:1px solid var(--line);border-radius:10px;
padding:0 6px}
ol.spans{list-style:none;padding:0;margin:6px 0}
ol.spans>li{border-left:4px solid var(--line);padding:4px 10px;margin:6px 0;background:#fcfcfd}
li.k-model_turn{border-left-color:#0969da}
li.o-executed{border-left-color:var(--ok)}li.o-blocked{border-left-color:var(--bad)}
li.o-held{border-left-color:var(--warn)}li.o-failed{border-left-color:var(--fail)}
li.o-not_run{border-left-color:var(--mute)}
li.k-approval,li.k-guardrail{border-left-color:#bf8700}li.k-loop{border-left-color:var(--fail)}
.sid{color:var(--mute);font-size:12px}
dl.kv{display:grid;grid-template-columns:max-content 1fr;gap:1px 12px;margin:4px 0}
dl.kv dt{color:var(--mute)}dl.kv dd{margin:0;word-break:break-all}
.toolbar{display:flex;gap:8px;align-items:center;margin:6px 0}
button{font:inherit;padding:2px 10px;cursor:pointer}
"""

_JS = """
(function () {
  var node = document.getElementById("proctor-traces");
  var traces = node ? JSON.parse(node.textContent) : {};
  function all(open) {
    document.querySelectorAll("details.scenario").forEach(function (d) { d.open = open; });
  }
  document.querySelectorAll("button[data-action]").forEach(function (b) {
    b.addEventListener("click", function () { all(b.getAttribute("data-action") === "expand"); });
  });
  var only = document.getElementById("only-failing");
  if (only) {
    only.addEventListener("change", function () {
      document.body.classList.toggle("only-failing", only.checked);
    });
  }
  document.querySelectorAll("button[data-raw]").forEach(function (b) {
    b.addEventListener("click", function () {
      var pre = b.nextElementSibling;
      if (!pre.textContent) {
        pre.textContent = JSON.stringify(traces[b.getAttribute("data-raw")], null, 2);
      }
      pre.hidden = !pre.hidden;
      b.textContent = pre.hidden ? "Show trace JSON" : "Hide trace JSON";
    });
  });
})();
"""


def _csp_hash(source: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(source.encode()).digest()).decode() + "'"


_CSP = (
    f"default-src 'none'; style-src {_csp_hash(_CSS)}; script-src {_csp_hash(_JS)}; "
    "img-src data:; base-uri 'none'; form-action 'none'"
)
REPORT_CSP = _CSP
"""The report's CSP: only its own style and script, by hash (a server of the file sends it)."""


def e(value: object) -> str:
    """HTML-escape anything, quotes included, control characters shown as escapes: the one way
    trace text reaches the page."""
    return html_text("" if value is None else str(value))


def script_json(value: Any) -> str:
    """JSON safe inside a <script> element: ASCII only (no lone surrogate or line separator can
    slip through) and `<`, `>`, `&` as \\u escapes, so no string can close the element."""
    return _script_safe(json.dumps(value, sort_keys=True, ensure_ascii=True))


def script_json_text(text: str) -> str:
    """`script_json` of JSON text as it is (a trace file's canonical bytes, decoded), without
    parsing and encoding it again: outside strings JSON is ASCII, so escaping every non-ASCII
    character (as a surrogate pair beyond U+FFFF) changes no value, and makes it ASCII only."""
    return _script_safe(_NON_ASCII.sub(_u_escape, text))


_NON_ASCII = re.compile(r"[^\x00-\x7f]")


def _u_escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    if code > 0xFFFF:
        code -= 0x10000
        return f"\\u{0xD800 | (code >> 10):04x}\\u{0xDC00 | (code & 0x3FF):04x}"
    return f"\\u{code:04x}"


def _script_safe(text: str) -> str:
    for char, code in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026")):
        text = text.replace(char, code)
    return text


def render_html(result: SuiteResult) -> str:
    return "".join(html_chunks(result))


def html_chunks(result: SuiteResult) -> Iterator[str]:
    """The report in pieces, so a big suite's report is written without being held whole:
    each trace is rendered (and embedded) when its turn comes, then let go."""
    code = exit_code(result)
    summaries = scenarios(result)
    anchors = scenario_anchors(result, summaries)
    title = f"Proctor eval: {exit_meaning(result)} (exit {code})"
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{e(title)} · {e(result.run_id)}</title>",
        f"<style>{_CSS}</style>",
        "</head><body>",
        "<header>",
        f'<h1><span class="badge {"b-ok" if code == 0 else "b-bad"}">exit {code}</span> '
        f"{e(title)}</h1>",
        f'<p class="meta">run <code>{e(result.run_id)}</code> · '
        f"provider {e(provider_label(result))}{' · live run' if result.live else ''}</p>",
    ]
    text = notice(result)
    if text is not None:
        parts.append(f'<p class="notice" id="notice">{e(text)}</p>')
    parts += _partial(result)
    parts.append("</header>")
    if result.live_run is not None:
        parts += live_html(result.live_run)
        summaries = []  # a live run's traces are in its r1/ .. rK/ reports
    parts += _metrics(result)
    parts += _failures(result.failed_checks, anchors)
    parts += _gate(result, anchors)
    yield "\n".join(parts) + "\n"
    for part in _traces(result, summaries, anchors):
        yield part + "\n"
    yield '<script type="application/json" id="proctor-traces">\n'
    # One object, keys in sorted order as json.dumps(sort_keys=True) would write them.
    yield "{"
    canonical = canonical_trace_lookup(result)
    first = True
    for sid in sorted(trace_ids(result)):
        data = canonical(sid)
        if data is None:
            continue
        # The file's bytes as they are (valid UTF-8: canonical JSON of the trace); not parsed
        # and encoded again, which was most of this report's cost.
        text = script_json_text(data.decode("utf-8", errors="replace"))
        yield f"{'' if first else ', '}{script_json(sid)}: {text}"
        first = False
    yield "}\n</script>\n"
    yield f"<script>{_JS}</script>\n</body></html>\n"


# -- a partial run (--id, -k, --tag, --limit) ---------------------------------------------------
def _partial(result: SuiteResult) -> list[str]:
    """A focused run says so: its selectors and how many of the suite's scenarios it ran."""
    chosen = result.selected
    if chosen is None:
        return []
    return [f'<p class="notice" id="partial">{e(chosen.describe())} ({e(PARTIAL_COVERAGE)})</p>']


# -- end of a partial run -------------------------------------------------------------------------


def _metrics(result: SuiteResult) -> list[str]:
    out = ['<section id="metrics"><h2>Metrics</h2>']
    rows = metric_rows(result)
    if not rows:
        return out + ['<p class="absent">no metrics</p></section>']
    out.append("<table><thead><tr>" + "".join(f"<th>{e(h)}</th>" for h in METRIC_HEADERS))
    out.append("</tr></thead><tbody>")
    for row in rows:
        name, counts, rate, baseline, delta = row.cells()
        delta_class = "num"
        if row.delta is not None and round(row.delta * 100, 1) != 0:
            delta_class += " down" if row.delta < 0 else " up"
        out.append(
            f'<tr><td><code>{e(name)}</code></td><td class="num">{e(counts)}</td>'
            f'<td class="num{" absent" if rate == "absent" else ""}">{e(rate)}</td>'
            f'<td class="num{" absent" if baseline == "absent" else ""}">{e(baseline)}</td>'
            f'<td class="{delta_class}">{e(delta)}</td></tr>'
        )
    return out + ["</tbody></table></section>"]


def _failures(failed: tuple[CheckResult, ...], anchors: Mapping[str, str]) -> list[str]:
    if not failed:
        return []
    out = [f'<section id="failures"><h2>Failed checks ({len(failed)})</h2><ul class="items">']
    for c in failed:
        out.append(
            f'<li><a href="#{anchors[c.scenario_id]}"><code>{e(c.scenario_id)}</code></a> '
            f"<code>{e(c.id)}</code>: {e(c.why)}</li>"
        )
    return out + ["</ul></section>"]


def _gate(result: SuiteResult, anchors: Mapping[str, str]) -> list[str]:
    gate = result.gate
    if gate is None:
        return [
            '<section id="gate"><h2>Gate</h2><p class="meta">no baseline compared</p></section>'
        ]
    out: list[str] = []
    if gate.regressions:
        out.append(
            f'<section id="regressions"><h2>Regressions ({len(gate.regressions)})</h2>'
            '<ul class="items">'
        )
        for r in gate.regressions:
            out.append(
                f'<li><span class="badge b-bad">{e(r.kind)}</span> {e(regression_text(r))}</li>'
            )
        out.append("</ul></section>")
    if gate.input_changes:
        out.append(
            f'<section id="inputs"><h2>Changed inputs ({len(gate.input_changes)})</h2>'
            '<p class="meta">a different test under the same id: gated until recorded with '
            "<code>proctor baseline record --accept-changed ID</code></p>"
        )
        for c in gate.input_changes:
            state = "acknowledged: " + c.acknowledged if c.acknowledged else "not recorded"
            out.append(
                f'<details class="drift" open><summary><code>{e(c.scenario_id)}</code> '
                f'<span class="meta">{e(state)}</span></summary><pre>{e(c.diff)}</pre></details>'
            )
        out.append("</section>")
    if gate.drift:
        out.append(
            f'<section id="drift"><h2>Drifted scenarios ({len(gate.drift)})</h2>'
            '<p class="meta">behaviour drift: the trace changed, the inputs did not</p>'
        )
        for d in gate.drift:
            link = anchors.get(d.scenario_id)
            name = f"<code>{e(d.scenario_id)}</code>"
            out.append(
                f'<details class="drift"><summary>{name} '
                f'<span class="meta">{e(d.old_digest)} → {e(d.new_digest)}</span>'
                + (f' <a href="#{link}">trace</a>' if link else "")
                + f"</summary><pre>{e(d.diff)}</pre></details>"
            )
        out.append("</section>")
    if gate.new_scenarios:
        out.append(f'<section id="new"><h2>New scenarios ({len(gate.new_scenarios)})</h2>')
        out.append('<ul class="items">')
        out += [f"<li><code>{e(s)}</code></li>" for s in gate.new_scenarios]
        out.append("</ul></section>")
    if not out:
        out.append('<section id="gate"><h2>Gate</h2><p>no regressions, no drift</p></section>')
    return out


def _traces(
    result: SuiteResult, summaries: Sequence[ScenarioSummary], anchors: Mapping[str, str]
) -> Iterator[str]:
    drifted = {d.scenario_id for d in result.gate.drift} if result.gate else set()
    out = [
        f'<section id="traces"><h2>Traces ({len(summaries)} scenario(s))</h2>',
        '<div class="toolbar"><button type="button" data-action="expand">Expand all</button>'
        '<button type="button" data-action="collapse">Collapse all</button>'
        '<label><input type="checkbox" id="only-failing"> only scenarios with failed checks'
        "</label></div>",
    ]
    if summaries and not result.failed_checks:
        # The "only failing" filter would leave nothing: say so rather than show a blank.
        out.append('<p class="no-failing" id="no-failing">No failing scenarios.</p>')
    yield "\n".join(out)
    for s in summaries:
        yield "\n".join(_scenario(s, anchors[s.id], s.id in drifted))
    yield "</section>"


def _scenario(s: ScenarioSummary, anchor: str, drifted: bool) -> list[str]:
    t = s.trace
    failed = s.failed
    classes = "scenario has-failures" if failed else "scenario"
    status = t.status if t else "not run"
    # Pass/fail by the checks first; the run's own status (blocked, held, ...) is a neutral label,
    # since a blocked call is often exactly what a passing scenario expects.
    verdict = _badge("bad", "fail") if failed else _badge("ok", "pass")
    head = (
        f'<summary>{verdict} <span class="status">{e(status)}</span> <code>{e(s.id)}</code> '
        f'<span class="meta">{e(s.file or "")}'
        f"{' · ' + e(t.termination) if t and t.termination else ''}"
        f" · checks {s.passed_count}/{len(s.checks)}</span>"
        + (f' <span class="badge b-bad">{len(failed)} failed</span>' if failed else "")
        + (' <span class="badge b-drift">drifted</span>' if drifted else "")
        + "</summary>"
    )
    out = [
        f'<details class="{classes}" id="{anchor}" data-scenario="{e(s.id)}"'
        f"{' open' if failed else ''}>",
        head,
        '<div class="body">',
    ]
    if t is not None:
        facts = s.facts  # the digest scoring stored: not the trace's canonical JSON again
        out += _trace_meta(t, t.digest if facts is None else facts.digest)
    if s.checks:
        out.append('<h3>Checks</h3><ul class="items">')
        for c in s.checks:
            out.append(
                f"<li>{_badge('ok', 'pass') if c.passed else _badge('bad', 'fail')} "
                f"<code>{e(c.id)}</code>: {e(c.why)}</li>"
            )
        out.append("</ul>")
    if t is not None:
        out.append(f"<h3>Spans ({len(t.spans)})</h3>")
        out.append('<ol class="spans">')
        out += [_span(span) for span in t.spans]
        out.append("</ol>")
        out.append(
            f'<button type="button" data-raw="{e(s.id)}">Show trace JSON</button><pre hidden></pre>'
        )
    out += ["</div>", "</details>"]
    return out


def _trace_meta(t: Trace, digest: str) -> list[str]:
    usage = t.usage
    audit = t.audit
    missing = f", {usage.missing_turns} turn(s) without usage" if usage.missing_turns else ""
    rows: list[tuple[str, str]] = [
        ("provider", f"{t.provider.name} ({t.provider.model}){' live' if t.provider.live else ''}"),
        ("status", f"{t.status} / {t.termination or '-'}"),
        ("turns", str(t.turns)),
        (
            "tokens",
            f"{usage.total_tokens} ({usage.prompt_tokens} prompt + {usage.completion_tokens} "
            f"completion){missing}",
        ),
        ("digest", digest),
        ("policy", t.policy_digest),
        ("registry", t.registry_digest),
        (
            "audit",
            f"{audit.events} event(s), "
            + ("chain valid" if audit.valid else f"CHAIN INVALID at seq {audit.first_bad_seq}")
            + (f", head {audit.head}" if audit.head else ""),
        ),
    ]
    if t.tags:
        rows.append(("tags", ", ".join(t.tags)))
    out = [_kv(rows)]
    if t.setup:
        out.append('<h3>Setup</h3><ul class="items">')
        for r in t.setup:
            reason = f": {e(r.reason)}" if r.reason else ""
            out.append(
                f"<li>{e(r.kind)} <code>{e(r.subject)}</code> {_badge(r.outcome)}{reason}</li>"
            )
        out.append("</ul>")
    if t.final_answer is not None:
        out.append(f"<h3>Final answer</h3><pre>{e(t.final_answer)}</pre>")
    if t.model_text is not None and t.model_text != t.final_answer:
        out.append(
            "<h3>Model's own closing text (not shown as the answer)</h3>"
            f"<pre>{e(t.model_text)}</pre>"
        )
    return out


def _span(span: Span) -> str:
    head = f'<span class="sid">{e(span.id)} · step {span.step}</span> '
    if isinstance(span, ModelTurnSpan):
        body = [f"{head}<strong>model turn</strong>"]
        if span.finish_reason:
            body.append(f' <span class="meta">finish: {e(span.finish_reason)}</span>')
        if span.usage is not None:
            body.append(f' <span class="meta">{span.usage.total_tokens} tokens</span>')
        if span.text:
            body.append(f"<pre>{e(span.text)}</pre>")
        if span.tool_calls:
            body.append('<ul class="items">')
            body += [
                f'<li>proposes <code>{e(c.name)}</code> <span class="sid">{e(c.id)}</span>'
                f"<pre>{e(c.arguments)}</pre></li>"
                for c in span.tool_calls
            ]
            body.append("</ul>")
        return f'<li class="k-model_turn">{"".join(body)}</li>'
    if isinstance(span, ToolCallSpan):
        rows = [
            ("call", f"{span.call_id} (provider {span.provider_call_id})"),
            ("effect", span.effect or "no decision"),
            ("rules", ", ".join(span.rule_ids) or "-"),
            ("reason", span.reason or "-"),
        ]
        if span.approval_id:
            rows.append(("approval", span.approval_id))
        if span.result_digest:
            extra = ", truncated" if span.truncated else ""
            rows.append(("result", f"{span.result_digest} ({span.result_chars} chars{extra})"))
        if span.error:
            rows.append(("error", span.error))
        args = (
            "arguments not valid JSON"
            if span.arguments is None
            else json.dumps(span.arguments, indent=2, sort_keys=True, ensure_ascii=False)
        )
        unknown = "" if span.known_tool else ' <span class="badge b-bad">unknown tool</span>'
        return (
            f'<li class="k-tool_call o-{e(span.outcome)}">{head}<strong>tool call</strong> '
            f"<code>{e(span.tool)}</code> {_badge(span.outcome)}"
            f"{' ' + _badge(span.effect) if span.effect else ''}{unknown}"
            f"{_kv(rows)}<pre>{e(args)}</pre>{_result_text(span)}</li>"
        )
    if isinstance(span, ApprovalSpan):
        rows = [("approval", span.approval_id), ("call", span.call_id)]
        if span.decided_by:
            rows.append(("decided by", span.decided_by))
        if span.edited:
            rows.append(("edited", "arguments edited by the reviewer"))
        if span.detail:
            rows.append(("detail", span.detail))
        return (
            f'<li class="k-approval">{head}<strong>approval</strong> <code>{e(span.tool)}</code> '
            f"{_badge(span.status)}{_kv(rows)}</li>"
        )
    if isinstance(span, GuardrailSpan):
        findings = "".join(f"<li>{e(f)}</li>" for f in span.findings)
        call = f' <span class="sid">call {e(span.call_id)}</span>' if span.call_id else ""
        return (
            f'<li class="k-guardrail">{head}<strong>guardrail</strong> {e(span.stage)} '
            f"{_badge(span.verdict)}{call}"
            + (f'<ul class="items">{findings}</ul>' if findings else "")
            + "</li>"
        )
    if isinstance(span, ClaimsSpan):
        items = "".join(
            f"<li>{e(f.kind)}: <code>{e(f.claim)}</code> {e(f.detail)}</li>" for f in span.findings
        )
        counts = f"{span.identifiers} identifiers, {span.actions} action claims checked"
        return (
            f'<li class="k-guardrail">{head}<strong>claims</strong> {_badge(span.verdict)} '
            f'<span class="meta">{e(counts)}; mode {e(span.mode)}</span>'
            + (f'<ul class="items">{items}</ul>' if items else "")
            + "</li>"
        )
    if isinstance(span, LoopSpan):
        return (
            f'<li class="k-loop">{head}<strong>loop</strong> {_badge(span.event)} '
            f"{e(span.detail)}</li>"
        )
    raise TypeError(f"unknown span kind {type(span).__name__}")  # pragma: no cover


@functools.lru_cache(maxsize=512)  # a few statuses and outcomes, on every span
def _badge(value: str, label: str | None = None) -> str:
    slug = "".join(ch if ch.isalnum() or ch == "_" else "-" for ch in value.lower())
    return f'<span class="badge b-{slug}">{e(label or value)}</span>'


def _result_text(span: ToolCallSpan) -> str:
    """An executed call's result as the trace keeps it (redacted, cut), folded away."""
    if span.result is None:
        return ""
    return (
        f'<details class="result"><summary>result text ({span.result_chars} chars)</summary>'
        f"<pre>{e(span.result)}</pre></details>"
    )


def _kv(rows: list[tuple[str, str]]) -> str:
    cells = "".join(f"<dt>{e(k)}</dt><dd>{e(v)}</dd>" for k, v in rows)
    return f'<dl class="kv">{cells}</dl>'
