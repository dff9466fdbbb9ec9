"""A policy regex never stalls the gateway: a pattern that backtracks without bound on a
model-chosen argument is stopped at its time limit and the call is blocked (fail closed), while
ordinary patterns keep `re`'s syntax and Unicode classes."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from governance import Gateway, Principal, ToolCall
from governance.policy._model import compile_policy_regex
from governance.policy._rules import RegexCheck

# `(a|aa)+b` against forty `a`s and a `!` takes Python's `re` minutes (Fibonacci many paths).
EVIL = "(a|aa)+b"
EVIL_INPUT = "a" * 40 + "!"

POLICY = f"""version: 1
rules:
  - id: reads
    effect: allow
    match: {{tool: fs.read}}
    when: [{{arg: path, regex: '{EVIL}'}}]
"""


def test_a_backtracking_pattern_is_stopped_and_the_call_blocked(tmp_path: Path) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text(POLICY, encoding="utf-8")
    done: list[object] = []

    def decide() -> None:
        with Gateway(state_dir=tmp_path / "state", policy_path=policy, store="memory:") as gw:
            call = ToolCall("c1", "fs.read", {"path": EVIL_INPUT}, "r1", Principal("a", "b", "c"))
            done.append(gw.firewall.decide(call))

    worker = threading.Thread(target=decide, daemon=True)
    worker.start()
    worker.join(timeout=120)  # a bound on a hang, not a measured duration
    assert not worker.is_alive(), "the policy regex ran without a time limit"
    (decision,) = done
    assert decision.effect == "block"  # type: ignore[attr-defined]
    assert decision.reason == "rule_error"  # type: ignore[attr-defined]


def test_the_check_raises_timeout_rather_than_answering_either_way() -> None:
    check = RegexCheck(compile_policy_regex(EVIL))
    with pytest.raises(TimeoutError):
        check.test(EVIL_INPUT, negate=False)
    with pytest.raises(TimeoutError):
        check.test(EVIL_INPUT, negate=True)


@pytest.mark.parametrize(
    ("pattern", "value", "matches"),
    [
        (r"\d+", "١٢٣", True),  # Unicode digits, as `re` reads \d
        (r"\w+", "héllo", True),
        (r"[a-z]+@example\.com", "bob@example.com", True),
        (r"[a-z]+@example\.com", "bob@example.com.evil", False),  # the whole value must match
        (r"(?i)ORD-\d{4}", "ord-0001", True),
        (r"(?!admin).*", "admin", False),  # lookahead still works
    ],
)
def test_ordinary_patterns_read_as_re_reads_them(pattern: str, value: str, matches: bool) -> None:
    assert RegexCheck(compile_policy_regex(pattern)).test(value, negate=False) is matches
