"""The stub's rule-based "model": a deterministic reply computed from the conversation alone.

Two phases. With no tool result since the last user message it *proposes*: it scores each tool
by word overlap with the user's request (name words count 2, description words 1; words are
lower-cased, split on anything not a letter or digit, stop-words dropped, a plural `s` trimmed)
and calls the single best tool (score > 0; ties go to the alphabetically first name). It never
proposes two calls at once: a tie is far more often "fs_read vs fs_write" than two things the
user wanted. With tool results since the last user message it *summarises* them, quoting each
briefly and saying plainly when one looks refused, blocked, held or failed.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from stubs.openai_stub._validate import ChatMessage, ChatRequest, FunctionTool, HistoryCall

STOP_WORDS = frozenset(
    """a about after all also am an and any are as at be been before but by can could did do
    does for from get give had has have he her here him his how i if in into is it its just
    let me my need no not now of on or our out please she show so some tell than that the their
    them then there these they this those to too up us use using via want was we were what
    when where which who why will with would you your""".split()
)
SNIPPET_CHARS = 160
_WORD = re.compile(r"[a-z0-9]+")
_REFUSAL = re.compile(
    r"\b(blocked|refused|denied|forbidden|rejected|held|on hold|not allowed|not permitted|"
    r"pending approval|requires? approval|approval required|awaiting approval|unauthori[sz]ed|"
    r"error|failed|failure|not executed|not carried out|budget exhausted)\b",
    re.IGNORECASE,
)
_EMAIL = re.compile(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}")
_URL = re.compile(r"https?://[^\s\"'<>]+")
_QUOTED = re.compile(r"\"([^\"]+)\"|“([^”]+)”|`([^`]+)`|(?<!\w)'([^']+)'(?!\w)")
_NUMBER = re.compile(r"(?<![\w.-])-?\d+(?:\.\d+)?(?![\w-]|\.\d)")
_PATHLIKE = re.compile(r"(?:[\w.-]+/)+[\w.-]*|[\w-][\w.-]*\.[A-Za-z][A-Za-z0-9]{0,7}")
_STRIP = "\"'`“”.,;:!?()[]{}<>"
_EMAILISH = {"to", "cc", "bcc", "recipient", "sender", "from"}
_URLISH = {"uri", "link", "href"}
_PATHISH = {"path", "file", "filename", "filepath", "dir", "directory", "folder"}
_TEXTISH = {"query", "q", "question", "prompt", "search", "text", "message", "body", "content"}


@dataclass(frozen=True, slots=True)
class ProposedCall:
    """A tool call in a reply; `arguments` is JSON text (a fault may make it malformed)."""

    name: str
    arguments: str


@dataclass(frozen=True, slots=True)
class Reply:
    text: str | None
    calls: tuple[ProposedCall, ...] = ()

    @property
    def finish_reason(self) -> str:
        return "tool_calls" if self.calls else "stop"


@dataclass(frozen=True, slots=True)
class ToolResult:
    call_id: str
    name: str
    content: str


def words(text: str) -> list[str]:
    """Lower-cased content words, stop-words dropped, a plural `s` trimmed (orders -> order)."""
    out = []
    for word in _WORD.findall(text.lower()):
        if word in STOP_WORDS:
            continue
        if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
            word = word[:-1]
        out.append(word)
    return out


def word_count(text: str) -> int:
    return len(text.split())


def prompt_tokens(messages: Sequence[ChatMessage]) -> int:
    """Whitespace-separated words in every message, tool-call names and arguments included."""
    return sum(
        word_count(m.text) + sum(word_count(c.name) + word_count(c.arguments) for c in m.tool_calls)
        for m in messages
    )


def completion_tokens(reply: Reply) -> int:
    return word_count(reply.text or "") + sum(
        word_count(c.name) + word_count(c.arguments) for c in reply.calls
    )


def _last_user_index(messages: Sequence[ChatMessage]) -> int | None:
    for i in range(len(messages) - 1, -1, -1):
        if messages[i].role == "user":
            return i
    return None


def user_request(messages: Sequence[ChatMessage]) -> str | None:
    """The text of the last user message, or None when there is none."""
    i = _last_user_index(messages)
    return None if i is None else messages[i].text


def tool_results(messages: Sequence[ChatMessage]) -> tuple[ToolResult, ...]:
    """Tool results since the last user message, each named after the call it answers."""
    start = _last_user_index(messages)
    names = {c.id: c.name for m in messages for c in m.tool_calls}
    return tuple(
        ToolResult(m.tool_call_id or "", names.get(m.tool_call_id or "", "a tool"), m.text)
        for m in messages[(start if start is not None else -1) + 1 :]
        if m.role == "tool"
    )


def last_call(messages: Sequence[ChatMessage]) -> HistoryCall | None:
    """The first call of the most recent assistant message that made tool calls."""
    for message in reversed(messages):
        if message.tool_calls:
            return message.tool_calls[0]
    return None


def respond(request: ChatRequest) -> Reply:
    """The honest reply: summarise fresh tool results, else propose a call for the request."""
    results = tool_results(request.messages)
    if results:
        return Reply(text=summarise(results))
    return propose(request)


def propose(request: ChatRequest) -> Reply:
    text = user_request(request.messages)
    if text is None:
        return Reply(text="I cannot help: there is no user request to act on.")
    if not request.tools:
        return Reply(text="I cannot help with that: no tools are available to me.")
    if request.tool_choice == "none":
        return Reply(text="I cannot help with that: tool use is switched off (tool_choice=none).")
    tool: FunctionTool | None
    if request.forced_tool is not None:
        tool = next(t for t in request.tools if t.name == request.forced_tool)
    else:
        tool = choose_tool(text, request.tools, allow_zero=request.tool_choice == "required")
    if tool is None:
        names = ", ".join(sorted(t.name for t in request.tools))
        return Reply(
            text=f"I cannot help with that: none of the available tools ({names}) matches the "
            "request."
        )
    arguments = build_arguments(tool.parameters, text)
    return Reply(text=None, calls=(ProposedCall(tool.name, _json(arguments)),))


def _json(value: Any) -> str:
    return json.dumps(value, separators=(", ", ": "), ensure_ascii=False)


def score(request_words: Iterable[str], tool: FunctionTool) -> int:
    """2 per request word in the tool's name, 1 per other request word in its description."""
    wanted = set(request_words)
    name_words = set(words(tool.name))
    description_words = set(words(tool.description)) - name_words
    return 2 * len(wanted & name_words) + len(wanted & description_words)


