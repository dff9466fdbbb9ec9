"""`with thing:` closes the thing on the way out, whatever happened inside.

Stores, gateways and MCP sources hold a file, a connection or a process; each defines `close()`
(idempotent) and gets the context-manager protocol from here instead of writing it again.
"""

from __future__ import annotations

from types import TracebackType
from typing import Self


class Closing:
    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
