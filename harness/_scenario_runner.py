"""Runs scenarios: each in a fresh, throwaway gateway, driven to a trace.

Speed: what scenarios share is built once per process (`SuiteCache`: compiled policies, the
built-in tools, a workspace template); each scenario still gets a workspace restored from the
template and new stores.

Determinism: every scenario gets its own state directory, a manual clock starting at
a fixed instant, an unkeyed audit log, sequential ids everywhere and the scenario id as the
loop's run id, so a replay run produces a byte-identical trace (the suite `run_id` aside) on any
machine, under any PYTHONHASHSEED, serial or in parallel.
"""

from __future__ import annotations

import atexit
import datetime as dt
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from governance import (
    EditRefused,
    Gateway,
    ManualClock,
    Policy,
    Principal,
    ToolCall,
    ToolSource,
    canonical_path,
)
from governance.screening import DEFAULT_CLAIMS_MODE
from governance.stores import BudgetResetRefused, SelfApprovalError, StoreSpec
from harness._identity import scenario_inputs
from harness._loop import AgentLoop, RunState
from harness._scenario import Review, Scenario
from harness._scenario_checkpoint import checkpoint_summary, scenario_schedule
from harness._scenario_load import (
    LoadedScenario,
    mcp_config_digest,
    resolve_mcp_config,
    resolve_policy_path,
)
from harness._spans import ApprovalSpan
from harness._suite_cache import SuiteCache
from harness._telemetry import observe_scenario
from harness._trace import AuditSummary, ProviderRecord, SetupRecord, Trace, UsageSummary
from harness.providers import Provider, ProviderSettings, ReplayProvider
from harness.providers._base import ProviderIdentity

if TYPE_CHECKING:
    from governance.telemetry import Telemetry

SCENARIO_EPOCH = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


@dataclass(frozen=True, slots=True)
class ProviderChoice:
    """Which provider drives the scenarios. Live ones ignore the script (reviews still apply)."""

    kind: str = "replay"  # replay | openai | cassette
    settings: ProviderSettings | None = None
    # cassette: the directory replayed; openai: the directory each scenario's exchanges are
    # recorded to (None: not recorded), `fill_gaps` to replay what it holds and record the rest.
    cassette: Path | None = None
    fill_gaps: bool = False

    def build(self, scenario: Scenario) -> Provider:
        if self.kind == "replay":
            return ReplayProvider(scenario.script)
        if self.kind == "cassette":
            if self.cassette is None:
                raise ValueError("a cassette provider needs its directory")
            from harness.providers._cassette import CassetteProvider  # cassette runs only

            return CassetteProvider(self.cassette, scenario.id)
        if self.settings is None:
            raise ValueError("a live provider needs settings")
        from harness.providers import OpenAIProvider  # the openai SDK: live runs only

        live = OpenAIProvider(self.settings)
        if self.cassette is None:
            return live
        from harness.providers._cassette import RecordingProvider

        return RecordingProvider(
            live,
            directory=self.cassette,
            scenario_id=scenario.id,
            model=self.settings.model,
            base_url=self.settings.base_url,
            api_key=self.settings.api_key,
            fill_gaps=self.fill_gaps,
        )


_MEMORY_STORE = StoreSpec("memory")
_PROCESS_CACHE: SuiteCache | None = None
_PROCESS_LOCK = threading.Lock()


def _process_cache() -> SuiteCache:
    """This process's cache (a -j worker's, or one for callers that pass none): created on
    first use, its scratch removed when the interpreter exits."""
    global _PROCESS_CACHE
    if _PROCESS_CACHE is None:
        _PROCESS_CACHE = SuiteCache()
        atexit.register(_PROCESS_CACHE.close)  # MCP: a worker's shared servers stop with it
    return _PROCESS_CACHE


