"""What a decision form sent, read the same way whether it came as JSON (the page's script)
or as a plain urlencoded form (a browser without script): a flat map of text fields."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from harness.console._render import render


class BadInput(ValueError):
    """The request body is not a flat object of text fields."""


async def read_fields(request: Request) -> dict[str, str]:
    if request.headers.get("content-type", "").startswith("application/json"):
        try:
            data: Any = await request.json()
        except (ValueError, RecursionError):
            raise BadInput("the body is not JSON") from None
        if not isinstance(data, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in data.items()
        ):
            raise BadInput("send an object whose values are all text")
        return data
    form = await request.form()
    fields: dict[str, str] = {}
    for key, value in form.multi_items():
        if not isinstance(value, str):
            raise BadInput(f"{key!r} must be text, not a file")
        if key in fields:
            raise BadInput(f"{key!r} was sent twice")
        fields[key] = value
    return fields


def wants_json(request: Request) -> bool:
    """The page's script posts JSON and reads JSON; a plain form gets a page back."""
    return request.headers.get("content-type", "").startswith(
        "application/json"
    ) or "application/json" in request.headers.get("accept", "")


def outcome(
    request: Request,
    *,
    status: int,
    message: str,
    kind: str,
    template: str,
    page: str,
    context: dict[str, Any],
) -> Response:
    """A decision's result: JSON for the script, or the page re-rendered with the message."""
    if wants_json(request):
        key = "message" if status < 400 else "error"
        return JSONResponse({key: message, "kind": kind}, status_code=status)
    notice = {"ok": status < 400, "text": message, "kind": kind}
    return render(request, template, page=page, status_code=status, notice=notice, **context)
