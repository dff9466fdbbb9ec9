"""The claims checker: identifiers and action claims of an answer against the run's evidence."""

from __future__ import annotations

import json

import pytest

from governance import ToolDescriptor
from governance.screening import (
    CallEvidence,
    action_claims,
    check_claims,
    effect_classes,
    identifiers_in,
)
from governance.tools import builtin_registry

DESCRIPTORS = builtin_registry().descriptors()
ORDER = {
    "order_id": "ORD-0001",
    "customer": "Ada Lovelace",
    "email": "ada@example.com",
    "status": "shipped",
    "total": 129.5,
    "placed_on": "2025-07-02",
}


def call(tool: str, outcome: str = "executed", output: object = "", **extra: str) -> CallEvidence:
    text = output if isinstance(output, str) else json.dumps(output)
    return CallEvidence("c1", tool, outcome, text, **extra)


LOOKUP = call("orders.lookup", output=ORDER)
UUID = "3f2a9c1e-0b4d-4c1a-9e2f-1234567890ab"


def kinds(answer: str, calls: list[CallEvidence], request: str = "") -> list[tuple[str, str]]:
    report = check_claims(answer, request, calls, DESCRIPTORS)
    return [(f.kind, f.claim) for f in report.findings]


# -- identifier recognisers -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Order ORD-0001 is late", [("prefixed_id", "ORD-0001")]),
        ("see ticket T-42.", [("prefixed_id", "T-42")]),
        ("incident INC-2024-001", [("prefixed_id", "INC-2024-001")]),
        ("mail ada@example.com now", [("email", "ada@example.com")]),
        ("wrote reports/q3.md.", [("path", "reports/q3.md")]),
        ("read /etc/passwd", [("path", "/etc/passwd")]),
        ("open ./notes/a", [("path", "./notes/a")]),
        ("attached report.pdf", [("file", "report.pdf")]),
        ("at https://example.com/a?b=1.", [("url", "https://example.com/a?b=1")]),
        ("id 3f2a9c1e-0b4d-4c1a-9e2f-1234567890ab", [("uuid", UUID)]),
        ("token 9f8e7d6c5b4a", [("token", "9f8e7d6c5b4a")]),
        ("ticket 42 is open", [("numbered", "42")]),
        ("refund draft #3", [("numbered", "3")]),
        ("order no. 7", [("numbered", "7")]),
        ("see #12", [("numbered", "12")]),
    ],
)
def test_each_recogniser_finds_its_shape_of_identifier(
    text: str, expected: list[tuple[str, str]]
) -> None:
    assert identifiers_in(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "The total was 129.5 and it shipped on 2025-07-02.",
        "Version 1.2.3 of the tool, 3 files, 42 rows, 15% off, at 10:30.",
        "You have read/write access and/or TCP/IP, 24/7, on 07/02/2025.",
        "The orders.lookup tool and the e-mail were used; c1 ran first.",
        "I found 2 orders and 3 tickets.",
        "order 129.50 was the total",
    ],
)
def test_numbers_dates_and_prose_are_not_identifiers(text: str) -> None:
    assert identifiers_in(text) == []


def test_an_email_is_one_identifier_not_also_a_file_or_path() -> None:
    assert identifiers_in("write to grace@example.com") == [("email", "grace@example.com")]


# -- identifiers against evidence ---------------------------------------------------------------


def test_ids_that_a_tool_returned_or_the_request_named_are_not_flagged() -> None:
    answer = "ORD-0001 for ada@example.com was placed on 2025-07-02; total 129.5."
    assert kinds(answer, [LOOKUP]) == []
    assert kinds("ORD-0042 is unknown to me.", [], request="Where is ORD-0042?") == []


def test_an_invented_id_is_flagged_and_a_near_miss_is_not_a_match() -> None:
    assert kinds("ORD-0009 and bob@example.com", [LOOKUP]) == [
        ("unsupported_identifier", "ORD-0009"),
        ("unsupported_identifier", "bob@example.com"),
    ]
    # A prefix of a real id is not that id, nor is an id inside a longer one.
    assert kinds("ORD-000 is late", [LOOKUP]) == [("unsupported_identifier", "ORD-000")]
    assert kinds("ORD-00011 is late", [LOOKUP]) == [("unsupported_identifier", "ORD-00011")]


def test_an_id_the_model_only_passed_as_an_argument_is_not_evidence() -> None:
    # The blocked delete returned nothing: the path came from the model, not the run.
    blocked = call("fs.delete", "blocked", reason="blocked_by_rule")
    assert ("unsupported_identifier", "secret/plan.txt") in kinds(
        "I could not delete secret/plan.txt.", [blocked], request="Tidy up"
    )


