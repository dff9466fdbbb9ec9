"""Proctor as an MCP server: the governed tool set, published to any MCP client.

Every `tools/call` from a foreign client goes through `Firewall.call` like any other call: a
policy decision, budgets, approvals and a hash-chained audit record, on its own run.

Tools keep their Proctor names (`fs.read`, `mcp.time.get_current_time`): MCP allows dots
(SEP-986: `[A-Za-z0-9._-]{1,128}`). A client that only accepts OpenAI-style function names
(no dots) has to map names on its side. Each tool carries its governance facts twice: as a
description prefix (`[proctor: action=write risk=medium impact=write approval=maybe]`) for
the model and the user, and as `_meta.proctor` for the client (see `governance_facts`).

Runs: one run per MCP session (`<prefix>-<n>`, call ids `c1, c2, ...` within it). A session is
one `Server.run()` (a stdio process, an in-memory connection) or one Streamable HTTP session
(`Mcp-Session-Id`). A request without session identity - the stateless 2026-07-28 HTTP path -
gets a run of its own. `n` continues after the highest `<prefix>-<n>` already in the audit log,
so a restart never appends to an old run; two processes sharing a state directory at the same
time need distinct prefixes.

Results: executed -> the output, `isError: false`; failed and blocked -> `isError: true`
naming the reason code; held -> a normal result (`isError: false`) saying
`status: waiting_approval`, with the approval id and a plain note that nothing executed: an
error would invite the client to retry a gated action. Once a human approves,
`proctor.resume_approved` runs the approved call exactly once, after the firewall re-checks it.
"""

from __future__ import annotations

import contextlib
import ipaddress
import logging
import re
import socket
import threading
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from importlib import metadata
from typing import Any, Literal

import anyio
import anyio.to_thread
import mcp_types as types
import uvicorn
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.server.transport_security import TransportSecuritySettings
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from governance._gateway import Gateway
from governance._serving import StartedServer, bind_socket, serving_in_thread
from governance.core._contracts import (
    PolicyContext,
    Principal,
    ToolCall,
    ToolDescriptor,
    ToolResult,
)
from governance.core._errors import GovernanceError, PolicyError, RegistryError
from governance.policy._compile import Policy
from governance.stores._approvals import ApprovalError

logger = logging.getLogger(__name__)

META_KEY = "proctor"
RESUME_TOOL = "proctor.resume_approved"
MCP_PATH = "/mcp"
LOOPBACK = "127.0.0.1"
DEFAULT_PRINCIPAL = Principal(actor="mcp-user", agent="mcp-client", team="mcp")
SHUTDOWN_GRACE = 2  # seconds open HTTP streams get when the server stops
_MAX_HTTP_SESSIONS = 10_000  # run bookkeeping kept for this many HTTP sessions, oldest dropped

ApprovalHint = Literal["always", "maybe", "never"]

INSTRUCTIONS = (
    "Every tool call here is governed by Proctor: a policy decides it, and it is recorded in a "
    "hash-chained audit log. A result whose status is waiting_approval did NOT run: a human must "
    "approve it (proctor approvals approve <id> --reviewer NAME); after that, call "
    f"{RESUME_TOOL} with the approval_id to run it once. Do not retry a blocked or held call."
)


class McpServerError(GovernanceError):
    """The outbound MCP server cannot start (the port is taken, a bad bind address)."""


