"""Canonical JSON and digests: the one byte encoding every hash in Proctor is computed over."""

from __future__ import annotations

import hashlib
import hmac
import json
from typing import Any

# One encoder for every call: `json.dumps` with options builds a new one each time (its setup
# was a fifth of the encoding of a small audit record). Encoding keeps no state between calls.
_ENCODER = json.JSONEncoder(
    sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
)
# The C encoder `_ENCODER.encode` builds on every call, called directly: the same bytes without
# the two Python frames around it (every audit record and digest goes through here). A fresh
# `markers` dict each call, as `encode` passes, keeps the check for circular values.
_C_ENCODER: Any = getattr(json.encoder, "c_make_encoder", None)


def canonical_json(value: Any) -> bytes:
    """Sorted keys, compact separators, UTF-8, no NaN/Infinity: equal values give equal bytes."""
    try:
        if _C_ENCODER is None:  # an interpreter without the C accelerator
            text = _ENCODER.encode(value)
        else:
            encode = _C_ENCODER(
                {}, _ENCODER.default, _encode_string, None, ":", ",", True, False, False
            )
            text = "".join(encode(value, 0))
    except ValueError as exc:  # NaN or an infinity (allow_nan=False checks every float)
        raise ValueError(f"canonical JSON cannot encode this value: {exc}") from exc
    return text.encode("utf-8")


_encode_string: Any = json.encoder.encode_basestring  # what ensure_ascii=False encodes with


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