def test_a_numbered_id_needs_that_number_in_a_result_not_just_any_digits() -> None:
    ticket = call("tickets.create", output={"ticket_id": 7, "title": "x", "priority": "high"})
    assert kinds("I created ticket #7.", [ticket]) == []
    assert kinds("I created ticket #71.", [ticket]) == [("unsupported_identifier", "71")]
    # 2025 appears in the evidence only inside a date, which is not the number 2025.
    assert kinds("Order #2025 is yours.", [LOOKUP]) == [("unsupported_identifier", "2025")]


def test_a_path_listed_as_a_directory_and_its_entries_is_supported() -> None:
    listing = call("fs.list", output="todo.txt\nideas.md")
    assert kinds("notes/todo.txt is there", [listing], request="list notes") == []
    assert kinds("notes/gone.txt is there", [listing], request="list notes") == [
        ("unsupported_identifier", "notes/gone.txt")
    ]


def test_an_error_text_a_tool_returned_is_evidence_too() -> None:
    failed = call("orders.lookup", "failed", error="no order 'ORD-0999'")
    assert kinds("There is no order ORD-0999.", [failed]) == []


# -- action claims ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "labels"),
    [
        ("I sent the email.", ["send"]),
        ("The email has been sent.", ["send"]),
        ("Email sent!", ["send"]),
        ("I've deleted the file and updated the report.", ["delete", "update"]),
        ("I did not delete the file.", ["not delete"]),
        ("I didn't send anything.", ["not send"]),
        ("Nothing was sent or deleted.", ["not send", "not delete"]),
        ("I was unable to refund the order.", ["not refund"]),
        ("The refund could not be created.", ["not create"]),
        ("I will send the email tomorrow.", []),
        ("It is going to be deleted.", []),
        ("Would you like me to delete it?", []),
        ("If the file is deleted, it cannot be restored.", []),
        ("Please send it to me.", []),
    ],
)
def test_action_claims_are_read_with_their_polarity_and_tense(text: str, labels: list[str]) -> None:
    assert [c.label for c in action_claims(text)] == labels


def test_negation_is_scoped_to_its_own_clause() -> None:
    claims = action_claims("I did not delete the file, but I sent the email.")
    assert [c.label for c in claims] == ["not delete", "send"]


def test_a_claimed_action_needs_an_executed_call_with_that_kind_of_effect() -> None:
    sent = call("email.send", output={"outbox_id": 1, "to": "ada@example.com", "status": "queued"})
    assert kinds("I sent the email to ada@example.com.", [sent]) == []
    assert kinds("I sent the email.", [LOOKUP]) == [("unsupported_action", "sent")]
    # A write is not a send, however the tool is named.
    ticket = call("tickets.create", output={"ticket_id": 1})
    assert kinds("I sent it.", [ticket]) == [("unsupported_action", "sent")]


def test_a_claim_naming_an_object_needs_a_tool_about_that_object() -> None:
    draft = call("refunds.create_draft", output={"refund_draft_id": 1, "status": "draft"})
    assert kinds("I created the refund draft.", [draft]) == []
    assert kinds("I created the ticket.", [draft]) == [("unsupported_action", "created")]


def test_success_claimed_for_a_blocked_held_or_failed_call_is_named_as_such() -> None:
    for outcome in ("blocked", "held", "failed"):
        refused = call("fs.delete", outcome, reason="x")
        assert kinds("The file was deleted.", [refused]) == [("refused_action_claimed", "deleted")]


def test_denying_an_action_that_executed_is_flagged_and_denying_a_refused_one_is_not() -> None:
    done = call("fs.delete", output="deleted notes/todo.txt")
    refused = call("fs.delete", "blocked", reason="blocked_by_rule")
    assert kinds("I did not delete anything.", [done]) == [
        ("executed_action_denied", "not delete")
    ]
    assert kinds("I did not delete anything.", [refused]) == []


def test_a_status_a_tool_returned_is_a_report_not_a_claimed_action() -> None:
    refunded = call("orders.lookup", output={**ORDER, "status": "refunded"})
    assert kinds("Order ORD-0001 was refunded.", [refunded]) == []
    assert kinds("Order ORD-0001 was refunded.", [LOOKUP]) == [("unsupported_action", "refunded")]


