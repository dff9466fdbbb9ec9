"""Every request passes the guard: sign-in, CSRF, Origin, Host and the security headers."""

from __future__ import annotations

import pytest
from starlette.testclient import TestClient

from harness.console import ConsoleState, create_app
from harness.console._guard import CSP, MAX_FORM_BYTES
from harness.console._session import COOKIE
from tests.unit.harness.console.conftest import ORIGIN, TOKEN, sign_in


def test_a_page_without_a_session_redirects_to_sign_in_keeping_where_it_was_going(
    client: TestClient,
) -> None:
    response = client.get("/agent?run=r1", headers={"Accept": "text/html"})
    assert response.status_code == 303
    assert response.headers["location"] == "/login?next=%2Fagent%3Frun%3Dr1"


def test_a_data_request_without_a_session_gets_401_not_a_redirect(client: TestClient) -> None:
    response = client.get("/live", headers={"Accept": "text/event-stream"})
    assert response.status_code == 401
    assert "sign in" in response.json()["error"]


def test_a_wrong_token_signs_nobody_in(client: TestClient) -> None:
    response = client.post(
        "/login", data={"token": TOKEN + "x", "operator": "ann"}, headers={"Origin": ORIGIN}
    )
    assert response.status_code == 403
    assert COOKIE not in response.cookies
    assert "not this console" in response.text


def test_a_malformed_operator_name_is_refused_and_shown_escaped(client: TestClient) -> None:
    response = client.post(
        "/login",
        data={"token": TOKEN, "operator": "<script>alert(1)</script>"},
        headers={"Origin": ORIGIN},
    )
    assert response.status_code == 400
    assert COOKIE not in response.cookies
    assert "<script>alert(1)" not in response.text


def test_signing_in_sets_an_http_only_same_site_strict_cookie(client: TestClient) -> None:
    response = client.post(
        "/login",
        data={"token": TOKEN, "operator": "ann", "next": "/approvals"},
        headers={"Origin": ORIGIN},
    )
    assert response.status_code == 303
    assert response.headers["location"] == "/approvals"
    cookie = response.headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie and "Path=/" in cookie


@pytest.mark.parametrize(
    "target",
    ["//evil.example/", "/\\evil.example", "https://evil.example/", "javascript:alert(1)", ""],
)
def test_sign_in_never_redirects_off_the_console(client: TestClient, target: str) -> None:
    response = client.post(
        "/login",
        data={"token": TOKEN, "operator": "ann", "next": target},
        headers={"Origin": ORIGIN},
    )
    assert response.headers["location"] == "/agent"


def test_a_state_change_without_the_csrf_value_is_refused(client: TestClient) -> None:
    sign_in(client)
    response = client.post("/logout", headers={"Origin": ORIGIN})
    assert response.status_code == 403
    assert "CSRF" in response.json()["error"]


def test_a_state_change_with_another_sessions_csrf_value_is_refused(client: TestClient) -> None:
    stolen = sign_in(client, "bob")
    sign_in(client, "ann")
    response = client.post("/logout", headers={"Origin": ORIGIN, "X-CSRF-Token": stolen})
    assert response.status_code == 403


def test_the_csrf_value_is_accepted_as_a_header_or_a_form_field(client: TestClient) -> None:
    csrf = sign_in(client)
    assert client.post("/logout", headers={"X-CSRF-Token": csrf}).status_code == 303
    csrf = sign_in(client)
    assert client.post("/logout", data={"csrf": csrf}).status_code == 303


def test_two_csrf_form_fields_are_refused(client: TestClient) -> None:
    csrf = sign_in(client)
    body = f"csrf={csrf}&csrf=other"
    response = client.post(
        "/logout",
        content=body,
        headers={"Content-Type": "application/x-www-form-urlencoded"},
    )
    assert response.status_code == 403


