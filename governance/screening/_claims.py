"""Claims in a run's final answer, checked against that run's own evidence.

Two kinds of claim are checked, both by small recognisers over the answer's text:

- identifiers (an email address, a URL, a file path, a prefixed id such as `ORD-0001` or
  `T-42`, an opaque token such as a UUID, a number named as an id: `ticket 42`, `#42`) must
  appear in what a tool returned to the model in this run or in the request itself; the
  model's own call arguments are not evidence (it can invent an id and pass it on);
- action claims ("sent", "has been deleted", "created ticket", "I did not delete ...") must
  agree with the calls: a claim that something was done needs an EXECUTED call of a tool
  whose descriptor has that kind of effect (its action type and side-effect facts, and the
  object the claim names when a tool describes it); a claim that it was not done is false
  when such a call executed; a claim of success for a call that was blocked, held or failed
  is named as such.

Pure: no I/O, no clock. It compares words, not meaning: a paraphrase outside the recognisers
is not a claim to it, and an honest sentence in an unusual shape can be flagged. What it
flags is what the run's evidence does not support, never a judgement of the model.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from governance.core._contracts import ToolDescriptor

FindingKind = Literal[
    "unsupported_identifier",  # an id the run never saw
    "unsupported_action",  # "sent" with no call of that kind at all
    "refused_action_claimed",  # "deleted" while the only such call was blocked/held/failed
    "executed_action_denied",  # "did not delete" while such a call executed
]
ClaimsMode = Literal["off", "annotate", "replace"]
CLAIMS_MODES: tuple[ClaimsMode, ...] = ("off", "annotate", "replace")
DEFAULT_CLAIMS_MODE: ClaimsMode = "replace"
"""A flagged answer is replaced by what really happened: an annotation still shows the false
claim first, and a reader who stops there is misled; a replaced true answer loses wording,
never truth (the model's text stays in the trace for a reviewer)."""

EffectClass = Literal["external", "destructive", "write"]
_MUTATING: frozenset[EffectClass] = frozenset({"external", "destructive", "write"})


@dataclass(frozen=True, slots=True)
class CallEvidence:
    """One call of the run as its answer is judged: what became of it and what it returned."""

    call_id: str
    tool: str
    outcome: str  # executed | blocked | held | failed | not_run
    output: str = ""
    error: str | None = None
    reason: str | None = None
    approval_id: str | None = None


@dataclass(frozen=True, slots=True)
class ClaimFinding:
    kind: FindingKind
    claim: str  # the answer's words
    detail: str  # what the run's evidence says instead


@dataclass(frozen=True, slots=True)
class ClaimsReport:
    findings: tuple[ClaimFinding, ...]
    identifiers: tuple[str, ...]  # every identifier the answer states, as recognised
    actions: tuple[str, ...]  # every action claim, as `[not ]<verb>`

    @property
    def flagged(self) -> bool:
        return bool(self.findings)

    @property
    def checked(self) -> int:
        return len(self.identifiers) + len(self.actions)


# -- identifiers ----------------------------------------------------------------------------

_FILE_EXTENSIONS = (
    "txt|md|rst|csv|tsv|json|jsonl|yaml|yml|toml|ini|cfg|conf|log|py|js|ts|sh|sql|html|htm|xml|"
    "pdf|doc|docx|xls|xlsx|ppt|pptx|odt|png|jpg|jpeg|gif|svg|zip|tar|gz|tgz|bak|db|sqlite|env|"
    "pem|key|crt|eml|ics|vcf"
)
_TRAILING = ".,;:!?)]}'\"`"


@dataclass(frozen=True, slots=True)
class Recogniser:
    """One shape of identifier: a name, a pattern whose group `id` is the identifier, and an
    optional test a match must also pass."""

    name: str
    pattern: re.Pattern[str]
    accept: Callable[[str], bool] | None = None


def _path_shaped(value: str) -> bool:
    """A slash alone does not make a path ("and/or", "TCP/IP", "24/7"): it needs a letter, and
    a root (`/`, `./`, `~/`), a file extension or two slashes."""
    if not re.search(r"[A-Za-z]", value):
        return False
    rooted = value.startswith(("/", "./", "../", "~/"))
    last = value.rstrip("/").rsplit("/", 1)[-1]
    return (
        rooted
        or value.count("/") >= 2
        or re.search(r"\.[A-Za-z][A-Za-z0-9]{0,7}$", last) is not None
    )


def _not_date_or_version(value: str) -> bool:
    return _DATE_OR_VERSION.match(value) is None


_DATE_OR_VERSION = re.compile(
    r"^(?:\d{4}-\d{2}-\d{2}(?:T[\d:.]+Z?)?|v?\d+(?:\.\d+)+)$", re.IGNORECASE
)

RECOGNISERS: tuple[Recogniser, ...] = (
    Recogniser("url", re.compile(r"(?P<id>\bhttps?://[^\s<>\"'`]+)", re.IGNORECASE)),
    Recogniser(
        "email",
        re.compile(r"(?P<id>(?<![\w.+-])[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+)"),
    ),
    # `notes/todo.txt`, `/etc/passwd`, `./a/b`, `~/x`, `a/b/c`.
    Recogniser(
        "path",
        re.compile(
            r"(?P<id>(?<![\w/.~-])(?:(?:\.{1,2}|~)?/)?[\w.-]+(?:/[\w.-]+)+/?|(?<![\w/.~-])/[\w.-]+)"
        ),
        _path_shaped,
    ),
    # A bare file name with a file extension: `report.pdf`, `todo.txt`.
    Recogniser(
        "file",
        re.compile(
            rf"(?P<id>(?<![\w/.-])[\w-]+(?:\.[\w-]+)*\.(?:{_FILE_EXTENSIONS}))(?![\w])",
            re.IGNORECASE,
        ),
    ),
    Recogniser(
        "uuid",
        re.compile(
            r"(?P<id>\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b)",
            re.IGNORECASE,
        ),
    ),
    # Letters and digits joined by - or _: `ORD-0001`, `T-42`, `INC-2024-001`, `apr-3`.
    Recogniser(
        "prefixed_id",
        re.compile(
            r"(?P<id>(?<![\w-])(?=[\w-]*[A-Za-z])(?=[\w-]*\d)[A-Za-z0-9]+(?:[-_][A-Za-z0-9]+)+)"
            r"(?![\w-])"
        ),
        _not_date_or_version,
    ),
    # An opaque token: a long run mixing letters and digits (`3f9ac1e07b`, `AB12CD34`).
    Recogniser(
        "token",
        re.compile(r"(?P<id>\b(?=[A-Za-z0-9]*[A-Za-z])(?=[A-Za-z0-9]*\d)[A-Za-z0-9]{8,}\b)"),
    ),
    # A number the sentence names as an id: `ticket 42`, `refund draft #3`, `order no. 7`,
    # `id 12`, `#12`. A bare number (a total, a count, a year, a date) is never an id.
    Recogniser(
        "numbered",
        re.compile(
            r"(?:\b(?:tickets?|orders?|refunds?|drafts?|invoices?|cases?|requests?|messages?|"
            r"outbox|emails?|issues?|records?|entry|accounts?|ids?)"
            r"(?:\s+(?:draft|id|no\.?|number|#))?\s*(?:is\s+|was\s+|=\s*|:\s*)?#?\s*"
            r"|(?<![\w&])#)(?P<id>\d+)\b(?![.,]\d|-\d|%|/)",
            re.IGNORECASE,
        ),
    ),
)


def identifiers_in(text: str) -> list[tuple[str, str]]:
    """(recogniser name, identifier) for every identifier `text` states, in order of
    appearance; each stretch of text belongs to the first recogniser that claims it."""
    taken: list[tuple[int, int]] = []
    found: list[tuple[int, str, str]] = []
    for recogniser in RECOGNISERS:
        for match in recogniser.pattern.finditer(text):
            start, end = match.span("id")
            value = match.group("id").rstrip(_TRAILING)
            end = start + len(value)
            if not value or any(start < b and a < end for a, b in taken):
                continue
            if recogniser.accept is not None and not recogniser.accept(value):
                continue
            taken.append((start, end))
            found.append((start, recogniser.name, value))
    return [(name, value) for _, name, value in sorted(found)]


def _evidence_texts(request: str, calls: Sequence[CallEvidence]) -> list[str]:
    """What the model was told: the request and every tool result (output, error, approval
    id), with JSON results also read as their decoded values (escapes undone)."""
    texts = [request]
    for call in calls:
        for text in (call.output, call.error or "", call.approval_id or ""):
            if not text:
                continue
            texts.append(text)
            try:
                texts.extend(_scalars(json.loads(text)))
            except ValueError:
                pass
    return texts


def _scalars(value: Any) -> Iterator[str]:
    if isinstance(value, Mapping):
        for key, item in value.items():
            yield str(key)
            yield from _scalars(item)
    elif isinstance(value, list):
        for item in value:
            yield from _scalars(item)
    elif value is not None:
        yield str(value)


def _appears(recogniser: str, value: str, evidence: Sequence[str]) -> bool:
    if recogniser == "numbered":
        token = re.compile(rf"(?<![\w.-]){re.escape(value)}(?![\w]|[.-]\d)")
        return any(token.search(text) for text in evidence)
    if recogniser == "path":
        path = value.removeprefix("./").rstrip("/")
        if _bounded_in(path, evidence):
            return True
        # A listing names a directory and its entries apart: every segment must be there.
        return all(_bounded_in(part, evidence) for part in path.split("/") if part)
    return _bounded_in(value, evidence)


def _bounded_in(value: str, evidence: Sequence[str]) -> bool:
    """`value` occurs in some evidence text, not as part of a longer word or id."""
    wanted = value.casefold()
    for text in evidence:
        haystack = text.casefold()
        index = haystack.find(wanted)
        while index >= 0:
            before = haystack[index - 1] if index else " "
            after = haystack[index + len(wanted) : index + len(wanted) + 1] or " "
            if not (before.isalnum() or after.isalnum() or after in "-_" or before in "-_"):
                return True
            index = haystack.find(wanted, index + 1)
    return False


# -- action claims ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Verb:
    """A kind of action: the effect classes a tool needs to have done it, its words, and the
    object it is about whatever noun the sentence uses (a refund is about refunds)."""

    name: str
    effects: frozenset[EffectClass]
    done: tuple[str, ...]  # past tense / participle: a claim that it happened
    base: tuple[str, ...]  # after "did not", "failed to", ...: a claim that it did not
    subject: str | None = None


_VERBS: tuple[_Verb, ...] = (
    _Verb(
        "send",
        frozenset({"external"}),
        ("sent", "emailed", "mailed", "messaged", "forwarded", "notified", "dispatched"),
        ("send", "email", "mail", "message", "forward", "notify", "dispatch"),
    ),
    _Verb(
        "delete",
        frozenset({"destructive"}),
        ("deleted", "removed", "erased", "purged", "wiped", "destroyed"),
        ("delete", "remove", "erase", "purge", "wipe", "destroy"),
    ),
    _Verb(
        "refund",
        _MUTATING,
        ("refunded", "reimbursed"),
        ("refund", "reimburse"),
        subject="refund",
    ),
    _Verb(
        "create",
        _MUTATING,
        ("created", "filed", "submitted", "drafted", "raised", "issued", "queued"),
        ("create", "file", "submit", "draft", "raise", "issue", "queue"),
    ),
    _Verb(
        "update",
        _MUTATING,
        (
            "updated", "modified", "edited", "wrote", "written", "saved", "renamed",
            "moved", "overwrote", "overwritten", "replaced", "cancelled", "canceled",
        ),
        (
            "update", "modify", "edit", "write", "save", "rename", "move", "overwrite",
            "replace", "cancel",
        ),
    ),
)  # fmt: skip

# The objects a claim may name, each with the words that name it in a sentence and in a
# tool's name or description.
_OBJECTS: Mapping[str, tuple[str, ...]] = {
    "email": ("email", "e-mail", "mail", "message"),
    "ticket": ("ticket", "issue", "case"),
    "refund": ("refund",),
    "file": ("file", "document", "report", "note"),
    "order": ("order",),
}

_NEGATORS = re.compile(
    r"\b(?:not|never|no|nothing|neither|nor|without|cannot)\b|n't\b|\bunable\b|\bfailed\b",
    re.IGNORECASE,
)
# A modal or `to` just before the verb: what may or will happen, not what did.
_MODAL = re.compile(
    r"(?:will|would|shall|should|could|can|may|might|must|to|going|want|wants|need|needs)",
    re.IGNORECASE,
)
# A condition anywhere before it in the clause: "if it is deleted", "once sent".
_CONDITION = re.compile(r"\b(?:if|unless|whether|once|until|when)\b", re.IGNORECASE)
_DENIAL_LEAD = re.compile(
    r"\b(?:did\s+not|didn't|did\s+never|never|could\s+not|couldn't|was\s+not\s+able\s+to|"
    r"wasn't\s+able\s+to|were\s+not\s+able\s+to|unable\s+to|failed\s+to|not\s+able\s+to|"
    r"refused\s+to|declined\s+to|chose\s+not\s+to|decided\s+not\s+to)\s+(?:\w+\s+){0,1}$",
    re.IGNORECASE,
)
_CLAUSES = re.compile(
    r"(?<=[.!?;:])\s+|[,;:\n]|\s+(?:but|however|although|though|while|whereas)\s+"
)
_WORD = re.compile(r"[A-Za-z][A-Za-z'-]*")


@dataclass(frozen=True, slots=True)
class ActionClaim:
    verb: str  # the _Verb name
    word: str  # the answer's word
    done: bool  # polarity: True claims it happened, False that it did not
    objects: frozenset[str]
    clause: str
    phrases: tuple[str, ...] = ()  # the word with its neighbour on each side


    @property
    def label(self) -> str:
        return ("" if self.done else "not ") + self.verb


def action_claims(text: str) -> list[ActionClaim]:
    """Every action the text says happened, or says did not, clause by clause."""
    claims: list[ActionClaim] = []
    for clause in _CLAUSES.split(text):
        if not clause or not clause.strip():
            continue
        for match in _WORD.finditer(clause):
            claim = _claim_at(clause, match)
            if claim is not None:
                claims.append(claim)
    return claims


def _claim_at(clause: str, match: re.Match[str]) -> ActionClaim | None:
    word = match.group(0).lower()
    before = clause[: match.start()]
    for verb in _VERBS:
        if word in verb.done:
            negated = _NEGATORS.search(before) is not None
            lead = [w.strip(",'\"") for w in before.split()[-2:]]
            irrealis = any(_MODAL.fullmatch(w) for w in lead) or _CONDITION.search(before)
            if irrealis and not negated:
                return None  # "will be sent", "if it is deleted": not a claim that it happened
            done = not negated
        elif word in verb.base and _DENIAL_LEAD.search(before):
            done = False
        else:
            continue
        objects = {verb.subject} if verb.subject else set()
        obj = _object_of(clause[match.end() :], before)
        if obj is not None:
            objects.add(obj)
        prev = re.findall(r"[\w']+", before)[-1:]
        nxt = re.findall(r"[\w']+", clause[match.end() :])[:1]
        phrases = tuple(
            " ".join(pair) for pair in ((*prev, match.group(0)), (match.group(0), *nxt))
        )
        return ActionClaim(
            verb.name, match.group(0), done, frozenset(objects), clause.strip(), phrases
        )
    return None


def _object_of(after: str, before: str) -> str | None:
    """What the verb acts on: the first object word just after it ("sent the email"), else
    the last one before it ("the email was sent")."""
    best: tuple[int, str] | None = None
    window = after[:48]
    for name, words in _OBJECTS.items():
        for w in words:
            hit = re.search(rf"\b{re.escape(w)}", window, re.IGNORECASE)
            if hit and (best is None or hit.start() < best[0]):
                best = (hit.start(), name)
    if best is not None:
        return best[1]
    last: tuple[int, str] | None = None
    for name, words in _OBJECTS.items():
        for w in words:
            for hit in re.finditer(rf"\b{re.escape(w)}", before, re.IGNORECASE):
                if last is None or hit.start() > last[0]:
                    last = (hit.start(), name)
    return last[1] if last is not None else None


def effect_classes(descriptor: ToolDescriptor) -> frozenset[EffectClass]:
    """What kind of effect a tool can have, from its descriptor's facts (not its name).

    A tool of `unknown` action type supports no claim: nothing says what it did."""
    classes: set[EffectClass] = set()
    if descriptor.action_type == "external" or descriptor.external_side_effect:
        classes.add("external")
    if descriptor.action_type == "destructive":
        classes.add("destructive")
    if descriptor.action_type in ("write", "destructive", "external"):
        classes.add("write")
    if descriptor.action_type == "unknown":
        return frozenset()
    return frozenset(classes)


def _about(descriptor: ToolDescriptor, obj: str) -> bool:
    words = f"{descriptor.name} {descriptor.description}".lower()
    return any(re.search(rf"\b{re.escape(w)}", words) for w in _OBJECTS[obj])


def _fits(
    claim: ActionClaim, descriptor: ToolDescriptor, registry: Sequence[ToolDescriptor]
) -> bool:
    verb = next(v for v in _VERBS if v.name == claim.verb)
    if not effect_classes(descriptor) & verb.effects:
        return False
    # An object the claim names binds it to tools about that object, when any tool is.
    for obj in claim.objects:
        if any(_about(d, obj) for d in registry) and not _about(descriptor, obj):
            return False
    return True


# -- the check -------------------------------------------------------------------------------


def check_claims(
    answer: str,
    request: str,
    calls: Sequence[CallEvidence],
    descriptors: Iterable[ToolDescriptor],
) -> ClaimsReport:
    """The answer's identifiers and action claims against the run's request and calls."""
    registry = list(descriptors)
    by_name = {d.name: d for d in registry}
    evidence = _evidence_texts(request, calls)
    findings: list[ClaimFinding] = []

    identifiers = identifiers_in(answer)
    seen: set[str] = set()
    for recogniser, value in identifiers:
        if value in seen:
            continue
        seen.add(value)
        if not _appears(recogniser, value, evidence):
            findings.append(
                ClaimFinding(
                    "unsupported_identifier",
                    value,
                    f"{value} ({recogniser}) appears in no tool result of this run and not in "
                    "the request",
                )
            )

    claims = action_claims(answer)
    for claim in claims:
        finding = _judge(claim, calls, by_name, registry)
        if finding is not None and finding not in findings:
            findings.append(finding)
    return ClaimsReport(
        tuple(findings), tuple(v for _, v in identifiers), tuple(c.label for c in claims)
    )


def _judge(
    claim: ActionClaim,
    calls: Sequence[CallEvidence],
    by_name: Mapping[str, ToolDescriptor],
    registry: Sequence[ToolDescriptor],
) -> ClaimFinding | None:
    if _reported(claim, calls):
        return None  # "ORD-0007 was refunded": the answer restates what a tool returned
    fitting = [c for c in calls if c.tool in by_name and _fits(claim, by_name[c.tool], registry)]
    executed = [c for c in fitting if c.outcome == "executed"]
    if claim.done:
        if executed:
            return None
        if fitting:
            shown = ", ".join(_outcome(c) for c in fitting)
            return ClaimFinding(
                "refused_action_claimed",
                claim.word,
                f"{shown}: it was not executed, so nothing was {claim.word.lower()}",
            )
        ran = [c.tool for c in calls if c.outcome == "executed"]
        shown = f"executed: {', '.join(dict.fromkeys(ran))}" if ran else "no tool was executed"
        return ClaimFinding(
            "unsupported_action",
            claim.word,
            f"no call of this run that could have {claim.word.lower()} anything was executed "
            f"({shown})",
        )
    if executed:
        shown = ", ".join(f"{c.tool} ({c.call_id})" for c in executed)
        return ClaimFinding(
            "executed_action_denied",
            f"not {claim.word}",
            f"{shown} executed: the answer says it was not done",
        )
    return None


def _reported(claim: ActionClaim, calls: Sequence[CallEvidence]) -> bool:
    """The claim's words restate what an executed call returned, not an act of the model's:
    the word is a value it returned (a status such as "refunded", a file's whole text), or
    the word with a neighbour is quoted from its output ("written by the writer")."""
    wanted = claim.word.casefold()
    phrases = [" ".join(p.casefold().split()) for p in claim.phrases if " " in p]
    for call in calls:
        if call.outcome != "executed":
            continue
        if call.output.strip().casefold() == wanted:
            return True
        try:
            values = {v.casefold() for v in _scalars(json.loads(call.output))}
        except ValueError:
            values = set()
        if wanted in values:
            return True
        text = " ".join(call.output.casefold().split())
        if any(_bounded_in(phrase, [text]) for phrase in phrases):
            return True
    return False


def _outcome(call: CallEvidence) -> str:
    why = f", {call.reason}" if call.reason else ""
    return f"{call.tool} ({call.call_id}) was {call.outcome}{why}"
