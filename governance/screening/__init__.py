"""Text screening: secrets redacted from records, secrets in tool outputs masked or
withheld, injection-shaped text in requests and tool outputs flagged, and the claims of a
run's final answer checked against the run's own evidence.
"""

from __future__ import annotations

from governance.screening._claims import (
    CLAIMS_MODES,
    DEFAULT_CLAIMS_MODE,
    ActionClaim,
    CallEvidence,
    ClaimFinding,
    ClaimsMode,
    ClaimsReport,
    FindingKind,
    action_claims,
    check_claims,
    effect_classes,
    identifiers_in,
)
from governance.screening._injection import (
    Finding,
    HeuristicScreener,
    Screener,
    findings,
    screen_request,
)
from governance.screening._redaction import REDACTED, redact, redact_text

__all__ = [
    "CLAIMS_MODES",
    "DEFAULT_CLAIMS_MODE",
    "REDACTED",
    "ActionClaim",
    "CallEvidence",
    "ClaimFinding",
    "ClaimsMode",
    "ClaimsReport",
    "FindingKind",
    "action_claims",
    "check_claims",
    "effect_classes",
    "identifiers_in",
    "Finding",
    "HeuristicScreener",
    "Screener",
    "findings",
    "redact",
    "redact_text",
    "screen_request",
]