def open_scenario_gateway(
    loaded: LoadedScenario,
    cache: SuiteCache,
    *,
    clock: ManualClock,
    policy: Policy | None,
    store: StoreSpec = _MEMORY_STORE,
    checkpoint: bool = False,
    tool_source: ToolSource | None = None,
) -> Gateway:
    """The one place a scenario's gateway is built.

    Its stores are the ephemeral in-memory backend (nothing on disk, no fsync); the state
    directory, on RAM-backed scratch when the machine has it, holds nothing else of note. The
    workspace must have been reset (`cache.fresh_workspace()`); the policy is the suite's
    compiled copy of the scenario's file, or `policy` (mutation testing runs in-memory mutants).
    `store` is for the test that proves a trace does not depend on the backend that ran it.
    `checkpoint`: the gateway signs audit checkpoints as it goes (harness._scenario_checkpoint).
    `tool_source`: the scenario's only tools (an AgentDojo suite over its environment).
    """
    policy_path = resolve_policy_path(loaded)
    if tool_source is not None:
        return Gateway(
            state_dir=cache.new_state_dir(),
            policy_path=policy_path,
            clock=clock,
            audit_key_from_env=False,
            sources=[tool_source],
            builtin=False,
            policy=policy if policy is not None else cache.policy(policy_path),
            store=store,
            evidence=True,
            checkpoint=None,
        )
    # MCP: a stateless config's servers are shared by the worker's scenarios (the cache), any
    # other config's are started by the gateway and stopped with it.
    mcp_config = resolve_mcp_config(loaded)
    shared = cache.shared_mcp_sources(mcp_config) if mcp_config is not None else None
    plain = mcp_config is None  # the built-in tools alone: their registry is built once
    state_dir = cache.new_state_dir()
    return Gateway(
        state_dir=state_dir,
        policy_path=policy_path,
        clock=clock,
        audit_key_from_env=False,
        sources=[] if plain else [cache.builtin_source(), *(shared or ())],
        builtin=False,
        mcp_config=mcp_config if shared is None else None,
        policy=policy if policy is not None else cache.policy(policy_path),
        store=store,  # a scenario's approvals, budgets and audit live and die with it
        evidence=True,  # decisions carry the matched/decisive rules coverage is measured from
        registry=cache.builtin_registry() if plain else None,
        checkpoint=scenario_schedule(state_dir) if checkpoint else None,
    )


def run_scenario(
    loaded: LoadedScenario,
    *,
    run_id: str,
    provider: ProviderChoice,
    policy: Policy | None = None,
    cache: SuiteCache | None = None,
    store: StoreSpec = _MEMORY_STORE,
    telemetry: Telemetry | None = None,
) -> Trace:
    """One scenario from a clean state: setup, the governed run, scripted reviews, the trace.

    `policy` replaces the scenario's policy file (mutation testing runs in-memory mutants).
    Without `cache`, this process's cache is used (one scenario at a time). `store` picks the
    backend (the ephemeral memory store unless a test asks for a file store). `telemetry`
    (--otel) exports the run, labelled with the scenario and the suite run `run_id`.
    """
    if cache is not None:
        return _run_scenario(
            loaded,
            run_id=run_id,
            provider=provider,
            policy=policy,
            cache=cache,
            store=store,
            telemetry=telemetry,
        )
    with _PROCESS_LOCK:  # one workspace per cache: scenarios in threads take turns
        return _run_scenario(
            loaded,
            run_id=run_id,
            provider=provider,
            policy=policy,
            cache=_process_cache(),
            store=store,
            telemetry=telemetry,
        )


