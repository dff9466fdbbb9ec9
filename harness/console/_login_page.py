"""Signing in: the access token `proctor console` printed, plus the operator's name.

The name is who every decision made from this browser is recorded as (a reviewer, a budget
reset's operator). It is declared, not proven: whoever holds the token can sign in under any
name, so the rules that need two people (the proposer never approves; two for a budget reset)
hold between names, and the token is what must stay with trusted operators. The names Proctor
records its own actions under are refused."""

from __future__ import annotations

import hmac
from urllib.parse import urlsplit

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from harness.console._render import render
from harness.console._session import COOKIE, MAX_AGE_SECONDS, OperatorNameError, SessionCodec
from harness.console._state import ConsoleState

HOME = "/agent"


def safe_next(target: str | None) -> str:
    """A local path to go to after signing in; anything else (another host, `//x`, `/\\x`)
    goes home."""
    if not target or not target.startswith("/") or target.startswith(("//", "/\\")):
        return HOME
    parts = urlsplit(target)
    if parts.scheme or parts.netloc:
        return HOME
    return target


def routes(state: ConsoleState, codec: SessionCodec) -> list[Route]:
    token = state.config.token.encode()

    async def login_form(request: Request) -> Response:
        return render(
            request,
            "login.html",
            page="login",
            token=request.query_params.get("token", ""),
            next=safe_next(request.query_params.get("next")),
            error=None,
        )

    async def login(request: Request) -> Response:
        form = await request.form()
        given = str(form.get("token", ""))
        operator = str(form.get("operator", ""))
        target = safe_next(str(form.get("next", "")))
        error = None
        if not hmac.compare_digest(given.encode(), token):
            error = (
                "That access token is not this console's: use the URL `proctor console` printed."
            )
        else:
            try:
                _, cookie = codec.issue(operator, int(state.clock.now().timestamp()))
            except OperatorNameError as exc:
                error = str(exc)
        if error is not None:
            return render(
                request,
                "login.html",
                page="login",
                token="",
                next=target,
                error=error,
                status_code=403 if "token" in error else 400,
            )
        response = RedirectResponse(target, status_code=303)
        response.set_cookie(
            COOKIE,
            cookie,
            max_age=MAX_AGE_SECONDS,
            httponly=True,
            samesite="strict",
            path="/",
            secure=request.url.scheme == "https",
        )
        return response

    async def logout(request: Request) -> Response:
        response = RedirectResponse("/login", status_code=303)
        response.delete_cookie(COOKIE, path="/")
        return response

    async def home(request: Request) -> Response:
        return RedirectResponse(HOME, status_code=303)

    async def favicon(request: Request) -> Response:
        return Response(status_code=204)  # browsers ask on every page; no icon, no redirect

    return [
        Route("/", home, methods=["GET"]),
        Route("/login", login_form, methods=["GET"]),
        Route("/login", login, methods=["POST"]),
        Route("/logout", logout, methods=["POST"]),
        Route("/favicon.ico", favicon, methods=["GET"]),
    ]