def choose_tool(
    text: str, tools: Sequence[FunctionTool], *, allow_zero: bool = False
) -> FunctionTool | None:
    """The best-scoring tool (ties by name); None when nothing overlaps, unless `allow_zero`."""
    request_words = words(text)
    ranked = sorted(tools, key=lambda t: (-score(request_words, t), t.name))
    if not ranked:
        return None
    best = ranked[0]
    return best if allow_zero or score(request_words, best) > 0 else None


def summarise(results: Sequence[ToolResult]) -> str:
    """A final answer quoting each result; refused/blocked/held/failed ones are named as such."""
    lines = [
        f"Here is what the tool returned ({len(results)} result):"
        if len(results) == 1
        else f"Here is what the tools returned ({len(results)} results):"
    ]
    failed = 0
    for result in results:
        quote = snippet(result.content)
        if looks_refused(result.content):
            failed += 1
            lines.append(
                f'- {result.name} did NOT succeed (refused, blocked, held or failed): "{quote}"'
            )
        else:
            lines.append(f'- {result.name} returned: "{quote}"')
    if failed:
        lines.append(
            f"{failed} of {len(results)} tool call(s) did not succeed, so that part of the "
            "request is NOT done."
        )
    return "\n".join(lines)


def snippet(content: str) -> str:
    flat = " ".join(content.split())
    return flat if len(flat) <= SNIPPET_CHARS else flat[: SNIPPET_CHARS - 3] + "..."


def looks_refused(content: str) -> bool:
    return _REFUSAL.search(content) is not None


