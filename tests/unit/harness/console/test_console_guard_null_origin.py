"""`Origin: null` on a POST: Chromium's form and fetch POSTs under our no-referrer policy."""

from __future__ import annotations

import pytest
from starlette.testclient import TestClient

from tests.unit.harness.console.conftest import TOKEN


def test_a_same_origin_sign_in_with_a_null_origin_is_let_through(client: TestClient) -> None:
    response = client.post(
        "/login",
        data={"token": TOKEN, "operator": "ann"},
        headers={"Origin": "null", "Sec-Fetch-Site": "same-origin"},
    )
    assert response.status_code == 303


@pytest.mark.parametrize("site", [None, "cross-site", "same-site", "none"])
def test_a_null_origin_not_vouched_for_as_same_origin_is_refused(
    client: TestClient, site: str | None
) -> None:
    headers = {"Origin": "null"} | ({"Sec-Fetch-Site": site} if site else {})
    response = client.post("/login", data={"token": TOKEN, "operator": "ann"}, headers=headers)
    assert response.status_code == 403
