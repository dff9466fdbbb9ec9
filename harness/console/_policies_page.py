"""The Policies page: the policy file in an editor, validated as the operator types, a sample
call explained, and a save that applies on the gateway's next call.

The logic is `PolicyEditor`'s (harness.console._policy_edit); this module only carries it over
HTTP. Who saves is the signed-in session's operator, never a field of the request. A save sends
back the digest the page loaded: a file changed meanwhile (another tab, the CLI, an editor on
disk) is a conflict the page must reload over, never a silent overwrite. Every save is announced
on the live journal (topic `policy`), so another open page knows its text is stale.
"""

from __future__ import annotations

import json
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from harness.console._policy_edit import CHANGES_RUN, PolicyEditor, SampleCall, SaveResult
from harness.console._render import render
from harness.console._state import ConsoleState

MAX_NAME_CHARS = 200  # a tool, actor, agent or team name in an explain form
MAX_TOKENS = 10**15  # tokens already used, in an explain form
# A refused save's HTTP status: the request conflicts with the file's state (409), the draft is
# unusable (422), saving is not allowed here (403), or the server could not do it (500).
REFUSAL_STATUS = {
    "conflict": 409,
    "missing": 409,
    "unreadable": 409,
    "invalid": 422,
    "empty": 422,
    "read_only": 403,
    "write_failed": 500,
    "audit_failed": 500,
}


class BadRequest(ValueError):
    """A request body the page would never send; answered 400 with the message."""


def save_status(result: SaveResult) -> int:
    if result.outcome != "refused":
        return 200
    return REFUSAL_STATUS.get(result.reason or "", 500)


def routes(state: ConsoleState) -> list[Route]:
    editor = PolicyEditor.for_gateway(state.gateway, state.config.policy_path)

    def tool_names() -> list[str]:
        return sorted(descriptor.name for descriptor in state.gateway.registry.descriptors())

    async def page(request: Request) -> Response:
        loaded = await run_in_threadpool(editor.load)
        return render(
            request,
            "policies.html",
            page="policies",
            loaded=loaded,
            validation=loaded.validation.as_json() if loaded.validation else None,
            tools=tool_names(),
        )

    async def current(request: Request) -> Response:
        loaded = await run_in_threadpool(editor.load)
        return JSONResponse(loaded.as_json())

    async def validate(request: Request) -> Response:
        try:
            body = await _json_object(request)
            text = _text(body, "text")
        except BadRequest as exc:
            return _bad(exc)
        validation = await run_in_threadpool(editor.validate, text)
        return JSONResponse(validation.as_json())

    async def explain(request: Request) -> Response:
        try:
            body = await _json_object(request)
            sample = _sample(body)
            draft = _text(body, "draft") if body.get("draft") is not None else None
        except (BadRequest, ValueError) as exc:
            return _bad(exc)
        return JSONResponse(await run_in_threadpool(editor.explain, sample, draft))

    async def save(request: Request) -> Response:
        try:
            body = await _json_object(request)
            text = _text(body, "text")
            digest = body.get("digest")
            if digest is not None and not isinstance(digest, str):
                raise BadRequest("`digest` must be the string the page loaded")
        except BadRequest as exc:
            return _bad(exc)
        operator = request.state.session.operator  # the session's, whatever the body says
        result = await run_in_threadpool(editor.save, text, digest, operator)
        _announce(state, result, operator)
        return JSONResponse(result.as_json(), status_code=save_status(result))

    return [
        Route("/policies", page, methods=["GET"]),
        Route("/policies/current", current, methods=["GET"]),
        Route("/policies/validate", validate, methods=["POST"]),
        Route("/policies/explain", explain, methods=["POST"]),
        Route("/policies/save", save, methods=["POST"]),
    ]


def _announce(state: ConsoleState, result: SaveResult, operator: str) -> None:
    """Tell every open page: the policy changed (they reload before editing), and the audit
    log grew (a save and a refusal are both on the `policy-changes` chain)."""
    if result.outcome == "saved":
        state.hub.publish(
            "policy",
            {
                "operator": operator,
                "digest": result.new_digest,
                "old_digest": result.old_digest,
                "policy_digest": result.policy_digest,
                "event_seq": result.event_seq,
            },
        )
    if result.audited:
        state.hub.publish("audit", {"run_id": CHANGES_RUN, "seq": result.event_seq})


async def _json_object(request: Request) -> dict[str, Any]:
    try:
        body = json.loads(await request.body())
    except (ValueError, UnicodeDecodeError, RecursionError):
        raise BadRequest("the request body is not JSON") from None
    if not isinstance(body, dict):
        raise BadRequest("the request body must be a JSON object")
    return body


def _text(body: dict[str, Any], key: str) -> str:
    value = body.get(key)
    if not isinstance(value, str):
        raise BadRequest(f"`{key}` must be the policy text (a string)")
    return value


def _name(body: dict[str, Any], key: str, default: str) -> str:
    value = body.get(key, default)
    if not isinstance(value, str):
        raise BadRequest(f"`{key}` must be a string")
    value = value.strip() or default
    if len(value) > MAX_NAME_CHARS or not value.isprintable():
        raise BadRequest(f"`{key}` must be a printable name of at most {MAX_NAME_CHARS} chars")
    return value


def _sample(body: dict[str, Any]) -> SampleCall:
    tool = _name(body, "tool", "")
    if not tool:
        raise BadRequest("choose a tool to explain a call to")
    arguments = body.get("arguments", "{}")
    if not isinstance(arguments, str):
        raise BadRequest("`arguments` must be the JSON text of an object")
    tokens = body.get("tokens_used", 0)
    if isinstance(tokens, str):
        tokens = tokens.strip() or "0"
        if not (tokens.isascii() and tokens.isdigit()) or len(tokens) > 16:
            raise BadRequest(f"tokens used must be a whole number from 0 to {MAX_TOKENS}")
        tokens = int(tokens)
    if not isinstance(tokens, int) or isinstance(tokens, bool) or not 0 <= tokens <= MAX_TOKENS:
        raise BadRequest(f"tokens used must be a whole number from 0 to {MAX_TOKENS}")
    tainted = body.get("tainted", False)
    if not isinstance(tainted, bool):
        raise BadRequest("`tainted` must be true or false")
    return SampleCall.from_json_arguments(
        tool,
        arguments,
        actor=_name(body, "actor", "console"),
        agent=_name(body, "agent", "console"),
        team=_name(body, "team", "console"),
        tokens_used=tokens,
        tainted=tainted,
    )


def _bad(exc: Exception) -> Response:
    return JSONResponse({"error": str(exc)}, status_code=400)
