"""Focused runs: which scenarios of a suite `--id`, `-k`, `--tag` and `--limit` select.

Pure and stdlib-only (it loads with `proctor check`). `-k` is a tiny expression language over a
scenario's id and tags, parsed here by recursive descent (never `eval`) into n-ary `and`/`or`
nodes, so only parentheses and `not`s nest (at most _MAX_DEPTH) and a flat chain of any length
up to _MAX_TOKENS is evaluated without deep recursion:

    expr := term ("or" term)*     term := factor ("and" factor)*
    factor := "not" factor | "(" expr ")" | WORD

A WORD matches a scenario that has it as a tag or whose id contains it; with `*`, `?` or `[` it
is a shell-style glob matched against the id and each tag. The selectors combine with AND
(`--id` patterns and `--tag`s each with OR among themselves), then `--limit N` keeps the first N
in the suite's order (files sorted, scenarios in file order).

Every selector must mean something in the suite: an `--id` pattern, a `--tag` or a `-k` word
that matches no scenario at all is a usage error listing the closest ids and tags — a typo in
`-k 'kb and not injecton'` would otherwise quietly select more than meant.
"""

from __future__ import annotations

import difflib
import re
import shlex
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from fnmatch import fnmatchcase

from harness._errors import UsageProblem

_KEYWORDS = frozenset({"and", "or", "not"})
_TOKEN = re.compile(r"\s*(?:(?P<paren>[()])|(?P<word>[^\s()]+))")
_GLOB = re.compile(r"[*?\[]")
_MAX_DEPTH = 100  # nesting of parentheses and `not`s: deeper is refused, never a RecursionError
_MAX_TOKENS = 20_000  # words, operators and parentheses of one -k: more is refused (exit 64)
_CLOSE = 5


class SelectionError(UsageProblem):
    """A selector that cannot be used: a malformed `-k`, or one matching nothing (exit 64)."""


# -- the -k expression ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Word:
    text: str

    def matches(self, scenario_id: str, tags: Sequence[str]) -> bool:
        if _GLOB.search(self.text):
            return fnmatchcase(scenario_id, self.text) or any(
                fnmatchcase(tag, self.text) for tag in tags
            )
        return self.text in tags or self.text.lower() in scenario_id.lower()


@dataclass(frozen=True, slots=True)
class Not:
    operand: Node


@dataclass(frozen=True, slots=True)
class Chain:
    """`a and b and c` (or `or`): one n-ary node, so a long flat chain nests nothing."""

    op: str  # "and" | "or"
    operands: tuple[Node, ...]


Node = Word | Not | Chain


def evaluate(node: Node, scenario_id: str, tags: Sequence[str]) -> bool:
    # Recursion follows parentheses and `not`s only, which the parser caps at _MAX_DEPTH.
    if isinstance(node, Word):
        return node.matches(scenario_id, tags)
    if isinstance(node, Not):
        return not evaluate(node.operand, scenario_id, tags)
    if node.op == "and":
        return all(evaluate(operand, scenario_id, tags) for operand in node.operands)
    return any(evaluate(operand, scenario_id, tags) for operand in node.operands)


def words_of(node: Node) -> list[Word]:
    """Every word of the tree, left to right (iterative: no depth limit applies here)."""
    words: list[Word] = []
    pending: list[Node] = [node]
    while pending:
        current = pending.pop()
        if isinstance(current, Word):
            words.append(current)
        elif isinstance(current, Not):
            pending.append(current.operand)
        else:
            pending.extend(reversed(current.operands))
    return words


def parse_expression(text: str) -> Node:
    """The `-k` expression as a tree; a malformed one raises SelectionError naming the column."""
    tokens: list[tuple[str, int]] = []  # (token, 1-based column)
    position = 0
    while position < len(text):
        found = _TOKEN.match(text, position)
        if found is None:  # only trailing whitespace is left
            break
        if len(tokens) == _MAX_TOKENS:
            raise SelectionError(
                f"-k {_shown(text)}: more than {_MAX_TOKENS} words, operators and "
                "parentheses (the limit); select by --tag, an --id glob or a shorter -k"
            )
        kind = "paren" if found.group("paren") else "word"
        tokens.append((found.group(kind), found.start(kind) + 1))
        position = found.end()
    parser = _Parser(text, tokens)
    node = parser.expression(0)
    if parser.at < len(tokens):
        token, column = tokens[parser.at]
        parser.fail(column, f"unexpected {token!r}; join terms with `and` / `or`")
    return node


