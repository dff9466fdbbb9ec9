"""The Audit page: the runs on the gateway's audit chain, one run's events, and verification.

Every read goes through the gateway's own audit backend, and verification is the backend's
verifier (what `proctor audit verify` runs), never a copy. All routes are GETs: nothing here
changes the log.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from governance.core import GovernanceError
from harness.console import _audit_view as view
from harness.console._render import render
from harness.console._state import ConsoleState

PAGE = "audit"


def _filter(request: Request) -> view.AuditFilter:
    params = request.query_params
    return view.AuditFilter(
        run=params.get("run", "").strip(),
        tool=params.get("tool", "").strip(),
        outcome=params.get("outcome", "").strip(),
    )


def _problem(request: Request, message: str, status: int) -> Response:
    return render(request, "audit_problem.html", page=PAGE, message=message, status_code=status)


def routes(state: ConsoleState) -> list[Route]:
    # Sync endpoints: the store reads block, so Starlette runs them in its thread pool.
    def runs_page(request: Request) -> Response:
        try:
            wanted = _filter(request)
        except view.UnknownOutcome as exc:
            return _problem(request, str(exc), 400)
        try:
            listing = view.list_runs(state.gateway.audit, wanted)
        except GovernanceError as exc:
            return _problem(request, f"the audit log cannot be read: {exc}", 503)
        return render(
            request,
            "audit.html",
            page=PAGE,
            listing=listing,
            wanted=wanted,
            outcomes=view.OUTCOMES,
            runs_shown=view.RUNS_SHOWN,
        )

    def run_page(request: Request) -> Response:
        run_id = request.query_params.get("id", "")
        try:
            wanted = _filter(request)
            offset = int(request.query_params.get("offset", "0") or 0)
        except view.UnknownOutcome as exc:
            return _problem(request, str(exc), 400)
        except ValueError:
            return _problem(request, "offset must be a whole number", 400)
        try:
            shown = view.run_events(state.gateway.audit, run_id, wanted, offset)
        except KeyError:
            return _problem(request, f"no run {run_id!r} on the audit log", 404)
        except GovernanceError as exc:
            return _problem(request, f"the audit log cannot be read: {exc}", 503)
        return render(
            request,
            "audit_run.html",
            page=PAGE,
            shown=shown,
            wanted=wanted,
            outcomes=view.OUTCOMES,
            per_page=view.EVENTS_PER_PAGE,
        )

    def verify_page(request: Request) -> Response:
        run_id = request.query_params.get("run") or None
        try:
            verdicts = view.verify(state.gateway.audit, run_id)
        except KeyError:
            return _problem(request, f"no run {run_id!r} on the audit log", 404)
        except GovernanceError as exc:
            return _problem(request, f"the audit log cannot be read: {exc}", 503)
        broken = [v for v in verdicts if not v.ok]
        return render(
            request,
            "audit_verify.html",
            page=PAGE,
            run_id=run_id,
            verdicts=verdicts,
            broken=broken,
        )

    return [
        Route("/audit", runs_page, methods=["GET"]),
        Route("/audit/run", run_page, methods=["GET"]),
        Route("/audit/verify", verify_page, methods=["GET"]),
    ]