def _run_scenario(
    loaded: LoadedScenario,
    *,
    run_id: str,
    provider: ProviderChoice,
    policy: Policy | None,
    cache: SuiteCache,
    store: StoreSpec = _MEMORY_STORE,
    telemetry: Telemetry | None = None,
) -> Trace:
    scenario = loaded.scenario
    clock = ManualClock(SCENARIO_EPOCH)
    world = None
    if scenario.agentdojo is not None:  # the suite's own tools and environment, nothing else
        from harness._agentdojo_run import prepare_world

        world = prepare_world(scenario.agentdojo)
    workspace = cache.fresh_workspace()
    wants_checkpoint = scenario.expect.audit_checkpoint is not None
    gateway = open_scenario_gateway(
        loaded,
        cache,
        clock=clock,
        policy=policy,
        store=store,
        checkpoint=wants_checkpoint,
        tool_source=world.source if world is not None else None,
    )
    if telemetry is not None:
        observe_scenario(telemetry, gateway, scenario.id, run_id)
    try:
        with gateway:
            cache.http_pages.serve(scenario.setup.http_pages)  # none: no route to loopback
            setup = _setup(gateway, workspace.files_dir, scenario, clock)
            live = provider.build(scenario)
            loop = AgentLoop(
                live,
                gateway.firewall,
                max_steps=scenario.max_steps,
                claims=scenario.claims_mode or DEFAULT_CLAIMS_MODE,
                turn_observer=telemetry.model_turn if telemetry is not None else None,
            )
            principal = Principal(
                scenario.principal.actor, scenario.principal.agent, scenario.principal.team
            )
            state = loop.start(scenario.request, run_id=scenario.id, principal=principal)
            state = _review(gateway, loop, state, list(scenario.reviews), clock)
            verdict = gateway.audit.verify(scenario.id)
            checkpoint = checkpoint_summary(gateway) if wants_checkpoint else None
            identity = live.identity
            policy_digest = gateway.policy.current().digest
            registry_digest = gateway.registry.digest
            environment = None
            if world is not None:
                from harness._agentdojo_run import environment_checks, model_output

                # AgentDojo reads the model's own last text (unredacted, before any claims
                # check): the loop's account of refused calls is Proctor's report, not its.
                environment = environment_checks(world, model_output(state.messages))
    finally:
        cache.http_pages.clear()
        if (mcp_config := resolve_mcp_config(loaded)) is not None:
            cache.release_mcp_sources(mcp_config)  # MCP: a session that is not pristine goes
    trace = Trace(
        run_id=run_id,
        scenario_id=scenario.id,
        scenario_file=loaded.display_path,
        tags=list(scenario.tags),
        provider=ProviderRecord(name=identity.name, model=identity.model, live=identity.live),
        status=state.status,
        termination=state.termination,
        final_answer=state.final_answer,
        model_text=state.model_text,
        turns=state.turns,
        usage=UsageSummary(
            prompt_tokens=state.prompt_tokens,
            completion_tokens=state.completion_tokens,
            total_tokens=state.total_tokens,
            missing_turns=state.usage_missing_turns,
        ),
        policy_digest=policy_digest,
        registry_digest=registry_digest,
        inputs_digest=scenario_inputs(
            scenario,
            provider=identity_record(identity),
            policy_digest=policy_digest,
            registry_digest=registry_digest,
            mcp_config_digest=mcp_config_digest(loaded),
        ).digest,
        setup=setup,
        spans=list(state.spans),
        audit=AuditSummary(
            events=verdict.events,
            head=verdict.head,
            valid=verdict.ok,
            first_bad_seq=verdict.first_bad_seq,
            checkpoint=checkpoint,
        ),
        environment_checks=environment,
    )
    return _without_own_key(trace, provider, live)


def _without_own_key(trace: Trace, provider: ProviderChoice, live: object) -> Trace:
    """A live run's trace with the run's own API key cut out wherever a reply, a tool result or
    the answer quoted it: the trace feeds every report, so this one cut keeps them all clean
    (the redactor cannot know a key with no recognisable shape). A cassette replay does not
    know the key, but finds it where the recording cut it (`CassetteProvider.keys`): the same
    cut. Scripted replays never pay for it."""
    if provider.kind == "openai" and provider.settings is not None:
        from harness.providers._credential import cuttable_keys

        keys = cuttable_keys(provider.settings.api_key)
    elif provider.kind == "cassette":
        from harness.providers._cassette import CassetteProvider

        keys = live.keys if isinstance(live, CassetteProvider) else []
    else:
        return trace
    if not keys:
        return trace
    from harness._spans import RESULT_CUT_MARK, RESULT_SHOWN_CHARS
    from harness.providers._credential import cut_key, cut_key_at_end

    data = trace.model_dump(mode="json")
    cut = cut_key(data, keys)
    for span in cut["spans"]:  # a result cut to its shown length may end in half a key
        if span.get("kind") == "tool_call" and isinstance(span.get("result"), str):
            span["result"] = cut_key_at_end(
                span["result"], keys, RESULT_CUT_MARK, RESULT_SHOWN_CHARS
            )
    return trace if cut == data else Trace.model_validate(cut)


def identity_record(identity: ProviderIdentity) -> dict[str, Any]:
    """The provider as a scenario input: which model drives it (a replay script or a live one)."""
    return {"name": identity.name, "model": identity.model, "live": identity.live}


