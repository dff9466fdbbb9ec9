"""Server-rendered pages: Jinja2 with autoescape on for every template, undefined names fatal.

Every model, tool and user string reaches the page through a template variable, so it is
escaped; nothing is marked safe. Data for the page's script goes in data-* attributes or is
fetched as JSON: the CSP allows no inline script.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, StrictUndefined
from starlette.requests import Request
from starlette.responses import HTMLResponse

NAV = (
    ("agent", "/agent", "Agent"),
    ("approvals", "/approvals", "Approvals"),
    ("policies", "/policies", "Policies"),
    ("budgets", "/budgets", "Budgets"),
    ("audit", "/audit", "Audit"),
    ("evaluations", "/evaluations", "Evaluations"),
)

_ENV = Environment(
    loader=FileSystemLoader(str(Path(__file__).parent / "templates")),
    autoescape=True,
    undefined=StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
)


def render(
    request: Request, template: str, *, page: str, status_code: int = 200, **context: Any
) -> HTMLResponse:
    """`template` with the layout's needs: the operator, their CSRF value, the nav, and the
    live event id the page was rendered at (it subscribes from there)."""
    session = request.state.session
    hub = request.app.state.console.hub
    html = _ENV.get_template(template).render(
        request=request,
        page=page,
        nav=NAV,
        operator=session.operator if session else None,
        csrf=session.csrf if session else "",
        live_after=hub.last_id,
        **context,
    )
    return HTMLResponse(html, status_code=status_code)
