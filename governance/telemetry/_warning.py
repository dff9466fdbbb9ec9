"""The one line a failing export costs: once per Telemetry, whatever fails, however often."""

from __future__ import annotations

import sys
import threading
import weakref
from collections.abc import Iterable

from governance.screening._redaction import redact_text

# Who has warned: held weakly (an id() can be reused by a later Telemetry, which must warn too).
_warned: weakref.WeakSet[object] = weakref.WeakSet()
_lock = threading.Lock()


def warn_once(owner: object, problem: str, *, secrets: Iterable[str] = ()) -> None:
    """One line on stderr for `owner` (a Telemetry: weakly referable), the first time anything
    goes wrong. Each of `secrets` (configured header values) is scrubbed from `problem`, as
    written and as repr() would quote it, before the general redaction."""
    for secret in sorted({s for s in secrets if s}, key=len, reverse=True):
        for form in {secret, repr(secret)[1:-1]}:
            problem = problem.replace(form, "[redacted]")
    with _lock:
        if owner in _warned:
            return
        _warned.add(owner)
    line = (
        f"proctor: OpenTelemetry export failed ({redact_text(problem)[:300]}); telemetry is being "
        "dropped, calls, decisions and the audit log are unaffected; further failures are "
        "not reported\n"
    )
    # One write: `-j` workers share stderr, and print() writes the line and its end apart.
    sys.stderr.write(line)
    sys.stderr.flush()