def _setup(
    gateway: Gateway, files: Path, scenario: Scenario, clock: ManualClock
) -> list[SetupRecord]:
    records: list[SetupRecord] = []
    sandbox = files.resolve() if scenario.setup.files else files
    for relative, text in sorted(scenario.setup.files.items()):
        target = (files / canonical_path(relative)).resolve()
        if not target.is_relative_to(sandbox):
            raise ValueError(f"setup file {relative!r} escapes the sandbox")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    for n, prior in enumerate(scenario.setup.prior_calls, start=1):
        actor = prior.actor or scenario.principal.actor
        principal = Principal(actor, scenario.principal.agent, scenario.principal.team)
        call = ToolCall(f"p{n}", prior.tool, prior.args, prior.run_id, principal)
        result = gateway.firewall.call(call)
        if result.outcome == "held" and result.approval_id and prior.approved_by:
            # An earlier run whose held call a reviewer approved: it executes (and counts).
            try:
                gateway.firewall.approve(result.approval_id, prior.approved_by, comment="setup")
                result = gateway.firewall.resume_held(result.approval_id, call)
            except SelfApprovalError:
                pass  # recorded as held: the proposer cannot approve their own call
        records.append(
            SetupRecord(
                kind="prior_call", subject=prior.tool, outcome=result.outcome, reason=result.reason
            )
        )
    budgets = {budget.id: budget for budget in gateway.policy.current().budgets}
    for reset in scenario.setup.budget_resets:
        charged = budgets.get(reset.budget)
        try:
            gateway.budgets.reset(
                budget_id=reset.budget,
                key=charged.scope_key(reset.key) if charged is not None else reset.key,
                by=reset.by,
                approved_by=reset.approved_by,
                reason=reset.reason,
            )
            records.append(
                SetupRecord(kind="budget_reset", subject=reset.budget, outcome="accepted")
            )
        except BudgetResetRefused as exc:
            records.append(
                SetupRecord(
                    kind="budget_reset", subject=reset.budget, outcome="refused", reason=exc.code
                )
            )
    if scenario.setup.elapsed_seconds:
        clock.advance(scenario.setup.elapsed_seconds)
    return records


def _review(
    gateway: Gateway,
    loop: AgentLoop,
    state: RunState,
    reviews: list[Review],
    clock: ManualClock,
) -> RunState:
    """Apply the scripted reviewer decisions to each held call, resuming the run after each."""
    while state.status == "waiting_approval" and state.held is not None and reviews:
        review = reviews.pop(0)
        held = state.held
        outcome = _apply_review(gateway, review, held.approval_id, clock)
        # Record what the store says happened, not what the script intended.
        status = (
            outcome
            if outcome in ("edit_refused", "self_approval_refused")
            else gateway.approvals.get(held.approval_id).status
        )
        state.spans.append(
            ApprovalSpan(
                id=f"s{len(state.spans) + 1}",
                step=state.turns,
                approval_id=held.approval_id,
                call_id=held.call_id,
                tool=held.tool,
                status=status,
                decided_by=review.reviewer if review.action in ("approve", "reject") else None,
                edited=review.set is not None,
            )
        )
        if status in ("pending", "edit_refused", "self_approval_refused"):
            continue  # the request is still pending: the next review (if any) decides it
        state = loop.resume(state)
    return state


def _apply_review(gateway: Gateway, review: Review, approval_id: str, clock: ManualClock) -> str:
    firewall = gateway.firewall
    if review.action == "leave":
        return "pending"
    if review.action == "expire":
        request = gateway.approvals.get(approval_id)
        clock.advance((request.expires_at - clock.now()).total_seconds() + 1)
        gateway.approvals.expire_due()
        return "expired"
    try:
        if review.action == "reject":
            firewall.reject(approval_id, review.reviewer, comment=review.comment)
            return "rejected"
        request = gateway.approvals.get(approval_id)
        edits = {**request.arguments, **review.set} if review.set is not None else None
        firewall.approve(approval_id, review.reviewer, arguments=edits, comment=review.comment)
        return "approved"
    except EditRefused:
        return "edit_refused"
    except SelfApprovalError:
        return "self_approval_refused"
