"""The Agent page: ask the governed agent, follow each turn's events as they happen.

`/agent` lists the turns (every operator's, newest first) under a box to start one; the turn
of `/agent/<run_id>` is rendered in full from `AgentSessions.view` (so a reload shows all of
it), then the page follows the live journal from the id that view was taken at and reads
`/agent/<run_id>.json` again whenever its run publishes something. A held call shows who must
decide, on the Approvals page: the turn continues by itself once they do, wherever they do.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import quote

from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Route

from harness._errors import HarnessError
from harness.console._agent_timeline import describe, status_badge, status_label, transcript
from harness.console._journal import LIVE_STATUSES
from harness.console._render import render
from harness.console._state import ConsoleState

PAGE = "agent"
# A request longer than this is refused with a message (the model's context is finite, and the
# page lists each request).
MAX_REQUEST_CHARS = 20_000


def turn_view(state: ConsoleState, run_id: str) -> dict[str, Any]:
    """What the page shows of one turn (raises HarnessError when there is no such run)."""
    view = state.sessions.view(run_id)
    status = view["status"]
    held = view["held"]
    if held is not None:
        # Every key present (the store may have been unreadable: then only `error` says why).
        held = {
            "approval_id": held["approval_id"],
            "call_id": held["call_id"],
            "tool": held["tool"],
            "arguments_text": json.dumps(held.get("arguments", {}), indent=2, ensure_ascii=False),
            "status": held.get("status", ""),
            "expires_at": held.get("expires_at", ""),
            "rule_ids": list(held.get("rule_ids") or []),
            "risk": held.get("risk") or "",
            "proposed_by": held.get("proposed_by") or "",
            "error": held.get("error", ""),
        }
    finished = status not in LIVE_STATUSES
    return {
        "run_id": view["run_id"],
        "operator": view["operator"],
        "request": view["request"],
        "started_at": view["started_at"],
        "status": status,
        "status_label": status_label(status),
        "status_badge": status_badge(status),
        "detail": view["detail"],
        "live": view["live"],
        "finished": finished,
        # While a turn waits, the loop's answer only says it is not done: the banner says more.
        "final_answer": (view["final_answer"] or "") if finished else "",
        "held": held,
        "events": [describe(e) for e in view["events"]],
        "transcript": transcript(view["messages"]),
        "hub_id": view["hub_id"],
        "now": state.clock.now().isoformat(),
    }


def run_list(state: ConsoleState) -> list[dict[str, Any]]:
    return [
        {**run, "status_label": status_label(run["status"]), "badge": status_badge(run["status"])}
        for run in state.sessions.runs()
    ]


def routes(state: ConsoleState) -> list[Route]:
    def page(
        request: Request,
        *,
        turn: dict[str, Any] | None = None,
        error: str | None = None,
        draft: str = "",
        status_code: int = 200,
    ) -> Response:
        # The page follows the journal from the id its content was read at: the turn's view's
        # own id, else one read before the list, so nothing published meanwhile is skipped.
        hub_id = turn["hub_id"] if turn is not None else state.hub.last_id
        return render(
            request,
            "agent.html",
            page=PAGE,
            status_code=status_code,
            turn=turn,
            runs=run_list(state),
            error=error,
            draft=draft,
            hub_id=hub_id,
            now=state.clock.now().isoformat(),
        )

    async def agent(request: Request) -> Response:
        return page(request)

    async def ask(request: Request) -> Response:
        form = await request.form()
        text = form.get("request", "")
        text = text if isinstance(text, str) else ""
        if len(text) > MAX_REQUEST_CHARS:
            error = f"the request is {len(text)} characters long; the limit is {MAX_REQUEST_CHARS}"
            return page(request, error=error, status_code=400)
        try:
            run_id = state.sessions.start(text, request.state.session.operator)
        except HarnessError as exc:
            # Shown beside the box, with what was typed kept (it is this operator's own text).
            return page(request, error=str(exc), draft=text, status_code=400)
        return RedirectResponse(f"/agent/{quote(run_id, safe='')}", status_code=303)

    async def runs_json(request: Request) -> Response:
        hub_id = state.hub.last_id
        return JSONResponse({"runs": run_list(state), "hub_id": hub_id})

    async def turn_page(request: Request) -> Response:
        run_id = request.path_params["run_id"]
        try:
            turn = turn_view(state, run_id)
        except HarnessError:
            return render(request, "agent_missing.html", page=PAGE, status_code=404, run_id=run_id)
        return page(request, turn=turn)

    async def turn_json(request: Request) -> Response:
        run_id = request.path_params["run_id"]
        try:
            return JSONResponse(turn_view(state, run_id))
        except HarnessError:
            return JSONResponse({"error": f"no agent turn {run_id!r}"}, status_code=404)

    return [
        Route("/agent", agent, methods=["GET"]),
        Route("/agent", ask, methods=["POST"]),
        Route("/agent.json", runs_json, methods=["GET"]),
        # Before `/agent/{run_id}`, which would otherwise take `x.json` as a run id.
        Route("/agent/{run_id}.json", turn_json, methods=["GET"]),
        Route("/agent/{run_id}", turn_page, methods=["GET"]),
    ]
