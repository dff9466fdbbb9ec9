"""One governed session through a real Gateway (SQLite stores in a temp dir), as an agent loop
drives it: run.started, an allowed call whose output holds secrets, a blocked call, a held
call, a call that uses up its budget and one the budget denies, a tool that fails with a secret
in its error, arguments that fail their schema, run.finished. Every call carries fake secrets
in its arguments. For the telemetry tests and benchmarks/otel_overhead.py."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from governance import Gateway, ManualClock, Principal, ToolCall, ToolResult
from governance.telemetry import Telemetry
from governance.tools import LocalToolSource, local_tool
from tests.fake_secrets import ALL, AWS, CONFIG_DUMP, GITHUB, OPENAI

BEARER = "Bearer eyJzZWNyZXQiOiJGYWtlTGVha1Rlc3RCZWFyZXIifQ.c2lnbmF0dXJlRmFrZQ"
PASSWORD = "Hunter2-FakeLeakTest-Zebra"
SECRETS = (*ALL, BEARER.removeprefix("Bearer "), PASSWORD)
RUN_ID = "run-otel-1"
PRINCIPAL = Principal("ann", "support-agent", "ops")

POLICY = """
version: 1
defaults: {unknown_tool: block, no_match: block}
rules:
  - id: read-kb
    effect: allow
    match: {tool: [kb.lookup, ops.flaky]}
  - id: no-prod-purge
    effect: block
    match: {tool: ops.purge}
    when: [{arg: target, path_prefix: prod/}]
  - id: purge-elsewhere
    effect: allow
    match: {tool: ops.purge}
  - id: hold-mail
    effect: require_approval
    match: {tool: mail.send}
  - id: deletes
    effect: allow
    match: {tool: files.delete}
budgets:
  - id: one-delete-per-run
    scope: agent_run
    limit: 1
    window_seconds: 3600
    tools: [files.delete]
"""


class Lookup(BaseModel):
    model_config = ConfigDict(extra="forbid")
    query: str
    password: str
    limit: int = 5


class Target(BaseModel):
    model_config = ConfigDict(extra="forbid")
    target: str
    password: str


class Mail(BaseModel):
    model_config = ConfigDict(extra="forbid")
    to: str
    body: str


def _tools() -> LocalToolSource:
    @local_tool("kb.lookup", description="looks up", args=Lookup, action_type="read", risk="low")
    def lookup(args: Lookup) -> str:
        return f"{CONFIG_DUMP}\nauthorization: {BEARER}\npassword={PASSWORD}"

    @local_tool("ops.flaky", description="fails", args=Lookup, action_type="read", risk="low")
    def flaky(args: Lookup) -> str:
        raise RuntimeError(f"backend refused {OPENAI} with Authorization: {BEARER} ({AWS})")

    @local_tool(
        "ops.purge", description="purges", args=Target, action_type="destructive", risk="high"
    )
    def purge(args: Target) -> str:
        return "purged"

    @local_tool(
        "files.delete", description="deletes", args=Target, action_type="destructive", risk="high"
    )
    def delete(args: Target) -> str:
        return "deleted"

    @local_tool(
        "mail.send", description="sends", args=Mail, action_type="external", risk="high",
        reversible=False, external_side_effect=True,
    )  # fmt: skip
    def send(args: Mail) -> str:
        return "sent"

    return LocalToolSource([lookup, flaky, purge, delete, send], name="demo")


def _call(call_id: str, tool: str, **arguments: Any) -> ToolCall:
    return ToolCall(call_id, tool, arguments, RUN_ID, PRINCIPAL)


CALLS = (
    _call("c1", "kb.lookup", query=f"find {GITHUB}", password=PASSWORD),
    _call("c2", "ops.purge", target="prod/customers", password=PASSWORD),
    _call("c3", "mail.send", to="a@b.co", body=f"key {AWS} and {BEARER}"),
    _call("c4", "files.delete", target="tmp/a", password=PASSWORD),
    _call("c5", "files.delete", target="tmp/b", password=PASSWORD),
    _call("c6", "ops.flaky", query="q", password=PASSWORD),
    # The schema check's error quotes the value: a secret in the refusal's own text.
    _call("c7", "kb.lookup", query=OPENAI, password=PASSWORD, limit=AWS),
)


@contextmanager
def gateway(state: Path, telemetry: Telemetry | None = None) -> Iterator[Gateway]:
    policy = state / "policy.yaml"
    state.mkdir(parents=True, exist_ok=True)
    policy.write_text(POLICY)
    with Gateway(
        state_dir=state / "state",
        policy_path=policy,
        clock=ManualClock(),
        sources=[_tools()],
        builtin=False,
        telemetry=telemetry,
        audit_key_from_env=False,
    ) as opened:
        yield opened


def drive(opened: Gateway) -> dict[str, ToolResult]:
    """The session, as the agent loop records it: run events around the calls."""
    firewall = opened.firewall
    firewall.record_run_event(
        RUN_ID, "run.started", {"provider": "replay", "model": "scripted", "live": False}
    )
    results = {call.call_id: firewall.call(call) for call in CALLS}
    status = "waiting_approval" if results["c3"].outcome == "held" else "completed"
    firewall.record_run_event(RUN_ID, "run.finished", {"status": status, "termination": "held"})
    return results


def chain(opened: Gateway) -> list[tuple[str, dict[str, Any]]]:
    """The run's audit chain as (kind, data), without what varies run to run (time, hashes)."""
    return [(event.kind, dict(event.data)) for event in opened.audit.events(RUN_ID)]



def main() -> None:
    """`python -m tests.integration.telemetry.governed_session STATE_DIR [SHUTDOWN_TIMEOUT]`:
    the session in a process of its own (export as the environment says), printing its results,
    its audit chain and how long the telemetry's shutdown took, as JSON. Its stderr is real:
    what the SDK and Proctor print there is what a user would see."""
    import json
    import os
    import sys
    import time

    from governance.telemetry import telemetry_config

    state, timeout = Path(sys.argv[1]), float(sys.argv[2]) if len(sys.argv) > 2 else 5.0
    config = telemetry_config(flag=False, environ=os.environ)
    telemetry = Telemetry.start(config, service_role="serve") if config else None
    with gateway(state, telemetry) as opened:
        results = drive(opened)
        if telemetry is not None and os.environ.get("SESSION_WAIT_SECONDS"):
            time.sleep(float(os.environ["SESSION_WAIT_SECONDS"]))  # batches fail meanwhile
        started = time.monotonic()
        if telemetry is not None:
            telemetry.shutdown(timeout_seconds=timeout)
        took = time.monotonic() - started
        shown = {
            call_id: [r.outcome, r.reason, r.error, r.approval_id, r.output]
            for call_id, r in results.items()
        }
        print(json.dumps({"results": shown, "chain": chain(opened), "shutdown_seconds": took}))


if __name__ == "__main__":
    main()
