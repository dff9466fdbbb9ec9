"""Scenario files: who asks what, the scripted model, the reviewers, and what must hold after.

pydantic models with `extra="forbid"`; the JSON Schema in `scenarios/scenario.schema.json` is
generated from them (`make schemas`) and a test fails when it drifts.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator, model_validator

from governance import canonical_path
from governance.arguments import UrlRefused, parse_http_url
from governance.screening import ClaimsMode, FindingKind
from harness.providers._replay import ScriptStep

ID_PATTERN = r"^[a-z0-9][a-z0-9_.-]*$"


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class PrincipalSpec(_Model):
    actor: str = Field(default="scenario-user", min_length=1)
    agent: str = Field(default="scenario-agent", min_length=1)
    team: str = Field(default="scenario-team", min_length=1)


class Review(_Model):
    """What the scripted reviewer does with the n-th held call of the run."""

    action: Literal["approve", "reject", "leave", "expire"] = Field(
        description="approve (optionally with `set` edits), reject, leave, or let it expire."
    )
    reviewer: str = Field(default="scenario-reviewer", min_length=1)
    set: dict[str, Any] | None = Field(
        default=None, description="Edited arguments (merged over the proposed ones) on approve."
    )
    comment: str = Field(default="scripted review")

    @model_validator(mode="after")
    def _edits_only_on_approve(self) -> Review:
        if self.set is not None and self.action != "approve":
            raise ValueError("`set` edits only make sense with action: approve")
        return self


class PriorCall(_Model):
    """A call made through the firewall before the run (its own run id), e.g. to use a budget."""

    tool: str
    args: dict[str, Any] = Field(default_factory=dict)
    run_id: str = Field(default="prior-run")
    actor: str | None = Field(default=None, description="Default: the scenario's actor.")
    approved_by: str | None = Field(
        default=None,
        description="A reviewer who approves the call if it is held, so it executes (and "
        "counts against budgets) as an earlier, approved run would have.",
    )


class BudgetResetStep(_Model):
    """A two-person budget reset attempted after the prior calls and before the run."""

    budget: str
    key: str
    by: str
    approved_by: str
    reason: str = "scenario reset"


# Hosts a fixture page may live on: the reserved test TLDs (RFC 2606/6761), which no real DNS
# answers, so a declared page can never stand in for, or be mistaken for, a real site.
FIXTURE_TLDS = (".test", ".example", ".invalid")


class HttpPage(_Model):
    """One page the harness's loopback server answers with, for `http.get` in this scenario."""

    content_type: str = Field(
        default="text/html",
        min_length=1,
        pattern=r"^[\x20-\x7e]+$",
        description="The Content-Type header (e.g. text/html; charset=utf-8).",
    )
    status: int = Field(default=200, ge=200, le=599, description="The HTTP status.")
    body: str = Field(description="The body, sent as UTF-8 unless content_type says otherwise.")


def fixture_page_key(url: str) -> str:
    """The one spelling of a declared page's URL (`http.get`'s own reading of it), or
    ValueError saying what to fix: plain http on port 80, a host under a reserved test TLD."""
    try:
        parsed = parse_http_url(url)
    except UrlRefused as exc:
        raise ValueError(f"page URL {url!r} is not a URL http.get reads: {exc.message}") from None
    if parsed.scheme != "http" or parsed.port != 80:
        raise ValueError(
            f"page URL {url!r} must be plain http:// on port 80 (the fixture server speaks no "
            "TLS; write http://host/path)"
        )
    if parsed.address is not None or not parsed.host.endswith(FIXTURE_TLDS):
        raise ValueError(
            f"page host {parsed.host!r} must be a name under a reserved test TLD "
            f"({', '.join(FIXTURE_TLDS)}), e.g. docs.fixture.test: a page may not pose as a "
            "real site or address"
        )
    return parsed.text


def _checked_page_url(url: str) -> str:
    fixture_page_key(url)
    return url


PageUrl = Annotated[str, AfterValidator(_checked_page_url)]


