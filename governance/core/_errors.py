"""One error base for governance; configuration errors apart from runtime errors."""

from __future__ import annotations

from pathlib import Path


class GovernanceError(Exception):
    """Base of every error raised on purpose by `governance`."""


class ExtraUnavailable(GovernanceError):
    """An optional extra is not installed, or has no such suite/version/task as was asked for:
    how Proctor was set up or invoked (the CLI exits 64 with the message, which says the fix)."""


class ConfigError(GovernanceError):
    """A file the operator wrote is wrong. Names the file, the line and what to fix."""

    def __init__(self, path: str | Path | None, line: int | None, message: str) -> None:
        self.path = str(path) if path is not None else None
        self.line = line
        self.column: int | None = None  # 1-based, when the problem is one character
        self.message = message
        super().__init__(str(self))

    def __reduce__(self) -> tuple[object, ...]:
        # Crosses process boundaries (parallel suite runs) with its fields intact.
        return (type(self), (self.path, self.line, self.message), {"column": self.column})

    def __str__(self) -> str:
        where = self.path or "<input>"
        if self.line is not None:
            where = f"{where}:{self.line}"
        # A path or message may hold a lone surrogate (an undecodable file name): printing it
        # must not raise, so such characters are shown as escapes.
        text = f"{where}: {self.message}"
        return text.encode("utf-8", "backslashreplace").decode("utf-8")


class PolicyError(ConfigError):
    """The policy file is malformed or unsafe; Proctor refuses to start with it."""


class RegistryError(GovernanceError):
    """The tool surface is inconsistent (for example two tools with one name)."""


class AuditWriteError(GovernanceError):
    """The audit log could not record an event; the call it guards must not execute."""


class ToolInputError(GovernanceError):
    """Arguments did not validate against a tool's input model."""


class AddressUnavailable(GovernanceError):
    """A server cannot listen on `host:port`: the port is taken, the address is not this
    machine's, or binding it needs privileges. The operator picks another (`--port`, `--host`)."""

    def __init__(self, host: str, port: int, reason: str, *, culprit: str = "port") -> None:
        self.host = host
        self.port = port
        self.reason = reason
        self.culprit = culprit  # "host" or "port": which of the two to change
        super().__init__(f"cannot listen on {host_port(host, port)}: {reason}")


def host_port(host: str, port: int) -> str:
    """`host:port`, with an IPv6 host in brackets."""
    return f"[{host}]:{port}" if ":" in host and not host.startswith("[") else f"{host}:{port}"


class InputRefused(ValueError):
    """An input the firewall will not judge (arguments, a path, a schema). `reason` is the
    stable reason code the refusal carries."""

    def __init__(self, reason: str, message: str) -> None:
        self.reason = reason
        super().__init__(message)