class _Parser:
    def __init__(self, text: str, tokens: list[tuple[str, int]]) -> None:
        self.text, self.tokens, self.at = text, tokens, 0

    def fail(self, column: int, problem: str) -> None:
        raise SelectionError(
            f"-k {_shown(self.text)}: column {column}: {problem} "
            "(e.g. -k 'kb and not injection', -k '(refunds or approvals) and not slow')"
        )

    def peek(self) -> str | None:
        return self.tokens[self.at][0] if self.at < len(self.tokens) else None

    def column(self) -> int:
        return self.tokens[self.at][1] if self.at < len(self.tokens) else len(self.text) + 1

    def expression(self, depth: int) -> Node:
        operands = [self.term(depth)]
        while self.peek() == "or":
            self.at += 1
            operands.append(self.term(depth))
        return operands[0] if len(operands) == 1 else Chain("or", tuple(operands))

    def term(self, depth: int) -> Node:
        operands = [self.factor(depth)]
        while self.peek() == "and":
            self.at += 1
            operands.append(self.factor(depth))
        return operands[0] if len(operands) == 1 else Chain("and", tuple(operands))

    def factor(self, depth: int) -> Node:
        if depth > _MAX_DEPTH:
            self.fail(self.column(), f"nested deeper than {_MAX_DEPTH} levels")
        token, column = self.peek(), self.column()
        if token is None:
            what = "an empty expression" if not self.tokens else "the expression ends"
            self.fail(column, f"{what} where an id, a tag or `(` was expected")
        assert token is not None
        self.at += 1
        if token == "not":
            return Not(self.factor(depth + 1))
        if token == "(":
            node = self.expression(depth + 1)
            if self.peek() != ")":
                self.fail(self.column(), f"`(` at column {column} is never closed")
            self.at += 1
            return node
        if token == ")" or token in _KEYWORDS:
            self.fail(column, f"unexpected {token!r} where an id, a tag or `(` was expected")
        return Word(token)


# -- the selection ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Selection:
    """What the command line selects; `everything()` when no selector is given."""

    ids: tuple[str, ...] = ()
    expression: str | None = None
    tags: tuple[str, ...] = ()
    limit: int | None = None
    tree: Node | None = field(default=None, compare=False)

    @classmethod
    def of(
        cls,
        *,
        ids: Iterable[str] = (),
        expression: str | None = None,
        tags: Iterable[str] = (),
        limit: int | None = None,
    ) -> Selection:
        """A selection, its `-k` expression parsed now (a malformed one raises)."""
        tree = parse_expression(expression) if expression is not None else None
        return cls(tuple(ids), expression, tuple(tags), limit, tree)

    @property
    def active(self) -> bool:
        return bool(self.ids or self.expression is not None or self.tags or self.limit)

    def flags(self) -> tuple[str, ...]:
        """The selectors as typed: `--id 'refund-*'`, `-k 'kb and not injection'`, ..."""
        shown = [f"--id {shlex.quote(i)}" for i in self.ids]
        if self.expression is not None:
            shown.append(f"-k {shlex.quote(self.expression)}")
        shown += [f"--tag {shlex.quote(t)}" for t in self.tags]
        if self.limit is not None:
            shown.append(f"--limit {self.limit}")
        return tuple(shown)

    def matches(self, scenario_id: str, tags: Sequence[str]) -> bool:
        """Whether the selectors other than `--limit` keep this scenario."""
        if self.ids and not any(fnmatchcase(scenario_id, p) for p in self.ids):
            return False
        if self.tags and not set(self.tags) & set(tags):
            return False
        return self.tree is None or evaluate(self.tree, scenario_id, tags)

    def picker(self) -> Picker:
        return Picker(self)


EVERYTHING = Selection()