@pytest.mark.parametrize(
    "headers",
    [
        {"Origin": "http://evil.example"},
        {"Origin": "null"},
        {"Origin": "http://127.0.0.1:9999"},  # another port on this host: another origin
        {"Sec-Fetch-Site": "cross-site"},
        {"Sec-Fetch-Site": "same-site"},
    ],
)
def test_a_cross_origin_state_change_is_refused_even_with_the_csrf_value(
    client: TestClient, headers: dict[str, str]
) -> None:
    csrf = sign_in(client)
    response = client.post("/logout", headers={**headers, "X-CSRF-Token": csrf})
    assert response.status_code == 403
    assert "cross-origin" in response.json()["error"]


def test_a_cross_origin_sign_in_is_refused(client: TestClient) -> None:
    response = client.post(
        "/login",
        data={"token": TOKEN, "operator": "mallory"},
        headers={"Origin": "http://evil.example"},
    )
    assert response.status_code == 403
    assert COOKIE not in response.cookies


def test_a_request_naming_another_host_is_refused_on_a_loopback_console(
    client: TestClient,
) -> None:
    # DNS rebinding: evil.example resolved to 127.0.0.1 sends its own name as Host.
    response = client.get("/login", headers={"Host": "evil.example:8765"})
    assert response.status_code == 421
    assert client.get("/login", headers={"Host": "localhost:8765"}).status_code == 200


def test_an_oversized_state_change_is_refused_without_reaching_the_page(
    client: TestClient,
) -> None:
    csrf = sign_in(client)
    response = client.post(
        "/logout",
        content=b"x" * (MAX_FORM_BYTES + 1),
        headers={"X-CSRF-Token": csrf, "Content-Type": "application/octet-stream"},
    )
    assert response.status_code == 403


@pytest.mark.parametrize("path", ["/login", "/static/console.css", "/nowhere", "/agent"])
def test_every_response_carries_the_strict_headers(client: TestClient, path: str) -> None:
    response = client.get(path)
    assert response.headers["content-security-policy"] == CSP
    assert "'unsafe-inline'" not in CSP and "http" not in CSP
    assert response.headers["x-content-type-options"] == "nosniff"
    assert response.headers["referrer-policy"] == "same-origin"
    assert response.headers["x-frame-options"] == "DENY"


def test_the_sign_in_page_puts_the_token_in_a_field_escaped(client: TestClient) -> None:
    response = client.get('/login?token="><script>alert(1)</script>')
    assert response.status_code == 200
    assert "<script>alert(1)" not in response.text
    assert "&#34;&gt;&lt;script&gt;" in response.text


def test_the_browsers_favicon_request_is_answered_without_a_session(client: TestClient) -> None:
    response = client.get("/favicon.ico")
    assert response.status_code == 204
    assert response.headers["content-security-policy"] == CSP


def test_an_oversized_sign_in_is_refused_before_its_form_is_read(client: TestClient) -> None:
    response = client.post(
        "/login",
        content=b"token=" + b"x" * (MAX_FORM_BYTES + 1),
        headers={"Content-Type": "application/x-www-form-urlencoded", "Origin": ORIGIN},
    )
    assert response.status_code == 413
    assert COOKIE not in response.cookies


@pytest.mark.parametrize("name", ["console", "Proctor", "SYSTEM"])
def test_the_names_proctor_records_its_own_actions_under_cannot_sign_in(
    client: TestClient, name: str
) -> None:
    response = client.post(
        "/login", data={"token": TOKEN, "operator": name}, headers={"Origin": ORIGIN}
    )
    assert response.status_code == 400
    assert COOKIE not in response.cookies


def test_a_console_bound_to_another_loopback_address_answers_on_it(
    console_state: ConsoleState,
) -> None:
    from dataclasses import replace

    console_state.config = replace(console_state.config, host="127.0.0.2")
    app = create_app(console_state)
    with TestClient(app, base_url="http://127.0.0.2:8767", follow_redirects=False) as other:
        assert other.get("/login").status_code == 200
        assert other.get("/login", headers={"Host": "127.0.0.3:8767"}).status_code == 421


def test_the_sign_in_url_carries_any_token_intact() -> None:
    from urllib.parse import parse_qs, urlsplit

    from harness.console._serve import sign_in_url

    token = "pa+ss&w#rd-0123456789 x"
    url = sign_in_url("127.0.0.1", 8767, token)
    assert parse_qs(urlsplit(url).query)["token"] == [token]