# -- governance metadata ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class GovernanceFacts:
    """What a client should know about a published tool before it calls it."""

    action_type: str
    risk: str
    impact: str
    approval: ApprovalHint
    always_blocked: bool
    approval_rules: tuple[str, ...]
    source: str
    reversible: bool
    external_side_effect: bool
    idempotent: bool
    quarantine: str | None = None

    def prefix(self) -> str:
        """`[proctor: action=write risk=medium impact=write approval=maybe]`, for descriptions."""
        parts = [
            f"action={self.action_type}",
            f"risk={self.risk}",
            f"impact={self.impact}",
            f"approval={self.approval}",
        ]
        if self.always_blocked:
            parts.append("blocked=always")
        if self.quarantine:
            parts.append(f"quarantined={self.quarantine}")
        return "[proctor: " + " ".join(parts) + "]"

    def meta(self) -> dict[str, Any]:
        return {
            "action_type": self.action_type,
            "risk": self.risk,
            "impact": self.impact,
            "approval": self.approval,
            "always_blocked": self.always_blocked,
            "approval_rules": list(self.approval_rules),
            "source": self.source,
            "reversible": self.reversible,
            "external_side_effect": self.external_side_effect,
            "idempotent": self.idempotent,
            "quarantine": self.quarantine,
        }


def governance_facts(descriptor: ToolDescriptor, policy: Policy | None) -> GovernanceFacts:
    """The tool's governance facts, with `approval` and `always_blocked` derived from the rules.

    Derived statically, not from one trial decision: an empty-argument call would fail every
    argument condition and read as "blocked" for tools that are usually allowed. A rule counts
    when its selectors can match the tool (in a clean or a tainted run, under or over any token
    threshold); it is unconditional when it always matches and has no argument conditions.
    `approval` is `always` when an unconditional rule requires approval, `maybe` when some rule
    can, `never` otherwise. `always_blocked` when an unconditional rule blocks, no rule could
    allow the call at all (so it falls to the default block), the tool is quarantined, or the
    policy cannot be loaded. Budgets are not reflected: they block, they never ask.
    """
    if policy is None or descriptor.quarantine:
        return _facts(descriptor, "never", always_blocked=True, approval_rules=())
    probe = ToolCall("probe", descriptor.name, {}, "probe", Principal("probe", "probe", "probe"))
    context = PolicyContext.for_call(probe, descriptor, registry_digest="")
    most_tokens = max((r.match.min_tokens_used or 0 for r in policy.rules), default=0)
    contexts = [
        replace(context, tainted=tainted, tokens_used=tokens)
        for tainted in (False, True)
        for tokens in (0, most_tokens)
    ]
    unconditional: set[str] = set()
    reachable: set[str] = set()
    approval_rules: list[str] = []
    for rule in sorted(policy.rules, key=lambda r: r.id):
        if not rule.enabled:
            continue
        try:
            holds = [rule.match.holds(c) for c in contexts]
        except Exception:  # the evaluator turns a failing rule into a block; so do we
            holds, effect = [True] * len(contexts), "block"
        else:
            effect = rule.effect
        if effect == "allow" and descriptor.action_type == "unknown":
            effect = "require_approval"  # an unmapped tool's allow asks a human first
        if not any(holds):
            continue
        reachable.add(effect)
        if all(holds) and not rule.when:
            unconditional.add(effect)
        if effect == "require_approval":
            approval_rules.append(rule.id)
    always_blocked = "block" in unconditional or not (reachable & {"allow", "require_approval"})
    approval: ApprovalHint
    if always_blocked:
        approval, approval_rules = "never", []
    elif "require_approval" in unconditional:
        approval = "always"
    elif "require_approval" in reachable:
        approval = "maybe"
    else:
        approval = "never"
    return _facts(descriptor, approval, always_blocked, tuple(approval_rules))


def _facts(
    descriptor: ToolDescriptor,
    approval: ApprovalHint,
    always_blocked: bool,
    approval_rules: tuple[str, ...],
) -> GovernanceFacts:
    return GovernanceFacts(
        action_type=descriptor.action_type,
        risk=descriptor.risk,
        impact=descriptor.impact,
        approval=approval,
        always_blocked=always_blocked,
        approval_rules=approval_rules,
        source=descriptor.source,
        reversible=descriptor.reversible,
        external_side_effect=descriptor.external_side_effect,
        idempotent=descriptor.idempotent,
        quarantine=descriptor.quarantine,
    )


