"""Raw arguments of held calls, sealed at rest: AES-256-GCM bound to the request they belong to.

A held call's raw arguments are the one thing Proctor keeps unredacted, because the call must
run with them once approved. With a key they are encrypted; the associated data names the
request (id, run, call, tool, digest) and the column, so a ciphertext moved to another request
or swapped between the proposal and the reviewer's edit fails to open.

Key: `PROCTOR_APPROVALS_KEY` when set, else derived from `PROCTOR_AUDIT_KEY`. Either way the
AES key is HKDF-SHA256 of the secret with a purpose label, so it is independent of the audit
HMAC key even when both come from one secret. Use a high-entropy secret (`openssl rand -hex 32`):
HKDF does not stretch a weak passphrase.
"""

from __future__ import annotations

import base64
import binascii
import os
from collections.abc import Mapping
from typing import Final

from governance.core._errors import GovernanceError

KEY_ENV: Final = "PROCTOR_APPROVALS_KEY"
AUDIT_KEY_ENV: Final = "PROCTOR_AUDIT_KEY"
_INFO: Final = b"proctor/approvals/raw-arguments/v1"
_SEALED: Final = "aesgcm1:"
_PLAIN: Final = "plain:"
_NONCE: Final = 12


class SealError(GovernanceError):
    """Sealed arguments could not be opened. `reason` is the refusal's reason code."""

    def __init__(self, reason: str, message: str) -> None:
        self.reason = reason
        super().__init__(message)


def derive_key(secret: bytes) -> bytes:
    """The 32-byte AES key for approvals, derived from any configured secret."""
    if not secret:
        raise ValueError("an empty secret cannot key the approval store")
    # cryptography is imported only where a key is configured: a keyless store (every scenario
    # run) marks the arguments plain and never needs it.
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.kdf.hkdf import HKDF

    return HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=_INFO).derive(secret)


def key_from_env(environ: Mapping[str, str] | None = None) -> bytes | None:
    """The approvals key from the environment, or None when neither variable is set."""
    env = os.environ if environ is None else environ
    secret = env.get(KEY_ENV, "") or env.get(AUDIT_KEY_ENV, "")
    return derive_key(secret.encode("utf-8")) if secret else None


def seal(plaintext: str, key: bytes | None, aad: bytes) -> str:
    """Text to store: encrypted under `key`, or marked plain when no key is configured."""
    if key is None:
        return _PLAIN + plaintext
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    nonce = os.urandom(_NONCE)
    sealed = AESGCM(key).encrypt(nonce, plaintext.encode("utf-8"), aad)
    return _SEALED + base64.b64encode(nonce + sealed).decode("ascii")


def unseal(stored: str | None, key: bytes | None, aad: bytes) -> str:
    """The plaintext of `stored`, or SealError naming why it cannot be trusted.

    With a key configured, plain text is refused too: a row rewritten in clear by someone with
    write access to the file must not pass for a sealed one.
    """
    if not isinstance(stored, str):
        raise SealError("approval_arguments_missing", "the raw arguments are not in the store")
    if stored.startswith(_PLAIN):
        if key is not None:
            raise SealError(
                "approval_arguments_unsealed",
                "the raw arguments are stored in clear although a key is configured",
            )
        return stored[len(_PLAIN) :]
    if not stored.startswith(_SEALED):
        raise SealError("approval_arguments_tampered", "the raw arguments are in no known form")
    if key is None:
        raise SealError(
            "approval_key_missing",
            f"the raw arguments are encrypted; set {KEY_ENV} (or {AUDIT_KEY_ENV}) to the key "
            "they were sealed with",
        )
    from cryptography.exceptions import InvalidTag
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    try:
        blob = base64.b64decode(stored[len(_SEALED) :], validate=True)
        plain = AESGCM(key).decrypt(blob[:_NONCE], blob[_NONCE:], aad)
        return plain.decode("utf-8")
    except (InvalidTag, ValueError, binascii.Error) as exc:
        raise SealError(
            "approval_arguments_tampered",
            "the sealed arguments do not open: tampered, moved from another request, or sealed "
            f"under a different key ({type(exc).__name__})",
        ) from exc
