"""An endpoint URL is shown as `scheme://host[:port]` only: a gateway's path, query, userinfo or
fragment may carry a token, and provider errors end up in traces, reports and cassettes."""

from __future__ import annotations

from collections.abc import Callable

import httpx2
import pytest

from harness._errors import ProviderError
from harness.providers._endpoint import endpoint_origin, scrub_endpoint
from harness.providers._openai import OpenAIProvider
from harness.providers._settings import ProviderSettings

PATH_TOKEN = "team-alpha-passphrase-horse"
SECRET_URL = (
    f"http://deploy:hunter2pw@127.0.0.1:8080/gw/{PATH_TOKEN}/v1?code=abcDEF123ghiJKL456#frag-tok"
)
SECRET_PARTS = (PATH_TOKEN, "abcDEF123ghiJKL456", "hunter2pw", "deploy:", "frag-tok", "/gw/")


@pytest.mark.parametrize(
    ("url", "origin"),
    [
        (SECRET_URL, "http://127.0.0.1:8080"),
        ("https://api.openai.com/v1", "https://api.openai.com"),
        ("https://API.Example.com:8443/x?key=1", "https://api.example.com:8443"),
        ("http://[::1]:9000/gw/tok/v1", "http://[::1]:9000"),
        ("http://host:notaport/v1", "(an unparsable endpoint URL)"),
        ("not a url", "(an endpoint URL without a host)"),
    ],
)
def test_an_endpoint_is_shown_as_its_origin_alone(url: str, origin: str) -> None:
    assert endpoint_origin(url) == origin


def test_scrubbing_masks_every_part_of_the_url_beyond_its_origin_wherever_it_is_quoted() -> None:
    text = (
        f"POST {SECRET_URL}/chat/completions failed; route /gw/{PATH_TOKEN}/v1 unknown; "
        "query code=abcDEF123ghiJKL456"
    )
    scrubbed = scrub_endpoint(text, SECRET_URL)
    assert "http://127.0.0.1:8080" in scrubbed
    for part in SECRET_PARTS:
        assert part not in scrubbed


def test_a_short_plain_path_is_not_masked_in_messages() -> None:
    assert scrub_endpoint("no route /v1/chat", "https://api.openai.com/v1") == "no route /v1/chat"


def _provider(handler: Callable[[httpx2.Request], httpx2.Response]) -> OpenAIProvider:
    settings = ProviderSettings(
        base_url=SECRET_URL, model="m", api_key="sk-test-0123456789", max_retries=0
    )
    return OpenAIProvider(
        settings, http_client=httpx2.Client(transport=httpx2.MockTransport(handler))
    )


def _error_of(provider: OpenAIProvider) -> ProviderError:
    with provider, pytest.raises(ProviderError) as caught:
        provider.complete([{"role": "user", "content": "hi"}], [])
    return caught.value


def test_a_404_that_quotes_the_route_names_the_endpoint_by_its_origin_only() -> None:
    def not_found(request: httpx2.Request) -> httpx2.Response:
        # A vendor (or the stub) that echoes the path it could not route.
        return httpx2.Response(404, json={"error": {"message": f"no route {request.url.path}"}})

    error = _error_of(_provider(not_found))
    assert error.kind == "not_found"
    assert "http://127.0.0.1:8080" in error.message
    for part in SECRET_PARTS:
        assert part not in error.message


def test_a_connection_failure_names_the_endpoint_by_its_origin_only() -> None:
    def refuse(request: httpx2.Request) -> httpx2.Response:
        raise httpx2.ConnectError(f"cannot connect to {request.url}", request=request)

    error = _error_of(_provider(refuse))
    assert error.kind == "connection"
    for part in SECRET_PARTS:
        assert part not in error.message


def test_settings_repr_shows_the_origin_not_the_full_url() -> None:
    shown = repr(ProviderSettings(base_url=SECRET_URL, model="m", api_key="k"))
    for part in SECRET_PARTS:
        assert part not in shown