def _annotations(descriptor: ToolDescriptor) -> types.ToolAnnotations:
    """MCP hints from the effective impact (never the optimistic declared type)."""
    impact = descriptor.impact
    return types.ToolAnnotations(
        read_only_hint=impact == "read",
        destructive_hint=impact in ("destructive", "unknown"),
        idempotent_hint=descriptor.idempotent,
        open_world_hint=descriptor.external_side_effect,
    )


_RESUME_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "approval_id": {
            "type": "string",
            "pattern": r"^apr-[0-9]+$",
            "description": "The approval_id from a waiting_approval result.",
        }
    },
    "required": ["approval_id"],
    "additionalProperties": False,
}


def _resume_tool() -> types.Tool:
    return types.Tool(
        name=RESUME_TOOL,
        description=(
            "[proctor: resumes a human-approved call] Run a call that was held for approval and "
            "has since been approved by a human, exactly once. The firewall re-checks it first; "
            "a call that is still pending, rejected, expired or already used does not run."
        ),
        input_schema=_RESUME_SCHEMA,
        annotations=types.ToolAnnotations(read_only_hint=False, destructive_hint=True),
        _meta={META_KEY: {"kind": "resume_approved"}},
    )


# -- runs and sessions ------------------------------------------------------------------------


@dataclass(slots=True)
class _Run:
    """One audit run: a session's calls, numbered in arrival order."""

    run_id: str
    calls: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def next_call_id(self) -> str:
        with self.lock:
            self.calls += 1
            return f"c{self.calls}"


@dataclass(slots=True)
class _Scope:
    """What one `Server.run()` shares across its requests: one connection, hence one session."""

    run: _Run | None = None


class _RunIds:
    """Sequential run ids `<prefix>-<n>`, continuing after those already in the audit log."""

    def __init__(self, prefix: str, existing: Sequence[str]) -> None:
        pattern = re.compile(re.escape(prefix) + r"-([0-9]+)")
        numbers = [int(m.group(1)) for r in existing if (m := pattern.fullmatch(r))]
        self._prefix = prefix
        self._last = max(numbers, default=0)
        self._lock = threading.Lock()

    def new_run(self) -> _Run:
        with self._lock:
            self._last += 1
            return _Run(f"{self._prefix}-{self._last}")


# -- results ----------------------------------------------------------------------------------


def _approve_command(approval_id: str) -> str:
    return f"proctor approvals approve {approval_id} --reviewer NAME"


def _text(text: str) -> types.TextContent:
    return types.TextContent(text=text)


def tool_result(result: ToolResult, run_id: str) -> types.CallToolResult:
    """Map a firewall result onto MCP: only `executed` and `held` are not errors."""
    info: dict[str, Any] = {
        "run_id": run_id,
        "call_id": result.call_id,
        "tool": result.tool,
        "outcome": result.outcome,
        "reason": result.reason,
        "rule_ids": list(result.decision.rule_ids) if result.decision else [],
        "approval_id": result.approval_id,
        "truncated": result.truncated,
    }
    if result.outcome == "executed":
        content: list[types.ContentBlock] = [_text(result.output)]
        if result.truncated:
            content.append(_text("[proctor: the output was truncated]"))
        return types.CallToolResult(content=content, is_error=False, _meta={META_KEY: info})
    if result.outcome == "held":
        return _held_result(result, run_id, info)
    reason = result.reason or result.outcome
    label = "blocked" if result.outcome == "blocked" else "failed"
    detail = result.error or ""
    text = f"{label}: {reason}" + (f" - {detail}" if detail else "")
    if label == "blocked" and "not executed" not in text and "nothing was executed" not in text:
        text += "; nothing was executed"
    return types.CallToolResult(content=[_text(text)], is_error=True, _meta={META_KEY: info})