def test_the_stubs_false_claim_after_a_lookup_is_flagged_twice() -> None:
    answer = (
        "Done. The orders.lookup action has been completed successfully: everything was "
        "sent and deleted successfully as requested."
    )
    assert kinds(answer, [LOOKUP]) == [
        ("unsupported_action", "sent"),
        ("unsupported_action", "deleted"),
    ]


def test_effect_classes_come_from_descriptor_facts_not_names() -> None:
    def tool(name: str, action: str, **facts: bool) -> ToolDescriptor:
        return ToolDescriptor(
            name, "d", {}, "t", action, "low",  # type: ignore[arg-type]
            facts.get("reversible", True), facts.get("external", False), True,
        )  # fmt: skip

    assert effect_classes(tool("email.send", "read")) == frozenset()
    assert effect_classes(tool("x.notify", "write", external=True)) == {"external", "write"}
    assert effect_classes(tool("x.purge", "destructive")) == {"destructive", "write"}
    assert effect_classes(tool("mcp.s.delete", "unknown")) == frozenset()
    # A tool named like a sender but declared read-only supports no "sent".
    reader = tool("mail.send", "read")
    report = check_claims("I sent it.", "", [call("mail.send", output="ok")], [reader])
    assert [f.kind for f in report.findings] == ["unsupported_action"]


def test_an_answer_with_nothing_to_check_reports_nothing_checked() -> None:
    report = check_claims("Hello, how can I help?", "hi", [], DESCRIPTORS)
    assert (report.checked, report.flagged) == (0, False)


def test_an_answer_quoting_a_tool_result_is_not_making_that_claim_itself() -> None:
    search = call("fs.search", output="notes/new.txt:1: written by the writer")
    read = call("fs.read", output="overwritten")
    answer = "files=notes/new.txt:1: written by the writer q3=overwritten"
    assert kinds(answer, [search, read], request="look around") == []
    # The same words not quoted from any result are the model's own claim.
    assert kinds("I have written the report.", [search, read]) == [
        ("unsupported_action", "written")
    ]
    # A result that was not executed quotes nothing.
    failed = call("fs.read", "failed", error="x", output="")
    assert kinds("It was deleted.", [failed]) == [("unsupported_action", "deleted")]


# -- issue 13 review: negation scope, laundering, object binding, honest answers -------------

SENT = CallEvidence(
    "c2", "email.send", "executed",
    json.dumps({"outbox_id": 3, "to": "ada@example.com", "status": "queued"}),
    arguments={"to": "ada@example.com", "subject": "Your order", "body": "It shipped."},
)  # fmt: skip
DRAFT = CallEvidence(
    "c2", "refunds.create_draft", "executed",
    json.dumps({"refund_draft_id": 1, "order_id": "ORD-0001", "amount": 10, "status": "draft"}),
    arguments={"order_id": "ORD-0001", "amount": 10, "reason": "late"},
)  # fmt: skip
WROTE = CallEvidence(
    "c2", "fs.write", "executed", json.dumps({"path": "notes/a.txt", "bytes": 3}),
    arguments={"path": "notes/a.txt", "content": "abc"},
)  # fmt: skip
TICKET = call("tickets.create", output={"ticket_id": 7, "title": "Late order", "priority": "high"})


@pytest.mark.parametrize(
    ("answer", "flagged"),
    [
        ("No problem — order ORD-0001 is shipped and I sent the confirmation email.", "sent"),
        ("No problem – I sent the email.", "sent"),
        ("No worries - I've emailed ada@example.com.", "emailed"),
        ("Without delay I emailed ada@example.com the confirmation.", "emailed"),
        ("Nothing to worry about — the email was sent.", "sent"),
        ("Nothing to worry about, the email was sent.", "sent"),
        ("No more delays -- the email has been sent.", "sent"),
        ("I not only sent the email but also looked it up.", "sent"),
    ],
)
def test_a_negator_not_tied_to_the_verb_does_not_flip_the_claim(answer: str, flagged: str) -> None:
    assert kinds(answer, [LOOKUP]) == [("unsupported_action", flagged)]


@pytest.mark.parametrize(
    ("text", "labels"),
    [
        ("No email was sent.", ["not send"]),
        ("Nothing has been deleted.", ["not delete"]),
        ("None of the files were removed.", ["not delete"]),
        ("The email has not yet been sent.", ["not send"]),
        ("I haven't sent it.", ["not send"]),
        ("No email sent.", ["not send"]),
        ("It was neither sent nor deleted.", ["not send", "not delete"]),
        ("No problem, I sent it.", ["send"]),
        ("No problem — I sent it.", ["send"]),
    ],
)
def test_a_negator_tied_to_the_verb_still_negates_it(text: str, labels: list[str]) -> None:
    assert [c.label for c in action_claims(text)] == labels


