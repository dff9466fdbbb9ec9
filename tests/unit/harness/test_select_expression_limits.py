"""`-k` of any shape within its limits: long flat chains work, over-long or over-deep ones are
usage errors naming the limit (exit 64), never a RecursionError (exit 70)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness import _exit_codes as codes
from harness._select import Selection, SelectionError, evaluate, parse_expression
from harness.cli._app import cli

REPO = Path(__file__).resolve().parents[3]


def _check(expression: str) -> tuple[int, str]:
    done = CliRunner().invoke(cli, ["check", "-k", expression], catch_exceptions=False)
    return done.exit_code, done.output


@pytest.mark.parametrize("op", ["or", "and"])
def test_a_flat_chain_of_two_thousand_terms_selects_as_one_term_does(op: str) -> None:
    code, output = _check(f" {op} ".join(["kb"] * 2000))
    assert code == codes.OK, output
    assert _check("kb") == (code, output)


def test_a_chain_of_thousands_of_terms_is_evaluated_far_below_the_recursion_limit() -> None:
    words = [f"w{i}" for i in range(9_000)]
    tree = parse_expression(" or ".join([*words, "kb"]))
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(200)  # a left-deep tree of 9,000 terms would need 9,000 frames
    try:
        assert evaluate(tree, "kb-search", ["kb"])
        assert not evaluate(tree, "refund", ["refunds"])
        assert Selection.of(expression=" and ".join(["not zz"] * 5000)).matches("kb", [])
    finally:
        sys.setrecursionlimit(old)


@pytest.mark.parametrize(
    "expression",
    [
        " or ".join(["kb"] * 100_000),
        " and ".join(["not kb"] * 100_000),
        "(" * 100_000 + "kb" + ")" * 100_000,
        "not " * 100_000 + "kb",
        "(not " * 5_000 + "kb" + ")" * 5_000,
    ],
    ids=["or-100k", "and-not-100k", "parens-100k", "not-100k", "paren-not-5k"],
)
def test_an_expression_over_the_limits_is_a_usage_error_naming_the_limit(expression: str) -> None:
    code, output = _check(expression)
    assert code == codes.USAGE, output
    assert "20000" in output or "deeper than 100 levels" in output
    assert "RecursionError" not in output and "Traceback" not in output
    assert len(output) < 2_000  # the expression is not echoed whole


@pytest.mark.parametrize("depth", [101, 150, 1_000])
def test_nesting_just_over_the_depth_limit_is_refused_by_parentheses_and_by_nots(
    depth: int,
) -> None:
    for expression in ("(" * depth + "kb" + ")" * depth, "not " * depth + "kb"):
        with pytest.raises(SelectionError, match="deeper than 100 levels"):
            parse_expression(expression)


def test_nesting_up_to_the_depth_limit_is_accepted_and_evaluated() -> None:
    deep = "(" * 100 + "kb" + ")" * 100
    assert evaluate(parse_expression(deep), "kb-search", [])
    nots = parse_expression("not " * 100 + "kb")
    assert evaluate(nots, "kb-search", [])  # an even number of nots
    assert not evaluate(parse_expression("not " * 99 + "kb"), "kb-search", [])
