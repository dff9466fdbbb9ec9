"""The `-k` expression: precedence, parentheses, and malformed input refused by column."""

from __future__ import annotations

import pytest

from harness._select import Selection, SelectionError, evaluate, parse_expression


def _picks(expression: str, scenarios: dict[str, list[str]]) -> list[str]:
    tree = parse_expression(expression)
    return [sid for sid, tags in scenarios.items() if evaluate(tree, sid, tags)]


SUITE = {
    "kb-search-refunds": ["kb"],
    "kb-injection-ignored": ["kb", "injection"],
    "refund-small": ["refunds"],
    "email-held": ["approvals", "email"],
}


def test_and_binds_tighter_than_or_and_not_negates() -> None:
    assert _picks("kb and not injection", SUITE) == ["kb-search-refunds"]
    assert _picks("email or kb and injection", SUITE) == ["kb-injection-ignored", "email-held"]
    assert _picks("(email or kb) and not injection", SUITE) == ["kb-search-refunds", "email-held"]


def test_a_word_matches_a_tag_or_part_of_an_id_and_globs_match_whole_names() -> None:
    assert _picks("refund", SUITE) == ["kb-search-refunds", "refund-small"]
    assert _picks("refund-*", SUITE) == ["refund-small"]
    assert _picks("appr*", SUITE) == ["email-held"]


@pytest.mark.parametrize(
    ("expression", "column"),
    [
        ("kb and", 7),
        ("(kb or email", 13),
        ("kb injection", 4),
        ("and kb", 1),
        ("kb )", 4),
        ("", 1),
        ("not", 4),
    ],
)
def test_a_malformed_expression_is_refused_naming_the_column(expression: str, column: int) -> None:
    with pytest.raises(SelectionError, match=f"column {column}:"):
        parse_expression(expression)


def test_deep_nesting_is_refused_rather_than_overflowing_the_stack() -> None:
    with pytest.raises(SelectionError, match="nested deeper"):
        parse_expression("(" * 5000 + "kb" + ")" * 5000)
    with pytest.raises(SelectionError, match="nested deeper"):
        parse_expression("not " * 5000 + "kb")


def test_python_in_an_expression_is_only_a_word_never_evaluated() -> None:
    with pytest.raises(SelectionError, match="column 11: unexpected '\\('"):
        parse_expression("__import__('os').system('false')")
    assert not evaluate(parse_expression("__import__ or 1/0"), "kb-search", ["kb"])


def test_limit_keeps_the_first_n_in_suite_order_and_answers_the_same_when_asked_twice() -> None:
    picker = Selection.of(expression="kb or refund", limit=2).picker()
    chosen = [sid for sid, tags in SUITE.items() if picker.pick(sid, tags)]
    assert chosen == ["kb-search-refunds", "kb-injection-ignored"]
    assert picker.wants("kb-search-refunds", ["kb"])
    assert not picker.wants("refund-small", ["refunds"])
    result = picker.result()
    assert result is not None and (result.ids, result.total) == (tuple(chosen), 4)


def test_each_selector_matching_nothing_is_named_with_the_closest_ids_and_tags() -> None:
    picker = Selection.of(
        ids=["refnd-*"], expression="kb and not injecton", tags=["emial"]
    ).picker()
    for sid, tags in SUITE.items():
        picker.pick(sid, tags)
    with pytest.raises(SelectionError) as caught:
        picker.result()
    text = str(caught.value)
    assert "--id 'refnd-*' matches no scenario (closest ids: refund-small)" in text
    assert "'injecton' is no tag and in no scenario id (closest tags and ids: injection" in text
    assert "--tag 'emial': no scenario has this tag (tags: approvals, email, injection, kb" in text


def test_selectors_that_each_match_but_not_together_are_refused() -> None:
    picker = Selection.of(ids=["email-*"], tags=["kb"]).picker()
    for sid, tags in SUITE.items():
        picker.pick(sid, tags)
    with pytest.raises(SelectionError, match="together they match none"):
        picker.result()


def test_no_selector_is_not_a_partial_run() -> None:
    picker = Selection().picker()
    picker.count(4)
    assert picker.result() is None