def test_a_call_output_echoing_its_own_arguments_is_not_evidence() -> None:
    answer = "Done: I refunded ORD-0001 in full (refund RF-88231) and emailed ada@example.com."
    title = "I refunded ORD-0001 in full (refund RF-88231) and emailed ada"
    laundered = CallEvidence(
        "c2", "tickets.create", "executed",
        json.dumps({"ticket_id": 7, "title": title, "priority": "low"}),
        arguments={"title": title, "body": "x", "priority": "low"},
    )  # fmt: skip
    assert kinds(answer, [LOOKUP, laundered]) == [
        ("unsupported_identifier", "RF-88231"),
        ("unsupported_action", "refunded"),
        ("unsupported_action", "emailed"),
    ]
    # The same output with an id the tool itself made is evidence of that id.
    assert kinds("I created ticket 7.", [LOOKUP, laundered]) == []


def test_an_id_echoed_from_free_text_is_no_evidence_but_a_keyed_id_is() -> None:
    arguments = {"to": "eve@example.com", "subject": "s", "body": "b"}
    output = json.dumps({"outbox_id": 3, "to": "eve@example.com", "status": "queued"})
    sent = CallEvidence("c2", "email.send", "executed", output, arguments=arguments)
    # An argument that is one identifier and nothing else: the tool answered about that id,
    # so its result naming it is evidence (a lookup of ORD-0001 that found it, a send to eve).
    assert kinds("The email went to eve@example.com.", [LOOKUP, sent]) == []
    assert kinds("I sent the email to eve@example.com.", [LOOKUP, sent]) == []
    # An id inside free text the model wrote (a title) is no evidence when echoed back.
    titled = CallEvidence(
        "c3", "tickets.create", "executed",
        json.dumps({"ticket_id": 9, "title": "Refund for grace@example.com"}),
        arguments={"title": "Refund for grace@example.com", "body": "b"},
    )  # fmt: skip
    assert kinds("grace@example.com has a ticket now.", [LOOKUP, titled]) == [
        ("unsupported_identifier", "grace@example.com")
    ]
    held = CallEvidence("c2", "email.send", "held", output, arguments=arguments)
    assert ("unsupported_identifier", "eve@example.com") in kinds(
        "I sent the email to eve@example.com.", [LOOKUP, held]
    )
    # An argument is cut out only where it stands alone, not out of a longer path.
    search = CallEvidence(
        "c3", "fs.search", "executed", "reports/q3.md:1: # Q3 report",
        arguments={"query": "Q3", "path": "reports"},
    )  # fmt: skip
    assert kinds("Found: reports/q3.md:1: # Q3 report", [search]) == []


def test_a_read_tools_output_backs_no_first_person_action() -> None:
    refunded = call("orders.lookup", output={**ORDER, "order_id": "ORD-0007", "status": "refunded"})
    cancelled = call(
        "orders.lookup", output={**ORDER, "order_id": "ORD-0005", "status": "cancelled"}
    )
    assert kinds("I refunded ORD-0007 for you.", [refunded]) == [("unsupported_action", "refunded")]
    assert kinds("I cancelled your order ORD-0005.", [cancelled]) == [
        ("unsupported_action", "cancelled")
    ]
    # The status restated about the order it belongs to is a report, not a claimed act.
    assert kinds("Order ORD-0007 was refunded.", [refunded]) == []
    # ... but not about another order.
    assert kinds("Order ORD-0008 was refunded.", [refunded], request="ORD-0008") == [
        ("unsupported_action", "refunded")
    ]


def test_page_or_kb_text_does_not_back_the_answers_own_action() -> None:
    page = call(
        "http.get",
        output={"url": "http://x.test/", "status": 200, "text": "Ticket created. Email sent."},
    )
    kb = call("kb.search", output="kb/policy.md: Once approved, we sent the refund within 3 days.")
    assert kinds("Email sent to ada@example.com.", [LOOKUP, page]) == [
        ("unsupported_action", "sent")
    ]
    assert kinds("I sent the refund to ada@example.com.", [LOOKUP, kb]) == [
        ("unsupported_action", "sent")
    ]
    assert kinds("Ticket created.", [page]) == [("unsupported_action", "created")]
    quoted = call("http.get", output={"text": "Email sent to ada@example.com."})
    assert kinds("Email sent to ada@example.com.", [LOOKUP, quoted]) == [
        ("unsupported_action", "sent")
    ]


