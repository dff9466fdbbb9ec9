"""The policy file's shape: pydantic models (extra="forbid") checked once at load.

Unsafe settings are unrepresentable: `defaults.unknown_tool` cannot be "allow", `no_match` can
only be "block", an empty rule list is an error, and a budget can neither count a read nor
fail open. Run `make schemas` to regenerate the committed JSON Schema
(governance/data/policy.schema.json).
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Annotated, Any, Literal

import regex
from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainValidator,
    StrictBool,
    StrictInt,
    field_validator,
    model_validator,
)

from governance.arguments._paths import canonical_or_none
from governance.arguments._urls import normal_host_pattern
from governance.config._schema_files import render_json, schema_document, write_atomic
from governance.core._contracts import ActionType, Effect, Impact, Risk
from governance.screening._output_secrets import OutputsModel

SCHEMA_PATH = Path(__file__).resolve().parent.parent / "data" / "policy.schema.json"
SCHEMA_COMMAND = "make schemas"
RULE_ID = re.compile(r"[a-z0-9][a-z0-9_.-]*")


def compile_policy_regex(pattern: str, *, ascii_only: bool = False) -> Any:
    """A policy's `regex:` compiled by the `regex` engine in its `re`-compatible mode (V0), so
    matching can be bounded in time (see governance.policy._rules.RegexCheck). `ascii_only`:
    the same pattern read with ASCII semantics (case-insensitivity, \\w, \\d, \\s, \\b over ASCII
    alone), the second reading RegexCheck compares with."""
    return regex.compile(pattern, flags=regex.V0 | (regex.ASCII if ascii_only else 0))
BudgetScope = Literal["agent_run", "actor", "agent", "team", "tool"]
BUDGET_SCOPES: tuple[BudgetScope, ...] = ("agent_run", "actor", "agent", "team", "tool")
CountedImpact = Literal["write", "destructive", "unknown"]
BUDGET_COUNTABLE: tuple[CountedImpact, ...] = ("write", "destructive", "unknown")
MAX_BUDGET_LIMIT = 1_000_000_000
MAX_BUDGET_WINDOW_SECONDS = 100 * 366 * 86_400  # a century: "for ever" without overflow
CHECK_KINDS = (
    "path_prefix", "regex", "enum", "max_length", "min/max", "sql_read_only", "url_host"
)
_CHECK_KIND = {
    "path_prefix": "path_prefix",
    "regex": "regex",
    "enum": "enum",
    "max_length": "max_length",
    "min": "min/max",
    "max": "min/max",
    "sql_read_only": "sql_read_only",
    "url_host": "url_host",
}


class LocatedValueError(ValueError):
    """A validation error that points below the validator's own location (e.g. `rules[3].id`)."""

    def __init__(self, message: str, loc: tuple[str | int, ...]) -> None:
        super().__init__(message)
        self.loc = loc


def _as_list(value: object) -> object:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return value
    raise ValueError("must be a string or a list of strings")


def _number(value: object) -> int | float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError("must be a number")
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError("must be a finite number")
    return value


def _scalar(value: object) -> str | int | float | bool:
    if isinstance(value, str | bool | int):
        return value
    if isinstance(value, float) and math.isfinite(value):
        return value
    raise ValueError("enum values must be strings, numbers or booleans")


_NonEmpty = Annotated[str, Field(min_length=1)]
Names = Annotated[
    list[_NonEmpty],
    BeforeValidator(_as_list, json_schema_input_type=str | list[str]),
    Field(min_length=1),
]
ActionTypes = Annotated[
    list[ActionType],
    BeforeValidator(_as_list, json_schema_input_type=ActionType | list[ActionType]),
    Field(min_length=1),
]
Risks = Annotated[
    list[Risk],
    BeforeValidator(_as_list, json_schema_input_type=Risk | list[Risk]),
    Field(min_length=1),
]
Impacts = Annotated[
    list[Impact],
    BeforeValidator(_as_list, json_schema_input_type=Impact | list[Impact]),
    Field(min_length=1),
]
Number = Annotated[int | float, PlainValidator(_number, json_schema_input_type=float)]
EnumValue = Annotated[
    str | int | float | bool,
    PlainValidator(_scalar, json_schema_input_type=str | int | float | bool),
]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class MatchModel(_Model):
    """Selectors over the call's structured facts; every given one must hold, lists are any-of."""

    tool: Names | None = Field(None, description="Tool names or fnmatch globs ('fs.*').")
    namespace: Names | None = Field(
        None, description="The part of the tool name before its last dot (globs allowed)."
    )
    source: Names | None = Field(None, description="The tool source's name (exact).")
    action_type: ActionTypes | None = None
    risk: Risks | None = None
    impact: Impacts | None = Field(
        None, description="Effective impact: irreversible or external tools are destructive."
    )
    min_tokens_used: StrictInt | None = Field(
        None, ge=0, description="Matches once the run's token usage is at least this."
    )
    tainted: StrictBool | None = Field(
        None, description="Matches runs that did (true) or did not (false) take in untrusted text."
    )


