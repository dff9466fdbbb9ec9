"""Text screening: secrets redacted from records, secrets in tool outputs masked or
withheld, injection-shaped text in requests and tool outputs flagged.
"""

from __future__ import annotations

from governance.screening._injection import (
    Finding,
    HeuristicScreener,
    Screener,
    findings,
    screen_request,
)
from governance.screening._redaction import REDACTED, redact, redact_text

__all__ = [
    "REDACTED",
    "Finding",
    "HeuristicScreener",
    "Screener",
    "findings",
    "redact",
    "redact_text",
    "screen_request",
]
