"""The console's Starlette application: the guard around every route, the static files, and
each page's routes (one module per page, `routes(state)`)."""

from __future__ import annotations

from pathlib import Path

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Mount
from starlette.staticfiles import StaticFiles

from harness.console import (
    _agent_page,
    _approvals_page,
    _audit_page,
    _budgets_page,
    _evaluations_page,
    _live_route,
    _login_page,
    _policies_page,
)
from harness.console._guard import ConsoleGuard
from harness.console._session import SessionCodec
from harness.console._state import ConsoleState


def create_app(state: ConsoleState, *, loopback_only: bool = True) -> Starlette:
    """The app for `state`; `loopback_only` refuses requests whose Host is not a loopback name
    (DNS rebinding), and is turned off only by `--allow-remote`."""
    codec = SessionCodec(state.config.token)
    static = StaticFiles(directory=str(Path(__file__).parent / "static"))
    routes: list[BaseRoute] = [
        *_login_page.routes(state, codec),
        *_live_route.routes(state),
        *_agent_page.routes(state),
        *_approvals_page.routes(state),
        *_policies_page.routes(state),
        *_budgets_page.routes(state),
        *_audit_page.routes(state),
        *_evaluations_page.routes(state),
        Mount("/static", app=static, name="static"),
    ]
    app = Starlette(
        routes=routes,
        middleware=[
            Middleware(
                ConsoleGuard,
                codec=codec,
                clock=state.clock,
                loopback_only=loopback_only,
                bound_host=state.config.host,
            )
        ],
        exception_handlers={Exception: _internal_error},
    )
    app.state.console = state
    return app


async def _internal_error(request: Request, exc: Exception) -> Response:
    # Never a traceback in the page: the console log has it.
    return JSONResponse({"error": f"internal error ({type(exc).__name__})"}, status_code=500)
