"""The one line a failing export costs: once per Telemetry, whatever fails, however often."""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterable

from governance.screening._redaction import redact_text

_warned: set[int] = set()
_lock = threading.Lock()


def warn_once(owner: object, problem: str, *, secrets: Iterable[str] = ()) -> None:
    """One line on stderr for `owner` (a Telemetry), the first time anything goes wrong. Each of
    `secrets` (configured header values) is scrubbed from `problem`, as written and as repr()
    would quote it, before the general redaction."""
    for secret in sorted({s for s in secrets if s}, key=len, reverse=True):
        for form in {secret, repr(secret)[1:-1]}:
            problem = problem.replace(form, "[redacted]")
    with _lock:
        if id(owner) in _warned:
            return
        _warned.add(id(owner))
    print(
        f"proctor: OpenTelemetry export failed ({redact_text(problem)[:300]}); telemetry is being "
        "dropped, calls, decisions and the audit log are unaffected; further failures are "
        "not reported",
        file=sys.stderr,
        flush=True,
    )
