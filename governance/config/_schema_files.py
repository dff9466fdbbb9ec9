"""Committed JSON files Proctor generates: the JSON Schemas editors validate config files with,
and the baseline. One rendering (sorted keys, two-space indent, trailing newline: a diff shows
only what changed) and one atomic write (a reader never sees half a file).
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

DRAFT = "https://json-schema.org/draft/2020-12/schema"


def schema_document(schema: Mapping[str, Any], title: str, **extra: str) -> dict[str, Any]:
    """A generated schema as committed: the draft it follows, its title, any extra keys."""
    return {"$schema": DRAFT, **schema, "title": title, **extra}


def render_json(data: Any) -> str:
    """Canonical, human-diffable JSON: two-space indent, sorted keys, trailing newline."""
    return json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False, allow_nan=False) + "\n"


def write_atomic(path: str | Path, text: str) -> Path:
    """Write via a temporary file in the same directory, fsync, rename: all or nothing."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path
