"""Tool output read as JSON by the screens and the claims check: once, and never raising."""

from __future__ import annotations

import json

from governance.core import ToolResult
from governance.screening import CallEvidence, check_claims
from governance.screening._injection import output_findings
from governance.screening._json_text import json_document, json_pairs, json_scalars
from governance.tools import builtin_registry

TOO_DEEP = "[" * 100_000 + "]" * 100_000  # json.loads raises RecursionError, not ValueError


def test_a_document_nested_too_deep_to_parse_is_simply_not_json() -> None:
    assert json_document(TOO_DEEP) == (False, None)
    assert json_document("not json {") == (False, None)
    assert json_document("42") == (False, None)  # no text worth decoding in a bare number


def test_a_tool_output_nested_too_deep_crashes_neither_the_claims_check_nor_the_screen() -> None:
    lookup = CallEvidence("c1", "orders.lookup", "executed", TOO_DEEP)
    report = check_claims(
        "Order ORD-0001 is shipped.", "status of ORD-0001", [lookup],
        builtin_registry().descriptors(),
    )  # fmt: skip
    assert [f.kind for f in report.findings] == []  # ORD-0001 is in the request
    result = ToolResult("c1", "orders.lookup", "executed", output=TOO_DEEP)
    assert output_findings(result) == ()


def test_names_and_scalars_come_out_in_document_order_with_escapes_undone() -> None:
    text = json.dumps({"a": "x\ny", "b": [1, None, {"c": True}], "d": "\u0049gnore"})
    parsed, document = json_document(text)
    assert parsed
    assert json_scalars(document) == ["a", "x\ny", "b", "1", "c", "True", "d", "Ignore"]
    assert list(json_pairs(document)) == [
        ("a", "x\ny"), (None, 1), (None, None), ("c", True), ("d", "Ignore"),
    ]  # fmt: skip