class ConditionModel(_Model):
    """One check on one argument. A missing or wrongly typed argument fails, negated or not."""

    arg: _NonEmpty
    negate: StrictBool = False
    items: Literal["all", "any"] | None = Field(
        None,
        description=(
            "Judge the argument value by value: a list's items (recipients, participants), a "
            "single value as itself, null (an optional argument left out) as no value. `all` "
            "passes when every value passes (none at all does), `any` when at least one does; "
            "`negate` applies to each value."
        ),
    )
    path_prefix: str | None = Field(
        None, description="Passes when the canonicalised relative path lies under this directory."
    )
    regex: str | None = Field(None, description="Python regex; the whole string must match.")
    enum: Annotated[list[EnumValue], Field(min_length=1)] | None = None
    max_length: StrictInt | None = Field(None, ge=0)
    min: Number | None = None
    max: Number | None = None
    sql_read_only: Literal[True] | None = Field(
        None, description="Passes only one SELECT (or WITH ... SELECT) statement."
    )
    url_host: Annotated[list[str], Field(min_length=1)] | None = Field(
        None,
        description=(
            "Passes when the argument is an http(s) URL whose host, read the way http.get "
            "reads it, is one of these: 'docs.example.com', '*.example.com' (names below it) "
            "or an IP address."
        ),
    )

    @field_validator("path_prefix")
    @classmethod
    def _valid_prefix(cls, value: str | None) -> str | None:
        if value is None:
            return None
        normal = canonical_or_none(value)
        if normal is None or normal == ".":
            raise ValueError(
                f"path_prefix {value!r} must name a directory inside the workspace, such as "
                "'reports/': an empty, '.', absolute or '..' prefix would match everything or "
                "nothing"
            )
        return value

    @field_validator("url_host")
    @classmethod
    def _valid_hosts(cls, value: list[str] | None) -> list[str] | None:
        return None if value is None else [normal_host_pattern(p) for p in value]

    @field_validator("regex")
    @classmethod
    def _valid_regex(cls, value: str | None) -> str | None:
        if value is not None:
            try:  # what `re` refuses is refused too (e.g. a group name used twice)
                re.compile(value)
                compile_policy_regex(value)
            except (re.error, regex.error) as exc:
                raise ValueError(f"invalid regular expression {value!r}: {exc}") from None
        return value

    @model_validator(mode="before")
    @classmethod
    def _at_most_one_check(cls, data: Any) -> Any:
        if isinstance(data, dict):
            given = [k for k, v in data.items() if k in _CHECK_KIND and v is not None]
            kinds = list(dict.fromkeys(_CHECK_KIND[key] for key in given))
            if len(kinds) > 1:
                second = next(key for key in given if _CHECK_KIND[key] != kinds[0])
                raise LocatedValueError(
                    f"the condition on {data.get('arg')!r} has {len(kinds)} checks "
                    f"({', '.join(kinds)}): give each condition exactly one check and add "
                    "another condition for the next",
                    (second,),
                )
        return data

    @model_validator(mode="after")
    def _exactly_one_check(self) -> ConditionModel:
        if not any(getattr(self, key) is not None for key in _CHECK_KIND):
            raise ValueError(
                f"the condition on {self.arg!r} has no check: give exactly one of "
                + ", ".join(CHECK_KINDS)
            )
        if self.min is not None and self.max is not None and self.min > self.max:
            raise LocatedValueError(
                f"min {self.min} is greater than max {self.max}: nothing could pass", ("max",)
            )
        return self


def _valid_id(value: str, what: str) -> str:
    if not RULE_ID.fullmatch(value) or len(value) > 100:
        raise ValueError(
            f"{what} id {value!r} must be 1-100 lowercase letters, digits, '_', '.' or '-', "
            "starting with a letter or digit"
        )
    return value


class RuleModel(_Model):
    """One rule: an effect applied when its selectors and argument conditions all hold."""

    id: str = Field(description="Unique, lowercase: [a-z0-9][a-z0-9_.-]*")
    description: str = ""
    effect: Effect
    enabled: StrictBool = True
    match: MatchModel = Field(description="Selectors; `{}` matches every call.")
    when: list[ConditionModel] = Field(
        default_factory=list, description="Argument conditions; all must hold."
    )

    @field_validator("id")
    @classmethod
    def _valid_rule_id(cls, value: str) -> str:
        return _valid_id(value, "rule")


def _counted(value: object) -> object:
    """Refuse "read" with a message that says why, before the Literal's generic one."""
    items = _as_list(value)
    if isinstance(items, list):
        for index, item in enumerate(items):
            if item == "read":
                raise LocatedValueError(
                    "a read never counts against a budget: list only write, destructive or "
                    "unknown (irreversible and external tools count as destructive)",
                    (index,),
                )
    return items


