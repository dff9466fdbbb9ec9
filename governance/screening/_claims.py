"""Claims in a run's final answer, checked against that run's own evidence.

Two kinds of claim are checked, both by small recognisers over the answer's text:

- identifiers (an email address, a URL, a file path, a prefixed id such as `ORD-0001` or
  `T-42`, an opaque token such as a UUID, a number named as an id: `ticket 42`, `#42`) must
  appear in what a tool returned to the model in this run or in the request itself; the
  model's own call arguments are not evidence (it can invent an id and pass it on), nor is a
  result's echo of them (a ticket's title, an email's `to`), except as the object of a true
  claim about that very call ("Saved reports/a.md" after that write);
- action claims ("sent", "has been deleted", "created ticket", "I did not delete ...") must
  agree with the calls: a claim that something was done needs an EXECUTED call of a tool
  whose descriptor has that kind of effect (its action type and side-effect facts, and the
  object the claim names when a tool describes it); a claim that it was not done is false
  when such a call executed; a claim of success for a call that was blocked, held or failed
  is named as such. A claim naming an id (`sent to grace@...`, `refund for ORD-0002`) needs
  such a call about that id. A negation counts only when tied to the verb ("was not sent",
  "no email was sent"), not anywhere earlier ("No problem — I sent it"). A statement about
  a thing no tool acts on ("the item was removed from the box") or of what generally happens
  ("refunds are issued within 5 days") is not the assistant's claim; a status a result
  reports backs only a statement about that object, never "I ...", and a read tool's text
  (a page, a search hit) never backs an act on an object.

Pure: no I/O, no clock. It compares words, not meaning: a paraphrase outside the recognisers
is not a claim to it, and an honest sentence in an unusual shape can be flagged. What it
flags is what the run's evidence does not support, never a judgement of the model.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from governance.core._contracts import ToolDescriptor
from governance.screening._json_text import json_document, json_pairs, json_scalars

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
    # What the model passed: never evidence itself, and removed from what the call returned
    # before that is read as evidence (a ticket's title, an email's `to`, echoed back).
    arguments: Mapping[str, Any] = field(default_factory=dict)


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
            texts.extend(_returned(call, text))
    return texts


def _returned(call: CallEvidence, text: str) -> list[str]:
    """What `text`, returned by `call`, tells the model beyond the call's own arguments: the
    text and its JSON values (escapes undone), with every argument string cut out."""
    if not text:
        return []
    own = _own_strings(call)
    texts = [_scrub(text, own)]
    parsed, document = json_document(text)
    if parsed:
        texts.extend(_scrub(v, own) for v in json_scalars(document))
    return [t for t in texts if t.strip()]


def _own_strings(call: CallEvidence) -> list[str]:
    """The call's argument strings whose echo in its result is not evidence: free text (a
    ticket title can carry any invented id or claim). An argument that is one identifier and
    nothing else (`order_id: ORD-0001`, `to: ada@example.com`) stays: the tool answered about
    that very id, so its result naming it is what the model was told (only when the tool did
    answer: a held or blocked call's text is governance's, not the tool's)."""
    answered = call.outcome in ("executed", "failed")
    found = [
        v
        for v in _strings(call.arguments)
        if len(v.strip()) >= 2 and not (answered and _bare_identifier(v))
    ]
    # Longest first, so a title is cut whole before any shorter value inside it.
    return sorted(set(found), key=len, reverse=True)


def _bare_identifier(value: str) -> bool:
    text = value.strip()
    found = identifiers_in(text)
    return len(found) == 1 and found[0][1] == text


def _scrub(text: str, own: Sequence[str]) -> str:
    """`text` without the values in `own`, each cut only where it stands alone (`reports` is
    not cut out of `reports/q3.md`)."""
    for value in own:
        for form in dict.fromkeys((value, json.dumps(value)[1:-1])):
            bounded = rf"(?<![\w@./-]){re.escape(form)}(?![\w@/-]|\.\w)"
            text = re.sub(bounded, " ", text, flags=re.IGNORECASE)
    return text


def _strings(value: Any) -> Iterator[str]:
    """The string values in a JSON-like value (not its keys, numbers or booleans)."""
    if isinstance(value, Mapping):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _strings(item)
    elif isinstance(value, str):
        yield value


def _appears(
    recogniser: str,
    value: str,
    evidence: Sequence[str],
    id_fields: Sequence[tuple[str, int]] = (),
) -> bool:
    if recogniser == "numbered":
        # `ticket 0007` is ticket 7: leading zeros are not part of the number.
        digits = value.lstrip("0") or "0"
        token = re.compile(rf"(?<![\w.-])0*{re.escape(digits)}(?![\w]|[.-]\d)")
        return any(token.search(text) for text in evidence)
    if recogniser == "path":
        path = value.removeprefix("./").rstrip("/")
        if _bounded_in(path, evidence):
            return True
        # A listing names a directory and its entries apart: every segment must be there.
        if all(_bounded_in(part, evidence) for part in path.split("/") if part):
            return True
        # An absolute form of a workspace path (`/workspace/notes/a.txt`): its relative tail.
        parts = [part for part in path.split("/") if part]
        return path.startswith("/") and any(
            _bounded_in("/".join(parts[i:]), evidence) for i in range(1, len(parts) - 1)
        )
    if _bounded_in(value, evidence):
        return True
    if recogniser == "prefixed_id":
        return _numbered_field(value, id_fields)
    return False


_SHORT_PREFIXED = re.compile(r"^([A-Za-z]{1,6})[-_]?0*(\d+)$")


def _numbered_field(value: str, id_fields: Sequence[tuple[str, int]]) -> bool:
    """`T-7` or `TKT-0007` for a result's `"ticket_id": 7`: a short letter prefix whose letters
    spell the start of an id field's name (in order), and that field's number."""
    shaped = _SHORT_PREFIXED.match(value)
    if shaped is None:
        return False
    prefix, number = shaped.group(1).casefold(), int(shaped.group(2))
    for key, field_value in id_fields:
        name = key.casefold()
        if field_value != number or not name.startswith(prefix[0]):
            continue
        if not re.search(r"(?:^|_)(?:id|no|number|ref)$", name):
            continue
        letters = iter(name)
        if all(letter in letters for letter in prefix):
            return True
    return False


def _id_fields(calls: Sequence[CallEvidence]) -> list[tuple[str, int]]:
    """(field name, number) for every whole-number id field a result returned."""
    fields: list[tuple[str, int]] = []
    for call in calls:
        parsed, document = json_document(call.output)
        if not parsed:
            continue
        for key, item in json_pairs(document):
            if key is None:
                continue
            if isinstance(item, int) and not isinstance(item, bool):
                fields.append((key, item))
            elif isinstance(item, str) and item.isdigit():
                fields.append((key, int(item)))
    return fields


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

# A negation counts only when it is tied to the verb, not anywhere earlier in the clause ("No
# problem, I sent it" is a claim that it was sent):
# - `not`/`never`/`n't` just before it, with at most two words between ("has not been sent",
#   "haven't yet sent"), but not "not only"/"not just" (which assert it);
# - `no`/`nothing`/`none` as its subject ("No email was sent", "nothing has been deleted",
#   "none of them were removed", "no email sent");
# - `nor`/`neither` just before it, or "without being".
_NEGATED = re.compile(
    r"(?:\b(?:not|never)|n't)\s+(?!(?:only|just|merely|simply)\b)(?:[\w']+\s+){0,2}$"
    r"|\b(?:no|nothing|none)\b(?:\s+[\w'-]+){0,3}?\s+"
    r"(?:was|were|is|are|has\s+been|have\s+been|had\s+been|has|have|had|got|been|being)"
    r"\s+(?:\w+ly\s+)?$"
    r"|\b(?:no|nothing|none)\s+(?:[\w'-]+\s+)?$"
    r"|\b(?:nor|neither)\s+$|\bwithout\s+being\s+$",
    re.IGNORECASE,
)
_FIRST_PERSON = re.compile(r"\b(?:I|we)\b|\b(?:I|we)'(?:ve|d|ll|m|re)\b", re.IGNORECASE)
# Present passive or a stated frequency: what generally happens ("refunds are issued within
# 5 days"), not a claim that this run did it.
_HABITUAL_BEFORE = re.compile(
    r"\b(?:are|am|get|gets|usually|typically|normally|generally|always|automatically)\s+"
    r"(?:\w+ly\s+)?$",
    re.IGNORECASE,
)
_HABITUAL_AFTER = re.compile(
    r"^\s*(?:within|every|automatically|daily|weekly|monthly|usually|normally)\b",
    re.IGNORECASE,
)
# A subject that names nothing in particular: the claim is about the run's work.
_VAGUE = frozenset(
    "it everything all this that they these those them both each something anything nothing "
    "stuff which what none".split()
)
_PASSIVE = re.compile(
    r"\b(?:was|were|is|are|been|got|gets|get)\s+(?:\w+ly\s+|just\s+|already\s+)?$",
    re.IGNORECASE,
)
_AUXILIARY = frozenset(
    "was were is are am be been being has have had got gets get just already now also then "
    "successfully all".split()
)
_DETERMINERS = frozenset("the a an your my our their his her its this that these those".split())
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
    r"(?<=[.!?;:])\s+|[,;:\n\u2014\u2013]|\s+-{1,2}\s+"
    r"|\s+(?:but|however|although|though|while|whereas)\s+"
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
    first_person: bool = False  # "I sent", "we deleted": the assistant's own act
    windows: tuple[str, ...] = ()  # each run of three words of the clause holding the word


    @property
    def label(self) -> str:
        return ("" if self.done else "not ") + self.verb


def action_claims(text: str) -> list[ActionClaim]:
    """Every action the text says happened, or says did not, clause by clause."""
    claims: list[ActionClaim] = []
    for clause in _CLAUSES.split(text):
        if not clause or not clause.strip():
            continue
        previous: tuple[int, ActionClaim] | None = None
        for match in _WORD.finditer(clause):
            claim = _claim_at(clause, match)
            if claim is None:
                continue
            # "Nothing was sent or deleted": the negation carries over `or`/`nor`.
            if previous is not None and not previous[1].done and claim.done:
                between = clause[previous[0] : match.start()].strip().lower()
                if between in ("or", "nor", ",", "or even"):
                    claim = ActionClaim(
                        claim.verb, claim.word, False, claim.objects, claim.clause,
                        claim.phrases, claim.first_person, claim.windows,
                    )  # fmt: skip
            previous = (match.end(), claim)
            claims.append(claim)
    return claims


def _claim_at(clause: str, match: re.Match[str]) -> ActionClaim | None:
    word = match.group(0).lower()
    before = clause[: match.start()]
    after = clause[match.end() :]
    first_person = _FIRST_PERSON.search(before) is not None
    for verb in _VERBS:
        if word in verb.done:
            negated = _NEGATED.search(before) is not None
            lead = [w.strip(",'\"") for w in before.split()[-2:]]
            irrealis = any(_MODAL.fullmatch(w) for w in lead) or _CONDITION.search(before)
            if irrealis and not negated:
                return None  # "will be sent", "if it is deleted": not a claim that it happened
            if not first_person and (
                _HABITUAL_BEFORE.search(before) or _HABITUAL_AFTER.match(after)
            ):
                return None  # "refunds are issued within 5 days": what generally happens
            done = not negated
        elif word in verb.base and _DENIAL_LEAD.search(before):
            done = False
        else:
            continue
        objects = {verb.subject} if verb.subject else set()
        obj = _object_of(after, before)
        if obj is not None:
            objects.add(obj)
        if (
            done
            and not first_person
            and not objects
            and _PASSIVE.search(before)
            and _names_other_thing(before)
            and not any(kind in _BOUND_KINDS for kind, _ in identifiers_in(after))
        ):
            # "the item was removed from the box", "ORD-0001 was dispatched on 2025-07-02":
            # about something no tool acts on, not an act of the assistant's.
            return None
        prev = re.findall(r"[\w']+", before)[-1:]
        nxt = re.findall(r"[\w']+", after)[:1]
        phrases = tuple(
            " ".join(pair) for pair in ((*prev, match.group(0)), (match.group(0), *nxt))
        )
        leading = re.findall(r"[\w']+", before)[-2:]
        around = [*leading, match.group(0), *re.findall(r"[\w']+", after)[:2]]
        at = len(leading)
        windows = tuple(
            " ".join(around[i : i + 3])
            for i in range(max(0, at - 2), at + 1)
            if i + 3 <= len(around)
        )
        return ActionClaim(
            verb.name, match.group(0), done, frozenset(objects), clause.strip(), phrases,
            first_person, windows,
        )  # fmt: skip
    return None


def _names_other_thing(before: str) -> bool:
    """The words before a passive verb name a particular thing (a noun or an id), not a vague
    "it"/"everything" that stands for the run's work."""
    words = [w.strip(".,;:!?()[]{}'\"`*_").lower() for w in before.split()]
    words = [w for w in words if w and w not in _AUXILIARY]
    if not words or words[-1] in _VAGUE:
        return False
    subject = [w for w in words[-3:] if w not in _DETERMINERS]
    return bool(subject) and not any(w in _VAGUE for w in subject)


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
    findings: list[ClaimFinding] = []

    claims = action_claims(answer)
    acted_on = _acted_on(claims, calls, by_name, registry)
    identifiers = identifiers_in(answer)
    # Read from the results only when an identifier must be looked up: most answers name none.
    evidence: list[str] | None = None
    id_fields: list[tuple[str, int]] = []
    seen: set[str] = set()
    for recogniser, value in identifiers:
        if value in seen:
            continue
        seen.add(value)
        if value in acted_on:
            continue
        if evidence is None:
            evidence, id_fields = _evidence_texts(request, calls), _id_fields(calls)
        if not _appears(recogniser, value, evidence, id_fields):
            findings.append(
                ClaimFinding(
                    "unsupported_identifier",
                    value,
                    f"{value} ({recogniser}) appears in no tool result of this run and not in "
                    "the request",
                )
            )

    for claim in claims:
        finding = _judge(claim, calls, by_name, registry)
        if finding is not None and finding not in findings:
            findings.append(finding)
    return ClaimsReport(
        tuple(findings), tuple(v for _, v in identifiers), tuple(c.label for c in claims)
    )


# Identifier kinds that bind an action claim to a call (a number is checked as an id only).
_BOUND_KINDS = frozenset({"url", "email", "path", "file", "uuid", "prefixed_id", "token"})
# Verbs broad enough that, with no object named, a denial says nothing about which call.
_SPECIFIC = frozenset({"send", "delete"})


def _acted_on(
    claims: Sequence[ActionClaim],
    calls: Sequence[CallEvidence],
    by_name: Mapping[str, ToolDescriptor],
    registry: Sequence[ToolDescriptor],
) -> set[str]:
    """Identifiers the answer names as the object of an act that an executed call of that
    kind did to them ("Saved reports/a.md" after fs.write of reports/a.md): the model chose
    them, but the claim about them is true."""
    found: set[str] = set()
    for claim in claims:
        if not claim.done:
            continue
        for call in calls:
            if call.outcome != "executed" or call.tool not in by_name:
                continue
            if not _fits(claim, by_name[call.tool], registry):
                continue
            arguments = list(_strings(call.arguments))
            found.update(v for k, v in _clause_ids(claim) if _appears(k, v, arguments))
    return found


def _judge(
    claim: ActionClaim,
    calls: Sequence[CallEvidence],
    by_name: Mapping[str, ToolDescriptor],
    registry: Sequence[ToolDescriptor],
) -> ClaimFinding | None:
    fitting = [c for c in calls if c.tool in by_name and _fits(claim, by_name[c.tool], registry)]
    if claim.done and _reported(claim, calls, fitting, by_name):
        return None  # "ORD-0007 was refunded": the answer restates what a tool returned
    executed = [c for c in fitting if c.outcome == "executed"]
    if claim.done:
        if executed:
            unbound = _unbound(claim, executed)
            if unbound is None:
                return None
            return ClaimFinding(
                "unsupported_action",
                claim.word,
                f"{unbound}: no executed call of this run that could have "
                f"{claim.word.lower()} anything was about it "
                f"(executed: {', '.join(dict.fromkeys(c.tool for c in executed))})",
            )
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
    # "no money has moved": a broad verb with no object names no particular call.
    if not claim.objects and claim.verb not in _SPECIFIC:
        return None
    named = _clause_ids(claim)
    if named:
        executed = [c for c in executed if any(_mentions(c, value) for value in named)]
    if executed:
        shown = ", ".join(f"{c.tool} ({c.call_id})" for c in executed)
        return ClaimFinding(
            "executed_action_denied",
            f"not {claim.word}",
            f"{shown} executed: the answer says it was not done",
        )
    return None


def _clause_ids(claim: ActionClaim) -> list[tuple[str, str]]:
    """The identifiers an action claim's clause names as its object: those after its verb,
    else those before it ("ORD-0002 was refunded")."""
    at = claim.clause.find(claim.word)
    found = [
        (kind, value) for kind, value in identifiers_in(claim.clause[at:]) if kind in _BOUND_KINDS
    ]
    if found or at < 0:
        return found
    before = identifiers_in(claim.clause[:at])
    return [(kind, value) for kind, value in before if kind in _BOUND_KINDS]


def _call_ids(call: CallEvidence) -> list[tuple[str, str]]:
    texts = [*_strings(call.arguments), call.output]
    return [found for text in texts for found in identifiers_in(text)]


def _mentions(call: CallEvidence, named: tuple[str, str]) -> bool:
    kind, value = named
    texts = [*_strings(call.arguments), call.output]
    return _appears(kind, value, texts)


def _unbound(claim: ActionClaim, executed: Sequence[CallEvidence]) -> str | None:
    """An identifier the claim's clause names as its object that no executed fitting call was
    about, when those calls name things of that kind ("sent to grace@" after a send to ada@)."""
    for kind, value in _clause_ids(claim):
        kinds = {k for c in executed for k, _ in _call_ids(c)}
        if kind not in kinds and not (kind in ("path", "file") and kinds & {"path", "file"}):
            continue
        if not any(_mentions(c, (kind, value)) for c in executed):
            return value
    return None


def _reported(
    claim: ActionClaim,
    calls: Sequence[CallEvidence],
    fitting: Sequence[CallEvidence],
    by_name: Mapping[str, ToolDescriptor],
) -> bool:
    """The claim's words restate what an executed call returned, not an act of the model's.

    Only a statement about a thing, never "I ..." (the model's own act), and only from what a
    call returned beyond its own arguments: a status value a call returned ("refunded"), a
    result's whole text ("overwritten"), or the word with its neighbours on both sides quoted
    from a result ("1: written by the writer"); free text of a read tool (a page, a search
    hit) is quoted only that way, never as a two-word phrase ("Email sent.") and never about
    an object the tools act on (an email, a ticket, a refund, a file)."""
    if claim.first_person:
        return False
    wanted = claim.word.casefold()
    named = _clause_ids(claim)
    for call in calls:
        if call.outcome != "executed":
            continue
        if named and not any(_mentions(call, value) for value in named):
            continue  # a status of some other object
        own = _own_strings(call)
        output = _scrub(call.output, own)
        if output.strip().casefold() == wanted:
            return True
        parsed, document = json_document(call.output)
        values = (
            {_scrub(v, own).strip().casefold() for v in json_scalars(document)} if parsed else set()
        )
        if wanted in values:
            return True
        descriptor = by_name.get(call.tool)
        reader = descriptor is None or descriptor.action_type == "read" or call not in fitting
        text = _plain(output)
        if reader:
            # Quoted words of a file or page ("1: written by the writer"), never about an
            # object the tools act on ("Email sent to ada" on a page sends nothing).
            if claim.objects:
                continue
            if any(_bounded_in(_plain(w), [text]) for w in claim.windows):
                return True
            continue
        phrases = [_plain(p) for p in claim.phrases if " " in p]
        if any(_bounded_in(phrase, [text]) for phrase in phrases):
            return True
    return False


def _plain(text: str) -> str:
    """Lower-case words and ids separated by single spaces (punctuation between dropped)."""
    return " ".join(re.findall(r"[\w@'-]+(?:[./][\w@'-]+)*", text.casefold()))


def _outcome(call: CallEvidence) -> str:
    why = f", {call.reason}" if call.reason else ""
    return f"{call.tool} ({call.call_id}) was {call.outcome}{why}"
