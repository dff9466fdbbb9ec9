"""One error base for the harness; config errors apart from runtime errors."""

from __future__ import annotations

from governance import ConfigError


class HarnessError(Exception):
    """Base of every error raised on purpose by `harness`."""


class UsageProblem(HarnessError):
    """The command was pointed at things that do not fit together (exit 64); says the fix."""


class ScenarioError(ConfigError):
    """A scenario file is malformed or breaks its contract. Names file, line and fix."""


class BaselineError(ConfigError):
    """The baseline file (or a stored baseline trace) is missing or malformed. Names the file."""


class CassetteError(ConfigError):
    """A cassette file is unreadable, truncated, of another format or scenario (exit 3), or a
    scenario id cannot name one. Names the file and the fix."""


class CredentialSourceError(ConfigError):
    """The API key and the base URL it would go to come from different places (exit 64)."""


class ProviderError(HarnessError):
    """A model provider failed. One normalised shape for every vendor error.

    `kind` is one of: rate_limited, server_error, timeout, connection, bad_request, auth,
    not_found, malformed_response, script_exhausted, cassette_miss.
    """

    def __init__(self, kind: str, message: str, *, status: int | None = None) -> None:
        self.kind = kind
        self.status = status
        self.message = message
        super().__init__(
            f"{kind}: {message}" if status is None else f"{kind} ({status}): {message}"
        )
