"""Redaction for what is shown (a page, `--json`), also inside JSON text.

A model's tool-call arguments are JSON *text*; a secret written with escapes
(`"AKIA\\u0049OSFODNN7EXAMPLE"`) is invisible to the redactor until the text is decoded. So a
string that reads as a JSON object or array is parsed, redacted and written back; when nothing
in it was masked, the original text is kept as it was.
"""

from __future__ import annotations

import json
from typing import Any

from governance import redact
from governance.screening import redact_text


def redact_shown(value: Any) -> Any:
    if isinstance(value, str):
        if value[:1] in ("{", "[") and value[-1:] in ("}", "]"):
            try:
                parsed = json.loads(value)
            except (ValueError, RecursionError):
                return redact_text(value)
            masked = redact_shown(parsed)
            if masked == parsed:
                return redact_text(value)
            return json.dumps(masked, ensure_ascii=False, sort_keys=True)
        return redact_text(value)
    if isinstance(value, dict):
        return redact({key: redact_shown(item) for key, item in value.items()})
    if isinstance(value, list):
        return [redact_shown(item) for item in value]
    return value