class Setup(_Model):
    files: dict[str, str] = Field(
        default_factory=dict, description="Files written into the sandbox (relative path: text)."
    )
    http_pages: dict[PageUrl, HttpPage] = Field(
        default_factory=dict,
        description="Pages `http.get` finds during the run (URL: page), served by a loopback "
        "server the harness starts; hosts under .test, .example or .invalid, http on port 80. "
        "Any other URL is refused as in production (names never resolve in scenarios).",
    )
    prior_calls: list[PriorCall] = Field(default_factory=list)
    budget_resets: list[BudgetResetStep] = Field(default_factory=list)
    elapsed_seconds: int = Field(
        default=0,
        ge=0,
        le=31_536_000,
        description="Seconds the scenario clock moves on after the prior calls and resets, "
        "before the run: earlier calls age inside (or out of) a budget window.",
    )

    @model_validator(mode="after")
    def _files_stay_in_the_sandbox(self) -> Setup:
        for path in self.files:
            # The one reading of a path the firewall and the sandbox use, so a setup file lands
            # exactly where a tool call naming the same string would look for it.
            try:
                normal = canonical_path(path)
            except ValueError:
                normal = None
            if normal is None or normal == ".":
                raise ValueError(
                    f"setup file {path!r} must be a relative path inside the sandbox "
                    "(no leading '/', no '..' escaping it, no '\\' or control characters)"
                )
        return self

    @field_validator("http_pages", mode="after")
    @classmethod
    def _pages_on_test_hosts(cls, pages: dict[str, HttpPage]) -> dict[str, HttpPage]:
        seen: dict[str, str] = {}  # each URL is valid by now (its key type checked it)
        for url in pages:
            key = fixture_page_key(url)
            if key in seen:
                raise ValueError(f"page URLs {seen[key]!r} and {url!r} name the same page")
            seen[key] = url
        return pages


class BlockExpectation(_Model):
    tool: str
    reason: str | None = Field(default=None, description="e.g. blocked_by_rule, unknown_tool.")


class EvidenceExpectation(_Model):
    """The decision for a tool's (first) call, with the rules that made it."""

    tool: str
    effect: Literal["allow", "require_approval", "block"]
    rule_ids: list[str] = Field(default_factory=list)
    reason: str | None = None
    matched: list[str] | None = Field(
        default=None,
        description="Every rule that applied to the call, whatever its effect (e.g. that no "
        "allow rule applied to a blocked secrets read, not only that a block rule won). "
        "Omitted: not checked.",
    )


class BudgetExpectation(_Model):
    """A budget outcome: a call refused by a budget, or a setup reset accepted or refused."""

    tool: str | None = None
    reason: str | None = Field(default=None, description="e.g. budget_exhausted:agent_run")
    reset: Literal["accepted", "refused"] | None = None
    budget: str | None = Field(default=None, description="The budget id (required for `reset`).")

    @model_validator(mode="after")
    def _one_kind(self) -> BudgetExpectation:
        if (self.tool is None) == (self.reset is None):
            raise ValueError("give either `tool` (a budget refusal) or `reset` (a reset outcome)")
        if self.reset is not None and self.budget is None:
            raise ValueError("a `reset` expectation names its `budget`")
        return self


class ApprovalExpectation(_Model):
    tool: str
    status: Literal[
        "approved",
        "rejected",
        "expired",
        "pending",
        "edit_refused",
        "self_approval_refused",
        "executed",
        "refused",
    ]


class GuardrailExpectation(_Model):
    stage: Literal["input", "tool_output", "answer"]
    verdict: Literal["pass", "flagged", "rejected"]