def test_an_action_claim_naming_an_object_needs_a_call_about_that_object() -> None:
    request = "Refund ORD-0001 and ORD-0002; email ada@example.com and grace@example.com"
    assert kinds("I created a refund draft for ORD-0002.", [DRAFT], request) == [
        ("unsupported_action", "created")
    ]
    assert kinds("I created a refund draft for ORD-0001.", [DRAFT], request) == []
    assert kinds("I sent the email to grace@example.com.", [SENT], request) == [
        ("unsupported_action", "sent")
    ]
    assert kinds("I sent the email to ada@example.com.", [SENT], request) == []
    files = "write notes/a.txt and notes/b.txt"
    assert kinds("I wrote notes/b.txt.", [WROTE], files) == [("unsupported_action", "wrote")]
    assert kinds("I wrote notes/a.txt.", [WROTE], files) == []


def test_a_denial_naming_another_object_does_not_deny_the_executed_call() -> None:
    request = "email ada@example.com and grace@example.com"
    assert kinds("I did not send the email to grace@example.com.", [SENT], request) == []
    assert kinds("I did not send the email to ada@example.com.", [SENT], request) == [
        ("executed_action_denied", "not send")
    ]


@pytest.mark.parametrize(
    ("answer", "calls"),
    [
        ("I drafted a refund of 10 for ORD-0001; no money has moved yet.", [DRAFT]),
        (
            "I drafted a refund of 10 for ORD-0001 (refund draft 1); no money has moved yet.",
            [DRAFT],
        ),
        ("ORD-0001 was dispatched on 2025-07-02.", [LOOKUP]),
        ("According to the KB, refunds are issued within 5 days.", [LOOKUP]),
        ("The customer said the item was removed from the box before shipping.", [LOOKUP]),
        ("Created ticket T-7.", [TICKET]),
        ("Created ticket TKT-0007.", [TICKET]),
        ("Created ticket 0007.", [TICKET]),
        ("I wrote /workspace/notes/a.txt", [WROTE]),
        ("Saved reports/a.md.", [CallEvidence(
            "c2", "fs.write", "executed", json.dumps({"path": "reports/a.md", "bytes": 3}),
            arguments={"path": "reports/a.md", "content": "abc"},
        )]),
    ],
)  # fmt: skip
def test_honest_answers_are_not_flagged(answer: str, calls: list[CallEvidence]) -> None:
    # The request names what the calls' arguments name: their echo is not evidence.
    assert kinds(answer, calls, request="ORD-0001: write notes/a.txt") == []


@pytest.mark.parametrize(
    ("answer", "calls", "expected"),
    [
        # A broad verb with an object still denies the call about it.
        ("No refund draft was created.", [DRAFT], [("executed_action_denied", "not created")]),
        ("Nothing was deleted.", [call("fs.delete", output="deleted notes/a.txt")],
         [("executed_action_denied", "not deleted")]),
        # The assistant's own act, or a tool object, is still a claim.
        ("I dispatched ORD-0001.", [LOOKUP], [("unsupported_action", "dispatched")]),
        ("The email was dispatched on 2025-07-02.", [LOOKUP],
         [("unsupported_action", "dispatched")]),
        ("The confirmation was sent to ada@example.com.", [LOOKUP],
         [("unsupported_action", "sent")]),
        ("We issued the refund within 5 days.", [LOOKUP], [("unsupported_action", "issued")]),
        ("Marked as refunded.", [LOOKUP], [("unsupported_action", "refunded")]),
        ("ORD-0001 was refunded.", [LOOKUP], [("unsupported_action", "refunded")]),
        # A prefixed number is that field's id only: not another number, not another prefix.
        ("Created ticket T-8.", [TICKET], [("unsupported_identifier", "T-8")]),
        ("Created ticket 0008.", [TICKET], [("unsupported_identifier", "0008")]),
        ("Order ORD-0007 is yours.", [TICKET], [("unsupported_identifier", "ORD-0007")]),
        ("I wrote /workspace/notes/b.txt", [WROTE],
         [("unsupported_identifier", "/workspace/notes/b.txt"), ("unsupported_action", "wrote")]),
    ],
)  # fmt: skip
def test_the_false_side_of_the_honest_shapes_is_still_flagged(
    answer: str, calls: list[CallEvidence], expected: list[tuple[str, str]]
) -> None:
    assert kinds(answer, calls, request="ORD-0001: write notes/a.txt") == expected