class _Evidence:
    """Values visible in the request text; each is handed out once."""

    def __init__(self, text: str) -> None:
        self.text = text
        stripped = (t.strip(_STRIP) for t in text.split())
        self.tokens = [t for t in stripped if t]
        self.quoted = [next(g for g in m.groups() if g) for m in _QUOTED.finditer(text)]
        self.emails = _EMAIL.findall(text)
        self.urls = [u.rstrip(_STRIP) for u in _URL.findall(text)]
        self.paths = [
            t
            for t in self.tokens
            if "@" not in t and "://" not in t and _PATHLIKE.fullmatch(t) and not _is_number(t)
        ]
        self.numbers = _NUMBER.findall(text)
        self._used: set[str] = set()

    def take(self, candidates: Iterable[str]) -> str | None:
        for value in candidates:
            if value not in self._used:
                self._used.add(value)
                return value
        return None


def _is_number(text: str) -> bool:
    return _NUMBER.fullmatch(text) is not None


def build_arguments(schema: Mapping[str, Any], text: str) -> dict[str, Any]:
    """Each required property: a value from the request, else its `default`, else a placeholder."""
    properties = schema.get("properties")
    properties = properties if isinstance(properties, dict) else {}
    required = schema.get("required")
    names = [n for n in required if isinstance(n, str)] if isinstance(required, list) else []
    evidence = _Evidence(text)
    arguments: dict[str, Any] = {}
    for name in names:
        prop = properties.get(name)
        arguments[name] = _fill(name, prop if isinstance(prop, dict) else {}, evidence)
    return arguments


def _type_of(prop: Mapping[str, Any]) -> str:
    declared = prop.get("type")
    if isinstance(declared, list):
        declared = next((t for t in declared if t != "null"), "null")
    if isinstance(declared, str):
        return declared
    if "default" in prop:
        return {
            bool: "boolean",
            int: "integer",
            float: "number",
            list: "array",
            dict: "object",
        }.get(type(prop["default"]), "string")
    return "string"


def _fill(name: str, prop: Mapping[str, Any], evidence: _Evidence) -> Any:
    if "const" in prop:
        return prop["const"]
    enum = prop.get("enum")
    if isinstance(enum, list) and enum:
        for option in enum:
            if isinstance(option, str) and re.search(
                rf"(?<!\w){re.escape(option.lower())}(?!\w)", evidence.text.lower()
            ):
                return option
        return prop.get("default", enum[0])
    kind = _type_of(prop)
    found: Any = None
    if kind == "string":
        found = _find_string(name.lower(), prop, evidence)
    elif kind in ("integer", "number"):
        found = _find_number(kind, evidence)
    if found is not None:
        return found
    if "default" in prop:
        return prop["default"]
    return _placeholder(kind, prop)


def _find_string(name: str, prop: Mapping[str, Any], evidence: _Evidence) -> str | None:
    pattern = prop.get("pattern")
    if isinstance(pattern, str):
        try:
            compiled = re.compile(pattern)
        except re.error:
            return None
        return evidence.take(t for t in [*evidence.quoted, *evidence.tokens] if compiled.search(t))
    fmt = prop.get("format")
    if fmt == "email" or "email" in name or name in _EMAILISH:
        found = evidence.take(evidence.emails)
        if found is not None:
            return found
    if fmt in ("uri", "url", "iri") or "url" in name or name in _URLISH:
        found = evidence.take(evidence.urls)
        if found is not None:
            return found
    if name in _PATHISH or name.endswith("path"):
        found = evidence.take(evidence.paths)
        if found is not None:
            return found
    found = evidence.take(evidence.quoted)
    if found is not None:
        return found
    if name in _TEXTISH:
        return evidence.take([evidence.text.strip()])
    return None


def _find_number(kind: str, evidence: _Evidence) -> int | float | None:
    candidates = [n for n in evidence.numbers if kind == "number" or "." not in n]
    found = evidence.take(candidates)
    if found is None:
        return None
    return int(found) if "." not in found else float(found)


def _placeholder(kind: str, prop: Mapping[str, Any]) -> Any:
    if kind in ("integer", "number"):
        minimum = prop.get("minimum")
        return minimum if isinstance(minimum, int | float) and not isinstance(minimum, bool) else 0
    return {"boolean": False, "array": [], "object": {}, "null": None}.get(kind, "example")
