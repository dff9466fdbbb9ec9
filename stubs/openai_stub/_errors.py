"""OpenAI-shaped error replies: one exception carries the status, the body and any headers."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


class StubError(Exception):
    """Base of every error raised on purpose by the vendor stub."""


class VendorError(StubError):
    """An error the stub answers with: `{"error": {message, type, param, code}}` and a status."""

    def __init__(
        self,
        status: int,
        message: str,
        *,
        error_type: str = "invalid_request_error",
        param: str | None = None,
        code: str | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.error_type = error_type
        self.param = param
        self.code = code
        self.headers = dict(headers or {})

    def payload(self) -> dict[str, Any]:
        return {
            "error": {
                "message": self.message,
                "type": self.error_type,
                "param": self.param,
                "code": self.code,
            }
        }


def bad_request(message: str, *, param: str | None = None, code: str | None = None) -> VendorError:
    """A 400 `invalid_request_error`, what a strict vendor answers to a malformed request."""
    return VendorError(400, message, param=param, code=code)


class StubStartError(StubError):
    """The stub's HTTP server did not come up (port taken, startup timed out)."""
