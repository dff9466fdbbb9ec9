"""The Budgets page: what each destructive-action budget has used per scope key, and the
two-person reset (one operator asks, a different one confirms: harness.console._budget_resets).
"""

from __future__ import annotations

from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from governance.stores import BudgetStoreError
from harness._budget_reset import status_json
from harness.console._budget_resets import ResetDesk, ResetRefused
from harness.console._form_input import BadInput, outcome, read_fields
from harness.console._render import render
from harness.console._shown import shown_time
from harness.console._state import ConsoleState

RECENT_RESETS = 20


def _window(seconds: int) -> str:
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size and seconds % size == 0:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def _listing(state: ConsoleState, desk: ResetDesk) -> dict[str, Any]:
    policy = state.gateway.policy.current()
    budgets = [
        {
            "id": b.id,
            "description": b.description,
            "scope": b.scope,
            "limit": b.limit,
            "window": _window(b.window_seconds),
        }
        for b in policy.budgets
    ]
    store_error = None
    rows: list[dict[str, Any]] = []
    resets: list[dict[str, Any]] = []
    try:
        for row in state.gateway.budgets.status(policy.budgets):
            window = _window(row.window_seconds)
            rows.append(
                {
                    **status_json(row),
                    "exhausted": row.exhausted,
                    "window": window,
                    "watermark_shown": shown_time(row.watermark),
                }
            )
        for made in reversed(state.gateway.budgets.resets()[-RECENT_RESETS:]):
            resets.append(
                {
                    "budget": made.budget_id,
                    "key": made.key,
                    "at": made.at.isoformat(),
                    "at_shown": shown_time(made.at),
                    "by": made.by,
                    "approved_by": made.approved_by,
                    "reason": made.reason,
                }
            )
    except BudgetStoreError as exc:
        store_error = f"the budget store cannot answer now: {exc}"
    pending = [
        {
            "id": p.id,
            "scope": p.scope,
            "key": p.key,
            "budget": p.budget_id,
            "reason": p.reason,
            "requested_by": p.requested_by,
            "requested_at": p.requested_at.isoformat(),
            "requested_shown": shown_time(p.requested_at),
        }
        for p in desk.pending()
    ]
    scopes = sorted({b.scope for b in policy.budgets})
    return {
        "budgets": budgets,
        "rows": rows,
        "resets": resets,
        "pending": pending,
        "scopes": scopes,
        "store_error": store_error,
    }


def routes(state: ConsoleState) -> list[Route]:
    desk = ResetDesk(state.gateway, state.clock)

    def operator(request: Request) -> str:
        name: str = request.state.session.operator
        return name

    async def context() -> dict[str, Any]:
        return await run_in_threadpool(_listing, state, desk)

    async def respond(request: Request, status: int, kind: str, message: str) -> Response:
        return outcome(
            request,
            status=status,
            message=message,
            kind=kind,
            template="budgets.html",
            page="budgets",
            context=await context(),
        )

    async def page(request: Request) -> Response:
        return render(request, "budgets.html", page="budgets", notice=None, **await context())

    async def fragment(request: Request) -> Response:
        return render(request, "_budget_lists.html", page="budgets", **await context())

    async def as_json(request: Request) -> Response:
        listing = await context()
        return JSONResponse(
            {key: listing[key] for key in ("budgets", "rows", "resets", "pending", "store_error")}
        )

    async def ask(request: Request) -> Response:
        try:
            fields = await read_fields(request)
        except BadInput as exc:
            return await respond(request, 400, "bad_input", str(exc))
        try:
            asked = desk.request(
                scope=fields.get("scope", ""),
                key=fields.get("key", ""),
                budget_id=fields.get("budget", "").strip() or None,
                reason=fields.get("reason", ""),
                by=operator(request),
            )
        except ResetRefused as exc:
            return await respond(request, 400, exc.code, str(exc))
        state.hub.publish("budgets", {"reset": asked.id, "state": "requested"})
        return await respond(
            request,
            200,
            "requested",
            f"{asked.id}: reset of {asked.scope}={asked.key} asked by {asked.requested_by}; "
            "a different operator must confirm it",
        )

    async def confirm(request: Request) -> Response:
        reset_id = request.path_params["reset_id"]
        by = operator(request)
        try:
            asked, done = await run_in_threadpool(lambda: desk.confirm(reset_id, by=by))
        except ResetRefused as exc:
            status = 404 if exc.code == "not_found" else 403
            return await respond(request, status, exc.code, str(exc))
        except BudgetStoreError as exc:
            return await respond(request, 503, "store_unavailable", str(exc))
        state.hub.publish("budgets", {"reset": reset_id, "state": "done"})
        names = ", ".join(made.budget_id for made in done)
        return await respond(
            request,
            200,
            "reset",
            f"reset {names} for {asked.scope}={asked.key} "
            f"(by {asked.requested_by}, approved by {by})",
        )

    async def cancel(request: Request) -> Response:
        reset_id = request.path_params["reset_id"]
        try:
            asked = desk.cancel(reset_id)
        except ResetRefused as exc:
            return await respond(request, 404, exc.code, str(exc))
        state.hub.publish("budgets", {"reset": reset_id, "state": "withdrawn"})
        return await respond(
            request, 200, "withdrawn", f"{asked.id} withdrawn by {operator(request)}"
        )

    return [
        Route("/budgets", page, methods=["GET"]),
        Route("/budgets/fragment", fragment, methods=["GET"]),
        Route("/budgets.json", as_json, methods=["GET"]),
        Route("/budgets/resets", ask, methods=["POST"]),
        Route("/budgets/resets/{reset_id}/confirm", confirm, methods=["POST"]),
        Route("/budgets/resets/{reset_id}/cancel", cancel, methods=["POST"]),
    ]