def _held_result(result: ToolResult, run_id: str, info: dict[str, Any]) -> types.CallToolResult:
    approval_id = result.approval_id
    structured: dict[str, Any] = {
        "status": "waiting_approval",
        "executed": False,
        "tool": result.tool,
        "run_id": run_id,
        "call_id": result.call_id,
        "approval_id": approval_id,
        "reason": result.reason,
        "note": "Nothing was executed. A human must review this call; do not retry it.",
    }
    if approval_id:
        structured["approve_with"] = _approve_command(approval_id)
        structured["then"] = f'call {RESUME_TOOL} with {{"approval_id": "{approval_id}"}}'
        text = (
            f"status: waiting_approval - {result.tool} was held for human approval "
            f"({approval_id}). Nothing was executed. A reviewer approves it with "
            f"`{_approve_command(approval_id)}`; then call {RESUME_TOOL} with "
            f'{{"approval_id": "{approval_id}"}} to run it once. Do not retry the call itself.'
        )
    else:  # a firewall without an approval store: nobody can approve it from here
        text = (
            f"status: waiting_approval - {result.tool} needs human approval, but no approval "
            "store is configured, so it cannot be approved here. Nothing was executed."
        )
    return types.CallToolResult(
        content=[_text(text)],
        structured_content=structured,
        is_error=False,
        _meta={META_KEY: info},
    )


def _error_result(reason: str, message: str, **info: Any) -> types.CallToolResult:
    return types.CallToolResult(
        content=[_text(f"failed: {reason} - {message}")],
        is_error=True,
        _meta={META_KEY: {"outcome": "failed", "reason": reason, **info}},
    )


# -- the server -------------------------------------------------------------------------------


class _Publisher:
    """The handlers behind the MCP server: list the governed tools, govern each call."""

    def __init__(self, gateway: Gateway, principal: Principal, run_prefix: str) -> None:
        if RESUME_TOOL in gateway.registry:
            raise RegistryError(
                f"a registered tool is named {RESUME_TOOL!r}, which the MCP server reserves; "
                "rename that tool"
            )
        self._gateway = gateway
        self._principal = principal
        self._runs = _RunIds(run_prefix, gateway.audit.run_ids())
        self._http_runs: OrderedDict[str, _Run] = OrderedDict()
        self._http_lock = threading.Lock()

    # -- tools/list ---------------------------------------------------------------------------

    def tools(self) -> list[types.Tool]:
        try:
            policy: Policy | None = self._gateway.policy.current()
        except PolicyError as exc:
            logger.warning("policy unavailable, every tool is published as blocked: %s", exc)
            policy = None
        published = []
        for descriptor in self._gateway.registry.descriptors():
            facts = governance_facts(descriptor, policy)
            description = f"{facts.prefix()} {descriptor.description}".rstrip()
            published.append(
                types.Tool(
                    name=descriptor.name,
                    description=description,
                    input_schema=dict(descriptor.input_schema),
                    annotations=_annotations(descriptor),
                    _meta={META_KEY: facts.meta()},
                )
            )
        published.append(_resume_tool())
        return published

    def input_schema(self, name: str) -> Mapping[str, Any] | None:
        if name == RESUME_TOOL:
            return _RESUME_SCHEMA
        descriptor = self._gateway.registry.get(name)
        return dict(descriptor.input_schema) if descriptor is not None else None

    # -- tools/call ---------------------------------------------------------------------------

    def run_for(self, ctx: ServerRequestContext[_Scope, Any]) -> _Run:
        """The session's run; a request without session identity gets a fresh one."""
        request = ctx.request
        if request is not None:  # Streamable HTTP: one shared lifespan, sessions by header
            headers = getattr(request, "headers", None)
            session_id = headers.get("mcp-session-id") if headers is not None else None
            # Only the handshake era has sessions (the SDK checks the id); a 2026-07-28
            # request is stateless, and an Mcp-Session-Id it carries is the client's say-so.
            if not session_id or ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
                return self._runs.new_run()
            with self._http_lock:
                run = self._http_runs.get(session_id)
                if run is None:
                    run = self._runs.new_run()
                    self._http_runs[session_id] = run
                    while len(self._http_runs) > _MAX_HTTP_SESSIONS:
                        self._http_runs.popitem(last=False)
                return run
        scope = ctx.lifespan_context
        if scope.run is None:
            scope.run = self._runs.new_run()
        return scope.run

    def call(self, run: _Run, name: str, arguments: Mapping[str, Any]) -> types.CallToolResult:
        """Govern one call (blocking: runs in a worker thread)."""
        call = ToolCall(run.next_call_id(), name, dict(arguments), run.run_id, self._principal)
        try:
            result = self._gateway.firewall.call(call)
        except Exception as exc:  # the firewall never raises for a refusal; this is a bug
            logger.exception("firewall raised on %s %s", run.run_id, call.call_id)
            return _error_result(
                "internal_error",
                f"the firewall raised {type(exc).__name__}; treat the call as not executed and "
                f"check the audit log for {run.run_id} {call.call_id}",
                run_id=run.run_id,
                call_id=call.call_id,
            )
        return tool_result(result, run.run_id)

    def resume(self, arguments: Mapping[str, Any]) -> types.CallToolResult:
        """Run an approved held call once, through `Firewall.resume_held` (blocking)."""
        approval_id = arguments.get("approval_id")
        if not isinstance(approval_id, str) or not re.fullmatch(r"apr-[0-9]+", approval_id):
            return _error_result("invalid_arguments", "approval_id must look like apr-<n>")
        try:
            request = self._gateway.approvals.get(approval_id)
        except ApprovalError as exc:
            return _error_result("approval_not_found", str(exc), approval_id=approval_id)
        if request.actor != self._principal.actor:
            return _error_result(
                "approval_not_yours",
                f"{approval_id} was proposed by another actor; nothing was executed",
                approval_id=approval_id,
            )
        principal = Principal(request.actor, request.agent, request.team)
        # The stored arguments already carry the schema defaults the firewall applied.
        call = ToolCall(request.call_id, request.tool, request.arguments, request.run_id, principal)
        try:
            result = self._gateway.firewall.resume_held(approval_id, call)
        except Exception as exc:
            logger.exception("firewall raised resuming %s", approval_id)
            return _error_result(
                "internal_error",
                f"the firewall raised {type(exc).__name__}; treat the call as not executed",
                approval_id=approval_id,
            )
        return tool_result(result, request.run_id)


