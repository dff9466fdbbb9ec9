"""The `http.get` built-in: fetch one public web page as text for the agent."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

from governance.arguments._urls import MAX_URL_LENGTH
from governance.tools._http_fetch import HttpFetcher
from governance.tools._local import LocalTool, local_tool


class HttpGetArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    url: Annotated[
        str,
        Field(
            min_length=1,
            max_length=MAX_URL_LENGTH,
            description="An http:// or https:// URL of a public page (no user:password@).",
        ),
    ]


def http_tools(fetcher: HttpFetcher | None = None) -> list[LocalTool]:
    """`http.get` over `fetcher` (the default one reaches public addresses only)."""
    settings = fetcher if fetcher is not None else HttpFetcher()

    @local_tool(
        "http.get",
        description=(
            "Fetch a public web page (network egress, GET only): returns its final URL, status, "
            "content type and text (HTML reduced to its readable text). Private, loopback, "
            "link-local and cloud-metadata addresses are refused."
        ),
        args=HttpGetArgs,
        action_type="read",
        risk="medium",
        idempotent=True,
    )
    def http_get(args: HttpGetArgs) -> dict[str, object]:
        return settings.fetch(args.url)

    return [http_get]