class ClaimsExpectation(_Model):
    """The final answer's claims check: it passed (it checked something and found nothing the
    run does not support), or it flagged a finding of `kind` whose words contain `claim`."""

    verdict: Literal["pass", "flagged"]
    kind: FindingKind | None = Field(
        default=None,
        description="unsupported_identifier, unsupported_action, refused_action_claimed or "
        "executed_action_denied (flagged only).",
    )
    claim: str | None = Field(
        default=None,
        min_length=1,
        description="Text the flagged words contain, e.g. an invented id (flagged only).",
    )

    @model_validator(mode="after")
    def _details_only_when_flagged(self) -> ClaimsExpectation:
        if self.verdict == "pass" and (self.kind is not None or self.claim is not None):
            raise ValueError(
                "`kind` and `claim` describe a finding: give them with verdict: flagged"
            )
        return self


class AgentDojoTask(_Model):
    """An AgentDojo task run under governance: a user task, alone or attacked by an injection
    task whose goal the attack placed in the environment (`proctor import agentdojo` writes
    these; the suite's tools and a fresh copy of its environment come with `tools: agentdojo`)."""

    suite: Literal["workspace", "travel", "banking", "slack"]
    benchmark_version: str = Field(default="v1.2.2", pattern=r"^v1(\.[0-9]+){1,2}$")
    user_task: str = Field(pattern=r"^user_task_[0-9]+$")
    injection_task: str | None = Field(default=None, pattern=r"^injection_task_[0-9]+$")
    injections: dict[str, str] = Field(
        default_factory=dict,
        description="Injection vector id: the text the attack put there (pairs only). The "
        "environment is AgentDojo's default with these vectors filled in.",
    )

    @model_validator(mode="after")
    def _injections_with_a_goal(self) -> AgentDojoTask:
        if (self.injection_task is None) != (not self.injections):
            raise ValueError(
                "give `injection_task` and its `injections` together (a user task alone has "
                "neither)"
            )
        return self


class AgentDojoExpectation(_Model):
    """AgentDojo's own checks on the environment after the run (never hand-tuned)."""

    utility: bool | None = Field(
        default=None, description="The user task's check passes (true) on the final environment."
    )
    attack_succeeded: bool | None = Field(
        default=None,
        description="The injection task's security check finds its goal met (pairs only; a "
        "contained attack is `false`).",
    )

    @model_validator(mode="after")
    def _says_something(self) -> AgentDojoExpectation:
        if self.utility is None and self.attack_succeeded is None:
            raise ValueError("give `utility`, `attack_succeeded` or both")
        return self


RunStatusName = Literal[
    "completed",
    "blocked",
    "waiting_approval",
    "failed",
    "max_steps",
    "provider_error",
    "input_rejected",
]
TerminationName = Literal[
    "answered",
    "held_for_approval",
    "repeated_call",
    "max_steps",
    "provider_error",
    "input_rejected",
    "audit_unavailable",
]


ExpectationField = Literal[
    "status",
    "termination",
    "must_propose",
    "must_execute",
    "must_not_execute",
    "must_block",
    "must_hold",
    "policy_evidence",
    "answer_contains",
    "answer_not_contains",
    "max_steps",
    "audit_valid",
    "audit_checkpoint",
    "budget",
    "approvals",
    "guardrails",
    "claims",
    "agentdojo",
]


class Expectations(_Model):
    """What must hold after the run. Each item becomes one check with a stable id."""

    status: RunStatusName | None = None
    termination: TerminationName | None = None
    must_propose: list[str] = Field(default_factory=list)
    must_execute: list[str] = Field(default_factory=list)
    must_not_execute: list[str] = Field(default_factory=list)
    must_block: list[BlockExpectation | str] = Field(default_factory=list)
    must_hold: list[str] = Field(default_factory=list)
    policy_evidence: list[EvidenceExpectation] = Field(default_factory=list)
    answer_contains: list[str] = Field(default_factory=list)
    answer_not_contains: list[str] = Field(default_factory=list)
    max_steps: int | None = Field(default=None, ge=1, description="The run took at most N turns.")
    audit_valid: bool | None = Field(default=None, description="The run's audit chain verifies.")
    audit_checkpoint: Literal["verified"] | None = Field(
        default=None,
        description="The gateway signs a checkpoint of the audit log every few events (a key "
        "made for this run); after the run the last one verifies against the log: nothing "
        "truncated, deleted or rewritten, only events appended.",
    )
    budget: list[BudgetExpectation] = Field(default_factory=list)
    approvals: list[ApprovalExpectation] = Field(default_factory=list)
    guardrails: list[GuardrailExpectation] = Field(default_factory=list)
    claims: list[ClaimsExpectation] = Field(default_factory=list)
    agentdojo: AgentDojoExpectation | None = Field(
        default=None, description="AgentDojo's checks (scenarios with `tools: agentdojo`)."
    )
    replay_only: list[ExpectationField] = Field(
        default_factory=list,
        description="Expectations (by field name, e.g. answer_contains) that only the scripted "
        "model can meet, such as its exact answer text: a live run skips their checks and "
        "says how many it skipped.",
    )

    @model_validator(mode="after")
    def _replay_only_names_given_fields(self) -> Expectations:
        for name in self.replay_only:
            if name not in self.model_fields_set:
                raise ValueError(
                    f"replay_only names {name!r}, which this scenario does not expect; list only "
                    "expectation fields it gives"
                )
        return self


