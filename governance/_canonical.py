"""Canonical JSON and digests: the one byte encoding every hash in Proctor is computed over."""

from __future__ import annotations

import hashlib
import hmac
import json
import math
from typing import Any


def _reject_bad_floats(value: Any) -> None:
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"canonical JSON cannot encode {value!r}")
    if isinstance(value, dict):
        for item in value.values():
            _reject_bad_floats(item)
    elif isinstance(value, list | tuple):
        for item in value:
            _reject_bad_floats(item)


def canonical_json(value: Any) -> bytes:
    """Sorted keys, compact separators, UTF-8, no NaN/Infinity: equal values give equal bytes."""
    _reject_bad_floats(value)
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    ).encode("utf-8")


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def digest(value: Any) -> str:
    """`sha256:<hex>` of the canonical JSON of `value`."""
    return "sha256:" + sha256_hex(canonical_json(value))


def keyed_digest(value: Any, key: bytes | None) -> str:
    """HMAC-SHA256 of the canonical JSON when a key is given, plain SHA-256 otherwise; labelled."""
    data = canonical_json(value)
    if key:
        return "hmac-sha256:" + hmac.new(key, data, hashlib.sha256).hexdigest()
    return "sha256:" + sha256_hex(data)