def build_mcp_server(
    gateway: Gateway,
    *,
    principal: Principal | None = None,
    run_prefix: str = "mcp",
) -> Server[Any]:
    """An MCP server publishing every tool in `gateway.registry`, each call governed.

    Serve it with `serve_stdio`, `serve_http` or `running_http_server`. Tool names are the
    Proctor names (`fs.read`, `mcp.time.get_current_time`): MCP allows dots in names.
    """
    if not re.fullmatch(r"[A-Za-z0-9_.-]+", run_prefix):
        raise ValueError(f"run_prefix {run_prefix!r} may use only letters, digits, '_', '-', '.'")
    publisher = _Publisher(gateway, principal or DEFAULT_PRINCIPAL, run_prefix)

    @contextlib.asynccontextmanager
    async def lifespan(_: Server[_Scope]) -> AsyncIterator[_Scope]:
        yield _Scope()  # one per Server.run(): a stdio process or an in-memory connection

    async def list_tools(
        ctx: ServerRequestContext[_Scope, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        tools = await anyio.to_thread.run_sync(publisher.tools)
        return types.ListToolsResult(tools=tools)

    async def call_tool(
        ctx: ServerRequestContext[_Scope, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        arguments = params.arguments or {}
        if params.name == RESUME_TOOL:
            return await anyio.to_thread.run_sync(publisher.resume, arguments)
        run = publisher.run_for(ctx)
        return await anyio.to_thread.run_sync(publisher.call, run, params.name, arguments)

    return Server[_Scope](
        "proctor",
        version=_version(),
        title="Proctor governed tools",
        instructions=INSTRUCTIONS,
        lifespan=lifespan,
        get_tool_input_schema=publisher.input_schema,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


def _version() -> str:
    try:
        return metadata.version("proctor")
    except metadata.PackageNotFoundError:
        return "0"


# -- transports -------------------------------------------------------------------------------


async def serve_stdio(server: Server[Any]) -> None:
    """Serve one client over stdin/stdout until it closes stdin. Nothing else reaches stdout."""
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _host_port(host: str, port: int) -> str:
    host = host.strip("[]")
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def http_security(
    host: str, port: int, extra_hosts: Sequence[str] = ()
) -> TransportSecuritySettings:
    """DNS-rebinding protection on: the bound host:port, its localhost variants, and extras.

    An extra without a port is allowed on the bound port only.
    """
    hosts = [_host_port(host, port)]
    hosts += [_host_port(h, port) for h in ("127.0.0.1", "localhost", "::1")]
    for extra in extra_hosts:
        has_port = extra.rsplit(":", 1)[-1].isdigit() and (
            extra.startswith("[") or extra.count(":") == 1
        )
        hosts.append(extra if has_port else _host_port(extra, port))
    unique = list(dict.fromkeys(hosts))
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=unique,
        allowed_origins=[f"http://{h}" for h in unique] + [f"https://{h}" for h in unique],
    )


def mcp_url(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    return f"http://{_host_port(host, port)}{MCP_PATH}"


def _uvicorn_config(
    server: Server[Any], sock: socket.socket, extra_hosts: Sequence[str], **options: Any
) -> uvicorn.Config:
    host, port = sock.getsockname()[:2]
    app = server.streamable_http_app(
        streamable_http_path=MCP_PATH,
        transport_security=http_security(host, port, extra_hosts),
        host=host,
    )
    return uvicorn.Config(
        app,
        lifespan="on",
        ws="none",
        http="h11",
        timeout_graceful_shutdown=SHUTDOWN_GRACE,
        **options,
    )


def serve_http(
    server: Server[Any],
    *,
    host: str = LOOPBACK,
    port: int = 8765,
    allowed_hosts: Sequence[str] = (),
    on_ready: Callable[[str], None] | None = None,
) -> None:
    """Serve Streamable HTTP at `/mcp` in the foreground until interrupted.

    The caller decides whether a non-loopback `host` is acceptable; DNS-rebinding protection
    is on whatever the host. `on_ready(url)` runs once the server accepts connections.
    """
    sock = bind_socket(host, port, McpServerError)
    url = mcp_url(sock)
    try:
        config = _uvicorn_config(server, sock, allowed_hosts, log_level="warning")
        runner = StartedServer(config, on_started=lambda: on_ready(url) if on_ready else None)
        runner.run(sockets=[sock])
    finally:
        sock.close()


@contextlib.contextmanager
def running_http_server(
    server: Server[Any],
    *,
    host: str = LOOPBACK,
    port: int = 0,
    allowed_hosts: Sequence[str] = (),
    startup_timeout: float = 10.0,
) -> Iterator[str]:
    """Serve Streamable HTTP in a background thread; yields the `/mcp` URL.

    Returns once the server accepts connections; on exit stops it and joins the thread.
    Port 0 picks a free port.
    """
    sock = bind_socket(host, port, McpServerError)
    # log_config=None: the caller's logging configuration is not ours to rewrite.
    config = _uvicorn_config(server, sock, allowed_hosts, log_config=None, access_log=False)
    with serving_in_thread(
        config,
        sock,
        name="proctor-mcp-http",
        startup_timeout=startup_timeout,
        stop_timeout=SHUTDOWN_GRACE + 5.0,
        failed=lambda why: McpServerError(f"the MCP server {why}"),
    ):
        yield mcp_url(sock)


def describe_tools(gateway: Gateway) -> str:
    """One line per published tool with its governance prefix (for `proctor serve` logs)."""
    try:
        policy: Policy | None = gateway.policy.current()
    except PolicyError:
        policy = None
    lines = [
        f"  {d.name:<28} {governance_facts(d, policy).prefix()}"
        for d in gateway.registry.descriptors()
    ]
    return "\n".join(lines)
