"""The `budgets:` section of a policy file: parsing, errors with file and line, digest, schema."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import jsonschema
import pytest
import yaml

from governance import PolicyError
from governance.policy._load import load_policy, parse_policy, policy_json_schema
from governance.stores._budgets import Budget

RULES = """\
version: 1
rules:
  - id: everything
    effect: allow
    match: {}
"""

BUDGETS = (
    RULES
    + """\
budgets:
  - id: destructive-per-run
    description: At most three irreversible actions per run
    scope: agent_run
    limit: 3
    window_seconds: 3600
  - id: email-per-actor
    scope: actor
    limit: 20
    window_seconds: 86400
    counts: [write, destructive]
    tools: ["email.*", sms.send]
"""
)  # budgets[0] starts on line 7, budgets[1] on line 12


def _error(text: str) -> PolicyError:
    with pytest.raises(PolicyError) as info:
        parse_policy(text, "policy.yaml")
    return info.value


def test_budgets_compile_with_their_defaults() -> None:
    policy = parse_policy(BUDGETS, "policy.yaml")
    assert policy.budgets == (
        Budget(
            id="destructive-per-run",
            description="At most three irreversible actions per run",
            scope="agent_run",
            limit=3,
            window_seconds=3600,
            counts=("destructive",),
            tools=(),
        ),
        Budget(
            id="email-per-actor",
            description="",
            scope="actor",
            limit=20,
            window_seconds=86400,
            counts=("write", "destructive"),
            tools=("email.*", "sms.send"),
        ),
    )


def test_a_policy_without_budgets_has_none() -> None:
    assert parse_policy(RULES).budgets == ()
    assert parse_policy(RULES + "budgets: []\n").budgets == ()


def test_counts_may_be_one_word_and_are_kept_in_one_order_without_repeats() -> None:
    text = BUDGETS.replace("counts: [write, destructive]", "counts: [unknown, write, write]")
    assert parse_policy(text).budgets[1].counts == ("write", "unknown")
    text = BUDGETS.replace("counts: [write, destructive]", "counts: unknown")
    assert parse_policy(text).budgets[1].counts == ("unknown",)


@pytest.mark.parametrize(
    ("old", "new", "line", "message"),
    [
        ("scope: actor", "scope: everyone", 13, "budgets[1].scope: Input should be 'agent_run'"),
        ("limit: 3", "limit: 0", 10,
         "budgets[0].limit: Input should be greater than or equal to 1"),
        ("limit: 3", "limit: '3'", 10, "budgets[0].limit: Input should be a valid integer"),
        ("limit: 3", "limit: true", 10, "budgets[0].limit: Input should be a valid integer"),
        ("limit: 3", "limit: 2.5", 10, "budgets[0].limit: Input should be a valid integer"),
        ("window_seconds: 3600", "window_seconds: 0", 11,
         "budgets[0].window_seconds: Input should be greater than 0"),
        ("window_seconds: 3600", "window_seconds: 99999999999", 11,
         "budgets[0].window_seconds: Input should be less than or equal to"),
        ("counts: [write, destructive]", "counts: [write, read]", 16,
         "budgets[1].counts[1]: a read never counts against a budget"),
        ("counts: [write, destructive]", "counts: []", 16,
         "budgets[1].counts: Value should have at least 1 item"),
        ("counts: [write, destructive]", "counts: [external]", 16,
         "budgets[1].counts[0]: Input should be 'write', 'destructive' or 'unknown'"),
        ("tools: [\"email.*\", sms.send]", "tools: []", 17,
         "budgets[1].tools: Value should have at least 1 item"),
        ("id: email-per-actor", "id: destructive-per-run", 12,
         "budgets[1].id: duplicate budget id 'destructive-per-run' (first used by budgets[0])"),
        ("id: email-per-actor", "id: Email", 12, "budgets[1].id: budget id 'Email' must be"),
        ("    scope: agent_run\n", "", 7, "budgets[0].scope: missing required key 'scope'"),
        ("    window_seconds: 3600\n", "", 7,
         "budgets[0].window_seconds: missing required key 'window_seconds'"),
        ("    limit: 20\n", "    limit: 20\n    on_error: allow\n", 15,
         "budgets[1].on_error: unknown key 'on_error'"),
    ],
)  # fmt: skip
def test_a_bad_budget_is_a_policy_error_naming_file_line_and_field(
    old: str, new: str, line: int, message: str
) -> None:
    assert old in BUDGETS
    error = _error(BUDGETS.replace(old, new, 1))
    assert (error.path, error.line) == ("policy.yaml", line), str(error)
    assert str(error).startswith(f"policy.yaml:{line}: {message}"), str(error)


def test_budgets_must_be_a_list_of_mappings() -> None:
    error = _error(RULES + "budgets: {id: x}\n")
    assert error.line == 6 and "budgets: Input should be a valid list" in str(error)


def test_the_digest_changes_when_a_budget_changes_but_not_when_budgets_move() -> None:
    base = parse_policy(BUDGETS).digest
    assert parse_policy(BUDGETS.replace("limit: 3", "limit: 4")).digest != base
    assert parse_policy(BUDGETS.replace("window_seconds: 3600", "window_seconds: 6")).digest != base
    assert parse_policy(BUDGETS.replace("scope: actor", "scope: team")).digest != base
    assert parse_policy(BUDGETS.replace("[write, destructive]", "[destructive]")).digest != base
    assert parse_policy(BUDGETS.replace('"email.*", ', "")).digest != base
    assert parse_policy(BUDGETS.replace("three", "3")).digest != base
    assert parse_policy(RULES).digest != base
    first, second = BUDGETS.split("budgets:\n")[1].split("  - id: email-per-actor\n")
    swapped = RULES + "budgets:\n  - id: email-per-actor\n" + second + first
    assert parse_policy(swapped).budgets[0].id == "email-per-actor"
    assert parse_policy(swapped).digest == base
    same_counts = BUDGETS.replace("[write, destructive]", "[destructive, write, write]")
    assert parse_policy(same_counts).digest == base
    explicit_default = BUDGETS.replace("    window_seconds: 3600\n", "    window_seconds: 3600\n"
                                       "    counts: destructive\n")  # fmt: skip
    assert parse_policy(explicit_default).digest == base


def test_an_empty_budget_list_keeps_the_digest_of_a_policy_without_budgets() -> None:
    assert parse_policy(RULES + "budgets: []\n").digest == parse_policy(RULES).digest


def test_the_schema_accepts_budgets_and_refuses_read_and_fail_open_settings() -> None:
    validator = jsonschema.Draft202012Validator(policy_json_schema())
    document = yaml.safe_load(BUDGETS)
    assert list(validator.iter_errors(document)) == []
    document["budgets"][1]["counts"] = ["read"]
    assert list(validator.iter_errors(document))
    document["budgets"][1]["counts"] = ["destructive"]
    document["budgets"][1]["on_error"] = "allow"
    assert list(validator.iter_errors(document))
    del document["budgets"][1]["on_error"]
    document["budgets"][0]["limit"] = 0
    assert list(validator.iter_errors(document))


def test_the_shipped_policy_limits_destructive_calls_per_run_and_per_actor() -> None:
    path = Path(str(resources.files("governance") / "data" / "default_policy.yaml"))
    budgets = {b.id: b for b in load_policy(path).budgets}
    per_run, per_actor = budgets["destructive-per-run"], budgets["destructive-per-actor"]
    assert (per_run.scope, per_run.limit, per_run.counts, per_run.tools) == (
        "agent_run", 3, ("destructive",), ()
    )  # fmt: skip
    assert (per_actor.scope, per_actor.limit, per_actor.window_seconds, per_actor.counts) == (
        "actor", 20, 3600, ("destructive",)
    )  # fmt: skip
    assert len(budgets) == 2


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"scope": "world"}, "unknown scope"),
        ({"limit": 0}, "limit"),
        ({"limit": True}, "limit"),
        ({"window_seconds": 0}, "window_seconds"),
        ({"window_seconds": 1.5}, "window_seconds"),
        ({"counts": ()}, "counts"),
        ({"counts": ("destructive", "read")}, "read never counts"),
    ],
)
def test_a_budget_built_in_code_is_checked_like_one_from_a_file(
    kwargs: dict[str, object], message: str
) -> None:
    fields: dict[str, object] = {
        "id": "b", "description": "", "scope": "actor", "limit": 1, "window_seconds": 60,
    }  # fmt: skip
    with pytest.raises(ValueError, match=message):
        Budget(**{**fields, **kwargs})  # type: ignore[arg-type]
