"""The Approvals page: held calls waiting for a reviewer, and the ones decided lately.

Decisions go through harness._approval_review, the same code `proctor approvals` runs: the
reviewer is the signed-in operator (never a form field), an edit names only the keys it changes
and is merged over the sealed raw arguments, then re-evaluated by the firewall. Only redacted
arguments ever reach the page.
"""

from __future__ import annotations

import json
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from governance import EditRefused
from governance.stores import (
    ApprovalConflict,
    ApprovalError,
    ApprovalNotFound,
    ApprovalRequest,
    ApprovalStoreError,
    SelfApprovalError,
)
from harness._approval_review import (
    approve,
    current_requests,
    edit_value,
    request_json,
    resume_hint,
)
from harness.console._form_input import BadInput, outcome, read_fields
from harness.console._render import render
from harness.console._shown import shown_time
from harness.console._state import ConsoleState

RECENT = 25  # decided requests shown under the pending ones
EDIT_PREFIX = "set."  # a form field `set.KEY` edits argument KEY, as `--set KEY=VALUE` does


def _pretty(value: Any) -> str:
    return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False, default=str)


def _view(request: ApprovalRequest, rules: dict[str, str], operator: str) -> dict[str, Any]:
    data = request_json(request)
    shown = request.shown_arguments
    approved = request.shown_approved_arguments
    return {
        **data,
        "arguments_text": _pretty(shown),
        "argument_items": [
            (key, json.dumps(value, ensure_ascii=False, default=str))
            for key, value in sorted(shown.items())
        ],
        "approved_text": None if approved is None else _pretty(approved),
        "rules": [(rule_id, rules.get(rule_id, "")) for rule_id in request.rule_ids],
        "mine": request.actor.strip() == operator,
        "decided_at": request.decided_at.isoformat() if request.decided_at else None,
        "decided_shown": shown_time(request.decided_at),
        "expires_shown": shown_time(request.expires_at),
    }


def _listing(state: ConsoleState, operator: str) -> dict[str, Any]:
    requests = current_requests(state.gateway.approvals)
    rules = {rule.id: rule.description for rule in state.gateway.policy.current().rules}
    pending = [r for r in requests if r.status == "pending"]
    decided = sorted(
        (r for r in requests if r.status != "pending"),
        key=lambda r: r.decided_at or r.created_at,
        reverse=True,
    )[:RECENT]
    return {
        "pending": [_view(r, rules, operator) for r in pending],
        "decided": [_view(r, rules, operator) for r in decided],
    }


def parse_edits(fields: dict[str, str]) -> dict[str, Any]:
    """The changed keys only: an empty field means `keep as proposed`."""
    edits: dict[str, Any] = {}
    for name, raw in fields.items():
        if not name.startswith(EDIT_PREFIX) or raw == "":
            continue
        key = name[len(EDIT_PREFIX) :]
        if not key:
            raise BadInput("an edited argument needs a name")
        edits[key] = edit_value(raw)
    return edits


def _refusal(exc: Exception) -> tuple[int, str, str]:
    """(status, kind, message) for a decision the store or the firewall refused."""
    if isinstance(exc, EditRefused):
        return 422, "edit_refused", f"edit refused ({exc.reason}): {exc}; the request stays pending"
    if isinstance(exc, SelfApprovalError):
        return 403, "self_approval", str(exc)
    if isinstance(exc, ApprovalNotFound):
        return 404, "not_found", str(exc)
    if isinstance(exc, ApprovalConflict):
        return 409, "conflict", f"{exc}: nothing was changed"
    if isinstance(exc, ApprovalStoreError):
        return 503, "store_unavailable", f"the approval store cannot answer now: {exc}"
    return 403, "refused", str(exc)  # IdentityRefused and any other refusal of the reviewer


def what_next(state: ConsoleState, approved: ApprovalRequest) -> str:
    """Who runs the approved call: a waiting turn by itself, else what the CLI would say."""
    if approved.waiter is not None:
        return f"run {approved.run_id} is waiting for it and continues by itself"
    return resume_hint(state.config.state_dir, approved)


def routes(state: ConsoleState) -> list[Route]:
    def operator(request: Request) -> str:
        name: str = request.state.session.operator
        return name

    async def context(request: Request) -> dict[str, Any]:
        return await run_in_threadpool(_listing, state, operator(request))

    async def respond(request: Request, status: int, kind: str, message: str) -> Response:
        return outcome(
            request,
            status=status,
            message=message,
            kind=kind,
            template="approvals.html",
            page="approvals",
            context=await context(request),
        )

    async def page(request: Request) -> Response:
        return render(
            request, "approvals.html", page="approvals", notice=None, **await context(request)
        )

    async def fragment(request: Request) -> Response:
        return render(request, "_approval_lists.html", page="approvals", **await context(request))

    async def as_json(request: Request) -> Response:
        listing = await run_in_threadpool(current_requests, state.gateway.approvals)
        pending = [request_json(r) for r in listing if r.status == "pending"]
        decided = [request_json(r) for r in listing if r.status != "pending"]
        return JSONResponse({"pending": pending, "decided": decided})

    async def decide_approve(request: Request) -> Response:
        approval_id = request.path_params["approval_id"]
        reviewer = operator(request)
        try:
            fields = await read_fields(request)
            edits = parse_edits(fields)
        except BadInput as exc:
            return await respond(request, 400, "bad_input", str(exc))
        comment = fields.get("comment", "").strip() or None
        try:
            approved = await run_in_threadpool(
                approve, state.gateway, approval_id, reviewer, edits=edits, comment=comment
            )
        except (EditRefused, ApprovalError) as exc:
            return await respond(request, *_refusal(exc))
        state.hub.publish("approvals", {"id": approval_id, "state": approved.state})
        edited = " with edited arguments" if edits else ""
        then = await run_in_threadpool(what_next, state, approved)
        return await respond(
            request, 200, "approved", f"{approval_id} approved by {reviewer}{edited}; {then}"
        )

    async def decide_reject(request: Request) -> Response:
        approval_id = request.path_params["approval_id"]
        reviewer = operator(request)
        try:
            fields = await read_fields(request)
        except BadInput as exc:
            return await respond(request, 400, "bad_input", str(exc))
        comment = fields.get("comment", "").strip()
        if not comment:
            return await respond(
                request, 400, "comment_required", "a rejection needs a comment: the agent is told"
            )
        try:
            await run_in_threadpool(
                state.gateway.firewall.reject, approval_id, reviewer, comment=comment
            )
        except ApprovalError as exc:
            return await respond(request, *_refusal(exc))
        state.hub.publish("approvals", {"id": approval_id, "state": "rejected"})
        return await respond(request, 200, "rejected", f"{approval_id} rejected by {reviewer}")

    return [
        Route("/approvals", page, methods=["GET"]),
        Route("/approvals/fragment", fragment, methods=["GET"]),
        Route("/approvals.json", as_json, methods=["GET"]),
        Route("/approvals/{approval_id}/approve", decide_approve, methods=["POST"]),
        Route("/approvals/{approval_id}/reject", decide_reject, methods=["POST"]),
    ]
