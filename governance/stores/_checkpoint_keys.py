"""The Ed25519 keys of audit checkpoints: generated, written, loaded, each failure named.

A checkpoint is signed with a private key kept apart from the audit database, and verified with
its public key alone, so whoever checks a log (an auditor, CI) never holds anything that could
sign. Files are PEM: the private key PKCS#8 (unencrypted, mode 0600, refused when group or
others can read it, as ssh refuses), the public key SubjectPublicKeyInfo.

Environment: `PROCTOR_CHECKPOINT_KEY` (path of the private key, to sign) and
`PROCTOR_CHECKPOINT_PUBLIC_KEY` (path of the public key, to verify).
"""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path
from typing import Final

from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from governance.stores._checkpoint_file import CheckpointError, write_atomic

PRIVATE_KEY_ENV: Final = "PROCTOR_CHECKPOINT_KEY"
PUBLIC_KEY_ENV: Final = "PROCTOR_CHECKPOINT_PUBLIC_KEY"
_MAX_KEY_FILE: Final = 16_384


class CheckpointKeyError(CheckpointError):
    """A checkpoint key is missing, unreadable, of the wrong kind or too widely readable."""


def key_id(public_key: Ed25519PublicKey) -> str:
    """A short, stable name of a public key: `ed25519:` + the first 16 bytes of SHA-256 (hex)."""
    raw = public_key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return "ed25519:" + hashlib.sha256(raw).hexdigest()[:32]


def generate_keypair(private_path: Path, public_path: Path, *, force: bool = False) -> str:
    """Write a new key pair (private 0600, public 0644); refuse to overwrite unless `force`.
    Returns the key id."""
    if private_path.resolve() == public_path.resolve():
        raise CheckpointKeyError(
            f"the private and the public key would both be {private_path}: the public key "
            "would replace the private one; give --public-key another path"
        )
    for path in (private_path, public_path):
        if path.exists() and not force:
            raise CheckpointKeyError(
                f"{path} exists; refusing to overwrite a key (move it away, or pass --force)"
            )
    private = Ed25519PrivateKey.generate()
    pem = private.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    public = private.public_key()
    public_pem = public.public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    try:
        write_atomic(private_path, pem, mode=0o600)
        write_atomic(public_path, public_pem, mode=0o644)
    except OSError as exc:
        raise CheckpointKeyError(f"cannot write the key pair: {exc}") from exc
    return key_id(public)


def _read(path: Path, what: str) -> bytes:
    try:
        if path.stat().st_size > _MAX_KEY_FILE:
            raise CheckpointKeyError(f"{path} is too large to be a {what}")
        return path.read_bytes()
    except OSError as exc:
        raise CheckpointKeyError(f"cannot read the {what} {path}: {exc.strerror or exc}") from exc


def load_private_key(path: Path) -> Ed25519PrivateKey:
    """The signing key in `path`; CheckpointKeyError if group/others can read it or it is not
    an unencrypted Ed25519 PKCS#8 PEM key."""
    try:
        mode = path.stat().st_mode
    except OSError as exc:
        raise CheckpointKeyError(
            f"cannot read the checkpoint signing key {path}: {exc.strerror or exc} "
            "(create one with `proctor audit keygen`)"
        ) from exc
    if os.name == "posix" and stat.S_IMODE(mode) & 0o077:
        raise CheckpointKeyError(
            f"the checkpoint signing key {path} is readable by others "
            f"(mode {stat.S_IMODE(mode):04o}); run `chmod 600 {path}`"
        )
    data = _read(path, "checkpoint signing key")
    try:
        key = serialization.load_pem_private_key(data, password=None)
    except (ValueError, TypeError, UnsupportedAlgorithm) as exc:
        raise CheckpointKeyError(
            f"{path} is not an unencrypted PEM private key ({exc}); "
            "create one with `proctor audit keygen`"
        ) from exc
    if not isinstance(key, Ed25519PrivateKey):
        raise CheckpointKeyError(f"{path} holds a {type(key).__name__}, not an Ed25519 key")
    return key


def load_public_key(path: Path) -> Ed25519PublicKey:
    """The verification key in `path`: a PEM Ed25519 public key."""
    data = _read(path, "checkpoint public key")
    key: object
    try:
        key = serialization.load_pem_public_key(data)
    except (ValueError, TypeError, UnsupportedAlgorithm) as exc:
        raise CheckpointKeyError(
            f"{path} is not a PEM public key ({exc}); pass the .pub file `proctor audit keygen` "
            "wrote"
        ) from exc
    if not isinstance(key, Ed25519PublicKey):
        raise CheckpointKeyError(f"{path} holds a {type(key).__name__}, not an Ed25519 key")
    return key