CountedImpacts = Annotated[
    list[CountedImpact],
    BeforeValidator(_counted, json_schema_input_type=CountedImpact | list[CountedImpact]),
    Field(min_length=1),
]


class BudgetModel(_Model):
    """A stateful limit on counted calls per scope key over a sliding window.

    There is no setting for what happens when the budget store fails: the call is blocked.
    """

    id: str = Field(description="Unique among budgets, lowercase: [a-z0-9][a-z0-9_.-]*")
    description: str = ""
    scope: BudgetScope = Field(
        description="What is counted separately: each run, actor, agent, team or tool name."
    )
    limit: StrictInt = Field(
        ge=1, le=MAX_BUDGET_LIMIT, description="Counted calls allowed per key in the window."
    )
    window_seconds: StrictInt = Field(
        gt=0,
        le=MAX_BUDGET_WINDOW_SECONDS,
        description="The sliding window: calls older than this stop counting.",
    )
    counts: CountedImpacts = Field(
        default=["destructive"],
        description="Effective impacts that count (a read never does). Irreversible or "
        "external tools are destructive whatever they were declared.",
    )
    tools: Names | None = Field(
        None, description="Tool names or fnmatch globs the budget covers; default: every tool."
    )

    @field_validator("id")
    @classmethod
    def _valid_budget_id(cls, value: str) -> str:
        return _valid_id(value, "budget")

    @field_validator("counts")
    @classmethod
    def _canonical_counts(cls, value: list[CountedImpact]) -> list[CountedImpact]:
        # One order, no repeats: `[write, destructive]` and `[destructive, write]` are one budget.
        return [impact for impact in BUDGET_COUNTABLE if impact in value]


class DefaultsModel(_Model):
    """What happens when no rule decides. Neither default can ever be "allow"."""

    unknown_tool: Literal["block", "require_approval"] = "block"
    no_match: Literal["block"] = "block"

    @field_validator("unknown_tool", "no_match", mode="before")
    @classmethod
    def _never_allow(cls, value: Any) -> Any:
        if value == "allow":
            raise ValueError(
                "'allow' is not a possible default: Proctor fails closed. Use 'block' (or "
                "'require_approval' for unknown_tool) and write an allow rule for what is safe"
            )
        return value


class PolicyModel(_Model):
    """A whole policy file."""

    model_config = ConfigDict(extra="forbid", frozen=True, title="Proctor policy")

    version: Literal[1]
    defaults: DefaultsModel = Field(default_factory=DefaultsModel)
    rules: list[RuleModel]
    budgets: list[BudgetModel] = Field(
        default_factory=list,
        description="Stateful limits on writes and irreversible actions; a denial blocks.",
    )
    outputs: OutputsModel | None = Field(
        None, description="Secrets in tool outputs and errors; absent: every tool's are masked."
    )

    @field_validator("version", mode="before")
    @classmethod
    def _version_is_the_number_one(cls, value: Any) -> Any:
        if value is True:  # `True == 1` must not pass for `version: 1`
            raise ValueError("version must be the number 1")
        return value

    @field_validator("rules")
    @classmethod
    def _rules_are_usable(cls, rules: list[RuleModel]) -> list[RuleModel]:
        if not rules:
            raise ValueError(
                "the policy has no rules: an empty policy would block everything silently; "
                "add at least one rule (see governance/data/default_policy.yaml)"
            )
        first: dict[str, int] = {}
        for index, rule in enumerate(rules):
            if rule.id in first:
                raise LocatedValueError(
                    f"duplicate rule id {rule.id!r} (first used by rules[{first[rule.id]}]): "
                    "give every rule its own id",
                    (index, "id"),
                )
            first[rule.id] = index
        return rules

    @field_validator("budgets")
    @classmethod
    def _budget_ids_are_unique(cls, budgets: list[BudgetModel]) -> list[BudgetModel]:
        first: dict[str, int] = {}
        for index, budget in enumerate(budgets):
            if budget.id in first:
                raise LocatedValueError(
                    f"duplicate budget id {budget.id!r} (first used by budgets[{first[budget.id]}])"
                    ": give every budget its own id",
                    (index, "id"),
                )
            first[budget.id] = index
        return budgets


def policy_json_schema() -> dict[str, Any]:
    """The JSON Schema editors and users validate policy files with."""
    return schema_document(PolicyModel.model_json_schema(), "Proctor policy")


def render_policy_schema() -> str:
    """The schema exactly as committed: sorted keys, two-space indent, trailing newline."""
    return render_json(policy_json_schema())


def write_policy_schema(path: Path = SCHEMA_PATH) -> Path:
    """Regenerate the committed schema file."""
    return write_atomic(path, render_policy_schema())