class Scenario(_Model):
    id: str = Field(pattern=ID_PATTERN)
    description: str = Field(min_length=1)
    tags: list[str] = Field(default_factory=list)
    principal: PrincipalSpec = Field(default_factory=PrincipalSpec)
    request: str = Field(min_length=1, description="The user's request, as the model sees it.")
    policy: str = Field(
        default="default",
        description="`default` (the shipped policy) or a path relative to the scenario file.",
    )
    tools: Literal["builtin", "agentdojo"] = Field(
        default="builtin",
        description="The tool set the run uses: the built-in tools (with `mcp_config`'s), or "
        "an AgentDojo suite's (with `agentdojo`).",
    )
    agentdojo: AgentDojoTask | None = Field(
        default=None, description="The AgentDojo task this scenario runs (`tools: agentdojo`)."
    )
    mcp_config: str | None = Field(
        default=None,
        description="An MCP servers file (relative to the scenario file) whose tools are "
        "registered beside the built-in ones, as `mcp.<server>.<tool>`.",
    )
    max_steps: int = Field(default=8, ge=1, le=50)
    claims_mode: ClaimsMode | None = Field(
        default=None,
        description="What the loop does with an answer whose claims the run does not support: "
        "annotate (append what really happened), replace (say only that; the default) or off.",
    )
    setup: Setup = Field(default_factory=Setup)
    script: list[ScriptStep] = Field(
        default_factory=list,
        description="The replay provider's script. Without one the scenario is live-only: "
        "a replay run leaves it out (and says so); a live provider (--provider) runs it.",
    )
    reviews: list[Review] = Field(
        default_factory=list, description="Scripted reviewer decisions, one per held call."
    )
    expect: Expectations

    @model_validator(mode="after")
    def _agentdojo_consistent(self) -> Scenario:
        task = self.agentdojo
        if (self.tools == "agentdojo") != (task is not None):
            raise ValueError("`tools: agentdojo` and an `agentdojo:` task go together")
        if task is None:
            if self.expect.agentdojo is not None:
                raise ValueError("`expect.agentdojo` needs an `agentdojo:` task")
            return self
        setup = self.setup
        if self.mcp_config is not None or setup.files or setup.http_pages:
            raise ValueError(
                "an AgentDojo scenario runs the suite's own tools and environment: no "
                "`mcp_config`, setup `files` or `http_pages`"
            )
        expected = self.expect.agentdojo
        if expected is not None and expected.attack_succeeded is not None:
            if task.injection_task is None:
                raise ValueError("`attack_succeeded` needs an `injection_task` to attack with")
        return self

    @field_validator("claims_mode", mode="before")
    @classmethod
    def _yaml_off(cls, value: Any) -> Any:
        # YAML 1.1 reads a bare `off` as false: the user wrote the mode, not a boolean.
        return "off" if value is False else value


class ScenarioFile(_Model):
    """A file holds one scenario, or a list of them under `scenarios:`."""

    scenarios: list[Scenario] = Field(min_length=1)