@dataclass(frozen=True, slots=True)
class Selected:
    """A partial run, as reports state it: which selectors, how many of how many scenarios."""

    flags: tuple[str, ...]
    ids: tuple[str, ...]  # the selected scenario ids, in suite order
    total: int  # scenarios in the suite the selectors chose from

    def describe(self) -> str:
        return (
            f"PARTIAL RUN: {len(self.ids)} of {self.total} scenarios selected by "
            f"{' '.join(self.flags)}; the gate compares only these against their baseline entries"
        )


class Picker:
    """One load's use of a selection. `wants` is asked in suite order and answers the same
    for a scenario asked twice (the contract check and the loader both ask); `--limit` counts
    the first N wanted. `observe` sees every scenario of the suite, for the error messages."""

    def __init__(self, selection: Selection) -> None:
        self.selection = selection
        self._picked: dict[str, None] = {}  # ordered
        self._ids: set[str] = set()
        self._tags: set[str] = set()
        self._seen = 0
        self._matched_patterns: set[str] = set()
        self._matched_words: set[str] = set()
        words = words_of(selection.tree) if selection.tree is not None else []
        self._words = list({word.text: word for word in words}.values())  # each text once

    def wants(self, scenario_id: str, tags: Sequence[str]) -> bool:
        if scenario_id in self._picked:
            return True
        if not self.selection.matches(scenario_id, tags):
            return False
        limit = self.selection.limit
        if limit is not None and len(self._picked) >= limit:
            return False
        self._picked[scenario_id] = None
        return True

    @property
    def active(self) -> bool:
        return self.selection.active

    @property
    def seen(self) -> int:
        return self._seen

    def count(self, scenarios: int) -> None:
        """Scenarios seen without a selection (all are kept; their tags are not read)."""
        self._seen += scenarios

    def pick(self, scenario_id: str, tags: Sequence[str]) -> bool:
        """`observe` the scenario, then whether it is `wanted`."""
        self.observe(scenario_id, tags)
        return self.wants(scenario_id, tags)

    def observe(self, scenario_id: str, tags: Sequence[str]) -> None:
        self._seen += 1
        self._ids.add(scenario_id)
        self._tags.update(tags)
        for pattern in self.selection.ids:
            if fnmatchcase(scenario_id, pattern):
                self._matched_patterns.add(pattern)
        for word in self._words:
            if word.matches(scenario_id, tags):
                self._matched_words.add(word.text)

    def result(self) -> Selected | None:
        """The partial run's summary (None without selectors); raises SelectionError when a
        selector matches no scenario of the suite, or all of them together match none."""
        if not self.selection.active:
            return None
        problems = []
        ids, tags = sorted(self._ids), sorted(self._tags)
        for pattern in self.selection.ids:
            if pattern not in self._matched_patterns:
                problems.append(f"--id {pattern!r} matches no scenario{_close(pattern, ids)}")
        for tag in self.selection.tags:
            if tag not in self._tags:
                known = ", ".join(tags) or "none"
                problems.append(f"--tag {tag!r}: no scenario has this tag (tags: {known})")
        for word in self._words:
            if word.text not in self._matched_words:
                close = _close(word.text, [*tags, *ids], noun="tags and ids")
                problems.append(f"-k: {word.text!r} is no tag and in no scenario id{close}")
        if not problems and not self._picked:
            problems.append(
                f"{' '.join(self.selection.flags())}: each selector matches some scenario, "
                "but together they match none"
            )
        if problems:
            raise SelectionError(
                f"the selection matches nothing to run ({self._seen} scenarios in the suite):\n  "
                + "\n  ".join(problems)
            )
        return Selected(self.selection.flags(), tuple(self._picked), self._seen)


def _shown(text: str, limit: int = 80) -> str:
    """`text` quoted, cut short when long (a -k of thousands of words is not echoed whole)."""
    return repr(text) if len(text) <= limit else f"{text[:limit]!r}... ({len(text)} characters)"


def _close(text: str, candidates: Sequence[str], *, noun: str = "ids") -> str:
    plain = _GLOB.sub("", text) or text
    found = difflib.get_close_matches(plain, candidates, n=_CLOSE, cutoff=0.5)
    if not found:
        found = [c for c in candidates if plain.lower() in c.lower()][:_CLOSE]
    if not found:
        return ""
    return f" (closest {noun}: {', '.join(found)})"
