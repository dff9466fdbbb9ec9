"""Starting, storing and resuming single governed runs from the command line."""

from __future__ import annotations

import json

import click
from pydantic import TypeAdapter

from governance import Gateway
from harness._errors import HarnessError
from harness._loop import AgentLoop, RunState, TurnObserver
from harness._redact_shown import redact_shown
from harness._run_store import ProviderSpec, RunStore, StoredRun
from harness.providers import Provider, ReplayProvider, ScriptStep
from harness.providers._settings import resolve_settings

SCRIPT = TypeAdapter(list[ScriptStep])


def build_provider(spec: ProviderSpec) -> Provider:
    if spec.kind == "replay":
        return ReplayProvider(SCRIPT.validate_python(spec.script or []))
    settings = resolve_settings(base_url=spec.base_url, model=spec.model)
    if settings is None:
        raise HarnessError("resuming a live run needs PROCTOR_LLM_API_KEY (or .env) to be set")
    from harness.providers import OpenAIProvider  # the openai SDK: live runs only

    return OpenAIProvider(settings)


def resume_stored_run(
    gateway: Gateway,
    store: RunStore,
    stored: StoredRun,
    *,
    turn_observer: TurnObserver | None = None,
) -> RunState:
    loop = AgentLoop(
        build_provider(stored.provider),
        gateway.firewall,
        max_steps=stored.max_steps,
        claims=stored.claims,
        turn_observer=turn_observer,
    )
    state = loop.resume(stored.state)
    store.save(stored.model_copy(update={"state": state}))
    return state


def print_run(state: RunState, *, as_json: bool) -> None:
    if as_json:
        # The stored run keeps what a resume needs (0600 file); what is printed is redacted.
        shown = redact_shown(state.model_dump(mode="json"))
        click.echo(json.dumps(shown, indent=2, ensure_ascii=False))
        return
    for span in state.tool_spans:
        rules = ",".join(span.rule_ids) or "-"
        click.echo(
            f"  {span.call_id:<4} {span.tool:<22} {span.outcome:<9} "
            f"{span.reason or '-':<28} rules: {rules}"
        )
    click.echo(f"run {state.run_id}: {state.status} ({state.termination})")
    click.echo(f"answer: {state.final_answer}")
    if state.status == "waiting_approval" and state.held is not None:
        held = state.held
        click.echo(
            f"\n{held.tool} is held as {held.approval_id}. Review it with:\n"
            f"  proctor approvals show {held.approval_id}\n"
            f"  proctor approvals approve {held.approval_id} --reviewer NAME [--set key=value]\n"
            f"  proctor approvals reject {held.approval_id} --reviewer NAME --comment WHY\n"
            f"then continue with: proctor approvals resume {state.run_id}"
        )
