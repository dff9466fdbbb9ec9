"""The compiled rule vocabulary: checks, conditions, selectors, rules, defaults and budgets.

Pure data with the predicates the evaluator calls (`Match.holds`, `Condition.holds`). No I/O,
no clock. Anything a check cannot read fails closed (the condition does not hold for an allow,
holds for a block).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from typing import Any, Literal, Protocol, TypeGuard

from governance.arguments._paths import is_canonical
from governance.arguments._urls import UrlRefused, host_matches, parse_http_url
from governance.core._contracts import (
    ActionType,
    Effect,
    Impact,
    PolicyContext,
    Risk,
    ToolCall,
)
from governance.core._identity import skeleton
from governance.policy._model import (
    BUDGET_COUNTABLE,
    BUDGET_SCOPES,
    MAX_BUDGET_WINDOW_SECONDS,
    BudgetScope,
)

# Outside string literals and comments, none of these may appear in a read-only query.
SQL_WRITE_WORDS = frozenset(
    """insert update delete drop alter create attach detach pragma replace vacuum reindex
    analyze truncate grant revoke merge upsert exec execute call copy into load_extension
    begin commit rollback savepoint release lock""".split()
)
_SQL_PUNCTUATION = frozenset("(),.*=<>!+-/%|&~:?@;")
_SQL_SPACE = frozenset(" \t\r\n\f")


def is_read_only_sql(sql: str) -> bool:
    """True only for one SELECT (or WITH ... SELECT) statement that names no writing keyword.

    Deliberately conservative: anything a dialect might read differently (backslashes in
    literals, `#`, `$`, brackets, unterminated quotes or comments) is refused.
    """
    code = _sql_code(sql)
    if code is None:
        return False
    body = code.strip()
    if body.endswith(";"):
        body = body[:-1].rstrip()
    if not body or ";" in body:
        return False
    for ch in body:
        if not (ch in _SQL_SPACE or ch in _SQL_PUNCTUATION or ch == "_" or ch.isalnum()):
            return False
    first = re.search(r"\w", body)
    if first is None or body[: first.start()].strip("( \t\r\n\f"):
        return False
    words = {w.lower() for w in re.findall(r"\w+", body)}
    words |= {w.lower() for w in re.findall(r"[A-Za-z_]+", body)}
    head = re.match(r"\w+", body[first.start() :])
    if head is None or head.group().lower() not in ("select", "with"):
        return False
    return "select" in words and not (words & SQL_WRITE_WORDS)


def _sql_code(sql: str) -> str | None:
    """`sql` with literals, quoted identifiers and comments blanked out; None if malformed."""
    out: list[str] = []
    i, n = 0, len(sql)
    while i < n:
        ch = sql[i]
        if ch in "'\"`":
            j = i + 1
            while True:
                k = sql.find(ch, j)
                if k == -1:
                    return None
                if k + 1 < n and sql[k + 1] == ch:  # a doubled quote is an escaped quote
                    j = k + 2
                    continue
                break
            if "\\" in sql[i + 1 : k]:
                return None
            out.append(" 0 ")
            i = k + 1
        elif sql.startswith("--", i):
            k = sql.find("\n", i)
            i = n if k == -1 else k + 1
            out.append(" ")
        elif sql.startswith("/*", i):
            k = sql.find("*/", i + 2)
            if k == -1:
                return None
            i = k + 2
            out.append(" ")
        else:
            out.append(ch)
            i += 1
    return "".join(out)


def _is_number(value: object) -> TypeGuard[int | float]:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    return not (isinstance(value, float) and not math.isfinite(value))


class Check(Protocol):
    """One compiled check kind. A value of the wrong shape fails whether negated or not."""

    def test(self, value: object, *, negate: bool) -> bool: ...

    def describe(self) -> str: ...


@dataclass(frozen=True, slots=True)
class PathPrefixCheck:
    prefix: str  # canonical, no trailing slash
    # Derived once here rather than per call: `prefix/` and the case-folded pair.
    _below: str = field(init=False, repr=False, compare=False)
    _folded: str = field(init=False, repr=False, compare=False)
    _folded_below: str = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        folded = self.prefix.casefold()
        object.__setattr__(self, "_below", self.prefix + "/")
        object.__setattr__(self, "_folded", folded)
        object.__setattr__(self, "_folded_below", folded + "/")

    def test(self, value: object, *, negate: bool) -> bool:
        # Only a canonical path is judged: the firewall canonicalises declared path arguments
        # before the decision and hands the tool that same string. Any other spelling (an
        # undeclared argument, `a/../b`, a backslash) fails the check whether negated or not,
        # so the policy never judges a path that something else would read differently.
        if not is_canonical(value):
            return False
        assert isinstance(value, str)
        if negate:
            # Case-folded so `Secrets/x` cannot slip past "not under secrets/" on a
            # case-insensitive filesystem; the positive test stays exact, the stricter way.
            folded = value.casefold()
            return not (folded == self._folded or folded.startswith(self._folded_below))
        return value == self.prefix or value.startswith(self._below)

    def describe(self) -> str:
        return f"under {self.prefix}/"


# A regex condition gets this long per value. Python's `re` backtracks without bound, so a
# pattern like `(a|aa)+b` on a model-chosen argument of 40 characters ran for minutes holding
# the GIL (every thread of a gateway or console stopped). The `regex` engine matches the same
# syntax and Unicode classes, stops at a timeout (TimeoutError: the evaluator blocks the call,
# `evaluator_error`) and releases the GIL while it matches.
REGEX_TIMEOUT_SECONDS = 0.25


@dataclass(frozen=True, slots=True)
class RegexCheck:
    """`pattern` read two ways when either side is not plain ASCII: Unicode semantics (as
    written) and ASCII semantics (`ascii_pattern`). Unicode case-insensitivity equates lookalikes
    with ASCII letters (`İ` with `i`, the Kelvin sign with `k`, `ſ` with `s`) and `\\d` takes
    other scripts' digits: `(?i)...@gmail\\.com` would pass `gmaİl.com`, another domain. Where
    the two readings disagree the value cannot be judged: no allow rule passes it, every block
    or require_approval rule holds on it."""

    pattern: Any  # regex.Pattern[str] (the `regex` package ships no type information)
    ascii_pattern: Any = None  # the same, compiled with regex.ASCII

    def test(self, value: object, *, negate: bool) -> bool:
        if not isinstance(value, str):
            return False
        found = self._matches(self.pattern, value)
        if (
            self.ascii_pattern is not None
            and not (value.isascii() and self.pattern.pattern.isascii())
            and self._matches(self.ascii_pattern, value) != found
        ):
            return False  # the readings disagree: cannot judge, either way
        return found != negate

    @staticmethod
    def _matches(pattern: Any, value: str) -> bool:
        return pattern.fullmatch(value, concurrent=True, timeout=REGEX_TIMEOUT_SECONDS) is not None

    def describe(self) -> str:
        return f"matches /{self.pattern.pattern}/"


def _same_scalar(a: object, b: object) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, str) or isinstance(b, str):
        return isinstance(a, str) and isinstance(b, str) and a == b
    return _is_number(a) and _is_number(b) and a == b


@dataclass(frozen=True, slots=True)
class EnumCheck:
    values: tuple[str | int | float | bool, ...]

    def test(self, value: object, *, negate: bool) -> bool:
        if not (isinstance(value, str | bool) or _is_number(value)):
            return False
        return any(_same_scalar(value, v) for v in self.values) != negate

    def describe(self) -> str:
        return "in [" + ", ".join(repr(v) for v in self.values) + "]"


@dataclass(frozen=True, slots=True)
class MaxLengthCheck:
    limit: int

    def test(self, value: object, *, negate: bool) -> bool:
        if not isinstance(value, str | list | tuple):
            return False
        return (len(value) <= self.limit) != negate

    def describe(self) -> str:
        return f"length <= {self.limit}"


@dataclass(frozen=True, slots=True)
class BoundsCheck:
    minimum: int | float | None
    maximum: int | float | None

    def test(self, value: object, *, negate: bool) -> bool:
        if not _is_number(value):
            return False
        inside = (self.minimum is None or value >= self.minimum) and (
            self.maximum is None or value <= self.maximum
        )
        return inside != negate

    def describe(self) -> str:
        low = "-inf" if self.minimum is None else str(self.minimum)
        high = "inf" if self.maximum is None else str(self.maximum)
        return f"in [{low}, {high}]"


@dataclass(frozen=True, slots=True)
class SqlReadOnlyCheck:
    def test(self, value: object, *, negate: bool) -> bool:
        if not isinstance(value, str):
            return False
        return is_read_only_sql(value) != negate

    def describe(self) -> str:
        return "read-only SQL"


@dataclass(frozen=True, slots=True)
class UrlHostCheck:
    patterns: tuple[str, ...]  # as normal_host_pattern gives them

    def test(self, value: object, *, negate: bool) -> bool:
        # The URL is read by the very parser http.get uses, so the host judged here is the
        # host fetched; a URL it refuses cannot be judged and fails negated or not.
        try:
            url = parse_http_url(value)
        except UrlRefused:
            return False
        return host_matches(url.host, self.patterns) != negate

    def describe(self) -> str:
        return "URL host in [" + ", ".join(self.patterns) + "]"


@dataclass(frozen=True, slots=True)
class Condition:
    """A compiled `when` entry. Missing or unjudgeable values always fail closed.

    For an `allow` rule that means the condition fails (the allow does not apply). For a
    restrictive rule (`block`, `require_approval`) a value that is present but cannot be judged
    — neither the check nor its negation holds: an absolute or escaping path, a case-variant
    of a prefix, a wrong type — makes the condition HOLD, so `/srv/secrets/k` or `Secrets/k`
    cannot slip past "block under secrets/". An absent argument is not applicable.
    """

    arg: str
    check: Check
    negate: bool = False
    restrictive: bool = False
    # Judged value by value (a list's items): "all" or "any" of them must pass; None: the
    # argument is judged as one value.
    items: Literal["all", "any"] | None = None

    def holds(self, arguments: Mapping[str, Any]) -> bool:
        if self.arg not in arguments:
            return False
        value = arguments[self.arg]
        if self.items is None:
            return self._value_holds(value)
        # The values given: a list's items, a single value as itself, null (an optional
        # argument left out: the firewall fills schema defaults in) as none at all.
        if value is None:
            value = []
        elif not isinstance(value, list | tuple):
            value = [value]
        judged = (self._value_holds(item) for item in value)
        return all(judged) if self.items == "all" else any(judged)

    def _value_holds(self, value: object) -> bool:
        if self.check.test(value, negate=self.negate):
            return True
        return self.restrictive and not self.check.test(value, negate=not self.negate)

    def describe(self) -> str:
        if self.items is not None:
            check = self.check.describe()
            return f"{self.items} items of {self.arg}: " + (
                f"NOT({check})" if self.negate else check
            )
        text = f"{self.arg} {self.check.describe()}"
        return f"NOT({text})" if self.negate else text


@dataclass(frozen=True, slots=True)
class Match:
    """Compiled selectors; None means "not constrained"."""

    tool: tuple[str, ...] | None = None
    namespace: tuple[str, ...] | None = None
    source: tuple[str, ...] | None = None
    action_type: tuple[ActionType, ...] | None = None
    risk: tuple[Risk, ...] | None = None
    impact: tuple[Impact, ...] | None = None
    min_tokens_used: int | None = None
    tainted: bool | None = None

    def holds(self, context: PolicyContext) -> bool:
        tool = context.tool
        if self.tool is not None and not any(fnmatchcase(tool, p) for p in self.tool):
            return False
        if self.namespace is not None:
            namespace = tool.rsplit(".", 1)[0] if "." in tool else ""
            if not any(fnmatchcase(namespace, p) for p in self.namespace):
                return False
        if self.source is not None and context.source not in self.source:
            return False
        if self.action_type is not None and context.action_type not in self.action_type:
            return False
        if self.risk is not None and context.risk not in self.risk:
            return False
        if self.impact is not None and context.impact not in self.impact:
            return False
        if self.min_tokens_used is not None and not context.tokens_used >= self.min_tokens_used:
            return False
        return self.tainted is None or bool(context.tainted) is self.tainted

    def describe(self) -> str:
        parts = []
        for name in ("tool", "namespace", "source", "action_type", "risk", "impact"):
            values = getattr(self, name)
            if values is not None:
                parts.append(f"{name}={'|'.join(values)}")
        if self.min_tokens_used is not None:
            parts.append(f"tokens>={self.min_tokens_used}")
        if self.tainted is not None:
            parts.append(f"tainted={str(self.tainted).lower()}")
        return " ".join(parts) or "(every call)"


@dataclass(frozen=True, slots=True)
class Rule:
    id: str
    description: str
    effect: Effect
    enabled: bool
    match: Match
    when: tuple[Condition, ...] = ()

    @property
    def uses_token_budget(self) -> bool:
        return self.match.min_tokens_used is not None

    def first_failing(self, arguments: Mapping[str, Any]) -> Condition | None:
        for condition in self.when:
            if not condition.holds(arguments):
                return condition
        return None


@dataclass(frozen=True, slots=True)
class Defaults:
    unknown_tool: Literal["block", "require_approval"] = "block"
    no_match: Literal["block"] = "block"


@dataclass(frozen=True, slots=True)
class Budget:
    """A compiled budget: at most `limit` counted calls per scope key in a sliding window.

    Pure data; the counting lives in `governance.stores._budgets.BudgetStore`. Empty `tools` means
    every tool. A read never counts: `counts` cannot name it.
    """

    id: str
    description: str
    scope: BudgetScope
    limit: int
    window_seconds: int
    counts: tuple[Impact, ...] = ("destructive",)
    tools: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.scope not in BUDGET_SCOPES:
            raise ValueError(f"budget {self.id!r}: unknown scope {self.scope!r}")
        if isinstance(self.limit, bool) or not isinstance(self.limit, int) or self.limit < 1:
            raise ValueError(f"budget {self.id!r}: limit must be an integer >= 1")
        window = self.window_seconds
        if isinstance(window, bool) or not isinstance(window, int):
            raise ValueError(f"budget {self.id!r}: window_seconds must be an integer")
        if not 0 < window <= MAX_BUDGET_WINDOW_SECONDS:
            raise ValueError(
                f"budget {self.id!r}: window_seconds must be in 1..{MAX_BUDGET_WINDOW_SECONDS}"
            )
        if not self.counts or any(impact not in BUDGET_COUNTABLE for impact in self.counts):
            raise ValueError(
                f"budget {self.id!r}: counts must be a non-empty subset of "
                f"{list(BUDGET_COUNTABLE)} (a read never counts)"
            )

    def applies_to(self, tool: str, impact: Impact) -> bool:
        """Whether a call of `tool` with this effective impact is charged to this budget."""
        if impact not in self.counts:
            return False
        return not self.tools or any(fnmatchcase(tool, glob) for glob in self.tools)

    def key_for(self, call: ToolCall) -> str:
        """The scope value the call is counted under: run id, actor, agent, team or tool."""
        if self.scope == "agent_run":
            return call.run_id
        if self.scope == "actor":
            return self.scope_key(call.principal.actor)
        if self.scope == "agent":
            return self.scope_key(call.principal.agent)
        if self.scope == "team":
            return self.scope_key(call.principal.team)
        return call.tool

    def scope_key(self, value: str) -> str:
        """The key `value` is counted under. People (actor, agent, team) are keyed by their
        identity skeleton, so `Alice`, `ａlice` or `alice\u200b` cannot open a fresh budget."""
        if self.scope in ("actor", "agent", "team"):
            return skeleton(value)
        return value
