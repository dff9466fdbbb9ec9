"""The checkpoint file and its keys: forged, re-signed, truncated, wrong key, loose key files."""

from __future__ import annotations

import base64
import json
import os
import stat
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from governance.core._clock import ManualClock
from governance.stores import (
    AuditLog,
    CheckpointFileError,
    CheckpointKeyError,
    CheckpointSignatureError,
    generate_checkpoint_keys,
    load_checkpoint_private_key,
    load_checkpoint_public_key,
    read_checkpoint,
    write_checkpoint,
)

KEY = Ed25519PrivateKey.from_private_bytes(bytes(range(32)))
CLOCK = ManualClock()


@pytest.fixture
def cp(tmp_path: Path) -> Path:
    with AuditLog(tmp_path / "a.db", clock=CLOCK) as log:
        for n in range(3):
            log.append("run-a", "executed", {"n": n})
        write_checkpoint(log, tmp_path / "cp.json", private_key=KEY, clock=CLOCK)
    return tmp_path / "cp.json"


def _edit_payload(cp: Path, change: dict[str, object]) -> None:
    envelope = json.loads(cp.read_text())
    payload = json.loads(envelope["payload"])
    payload.update(change)
    envelope["payload"] = json.dumps(payload, sort_keys=True, separators=(",", ":"))
    cp.write_text(json.dumps(envelope))


def test_a_checkpoint_reads_back_with_its_public_key(cp: Path) -> None:
    body = read_checkpoint(cp, KEY.public_key())
    assert body.runs["run-a"].events == 3


def test_an_altered_payload_fails_its_signature(cp: Path) -> None:
    envelope = json.loads(cp.read_text())
    payload = json.loads(envelope["payload"])
    payload["runs"]["run-a"]["events"] = 2  # what an attacker who truncated would want
    payload["runs"]["run-a"]["last_seq"] = 2
    envelope["payload"] = json.dumps(payload, sort_keys=True, separators=(",", ":"))
    cp.write_text(json.dumps(envelope))
    with pytest.raises(CheckpointSignatureError, match="altered or forged"):
        read_checkpoint(cp, KEY.public_key())


def test_a_checkpoint_forged_with_another_key_and_relabelled_fails(cp: Path) -> None:
    forger = Ed25519PrivateKey.generate()
    envelope = json.loads(cp.read_text())
    # The forger keeps the real key id on the envelope and signs with their own key.
    forged = forger.sign(b"proctor-audit-checkpoint/v1\n" + envelope["payload"].encode())
    envelope["signature"]["value"] = base64.b64encode(forged).decode()
    cp.write_text(json.dumps(envelope))
    with pytest.raises(CheckpointSignatureError, match="does not verify"):
        read_checkpoint(cp, KEY.public_key())


def test_a_checkpoint_signed_by_another_key_names_both_keys(cp: Path) -> None:
    other = Ed25519PrivateKey.generate().public_key()
    with pytest.raises(CheckpointSignatureError, match="wrong public key") as caught:
        read_checkpoint(cp, other)
    assert str(cp) in str(caught.value)


def test_a_signature_without_its_domain_label_does_not_verify(cp: Path) -> None:
    envelope = json.loads(cp.read_text())
    bare = KEY.sign(envelope["payload"].encode())  # the same key, over the bare payload
    envelope["signature"]["value"] = base64.b64encode(bare).decode()
    cp.write_text(json.dumps(envelope))
    with pytest.raises(CheckpointSignatureError):
        read_checkpoint(cp, KEY.public_key())


@pytest.mark.parametrize("keep", [0, 1, 40, 200])
def test_a_truncated_checkpoint_file_is_a_clear_error_naming_the_file(cp: Path, keep: int) -> None:
    cp.write_bytes(cp.read_bytes()[:keep])
    with pytest.raises(CheckpointFileError, match="truncated or corrupted") as caught:
        read_checkpoint(cp, KEY.public_key())
    assert str(cp) in str(caught.value)


@pytest.mark.parametrize(
    "text",
    [
        "[]",
        '{"payload": "x"}',
        '{"payload": "x", "signature": {"alg": "rsa", "key_id": "k", "value": "v"}}',
        '{"payload": "x", "payload": "y", "signature": {}}',
    ],
)
def test_a_file_that_is_not_a_checkpoint_is_refused_naming_it(tmp_path: Path, text: str) -> None:
    path = tmp_path / "x.json"
    path.write_text(text)
    with pytest.raises(CheckpointFileError) as caught:
        read_checkpoint(path, KEY.public_key())
    assert str(path) in str(caught.value)


def test_a_missing_checkpoint_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(CheckpointFileError, match="cannot read checkpoint"):
        read_checkpoint(tmp_path / "none.json", KEY.public_key())


def test_the_checkpoint_file_is_private_whatever_the_umask(tmp_path: Path) -> None:
    old = os.umask(0)
    try:
        with AuditLog(tmp_path / "a.db", clock=CLOCK) as log:
            log.append("r", "executed", {})
            write_checkpoint(log, tmp_path / "cp.json", private_key=KEY, clock=CLOCK)
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "cp.json").stat().st_mode) == 0o600
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".cp")] == []  # no temp left


def test_a_rewritten_checkpoint_replaces_the_old_one_whole(tmp_path: Path) -> None:
    with AuditLog(tmp_path / "a.db", clock=CLOCK) as log:
        log.append("r", "executed", {})
        write_checkpoint(log, tmp_path / "cp.json", private_key=KEY, clock=CLOCK)
        log.append("r", "executed", {})
        write_checkpoint(log, tmp_path / "cp.json", private_key=KEY, clock=CLOCK)
    assert read_checkpoint(tmp_path / "cp.json", KEY.public_key()).runs["r"].events == 2


def test_keygen_writes_a_private_key_only_its_owner_reads_and_never_overwrites(
    tmp_path: Path,
) -> None:
    private, public = tmp_path / "ck", tmp_path / "ck.pub"
    kid = generate_checkpoint_keys(private, public)
    assert stat.S_IMODE(private.stat().st_mode) == 0o600
    assert kid.startswith("ed25519:")
    before = private.read_bytes()
    with pytest.raises(CheckpointKeyError, match="refusing to overwrite"):
        generate_checkpoint_keys(private, public)
    assert private.read_bytes() == before
    signer = load_checkpoint_private_key(private)
    assert load_checkpoint_public_key(public) == signer.public_key()


def test_a_signing_key_readable_by_others_is_refused(tmp_path: Path) -> None:
    private, public = tmp_path / "ck", tmp_path / "ck.pub"
    generate_checkpoint_keys(private, public)
    private.chmod(0o644)
    with pytest.raises(CheckpointKeyError, match="chmod 600"):
        load_checkpoint_private_key(private)


def test_a_public_key_file_is_not_accepted_as_a_signing_key_nor_the_reverse(
    tmp_path: Path,
) -> None:
    private, public = tmp_path / "ck", tmp_path / "ck.pub"
    generate_checkpoint_keys(private, public)
    public.chmod(0o600)
    with pytest.raises(CheckpointKeyError, match="not an unencrypted PEM private key"):
        load_checkpoint_private_key(public)
    with pytest.raises(CheckpointKeyError, match="not a PEM public key"):
        load_checkpoint_public_key(private)


def test_a_key_of_another_algorithm_is_refused(tmp_path: Path) -> None:
    from cryptography.hazmat.primitives.asymmetric import ec

    other = ec.generate_private_key(ec.SECP256R1())
    path = tmp_path / "ec.pub"
    path.write_bytes(
        other.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
    )
    with pytest.raises(CheckpointKeyError, match="not an Ed25519 key"):
        load_checkpoint_public_key(path)


def test_keygen_refuses_one_path_for_both_keys(tmp_path: Path) -> None:
    from governance.stores import CheckpointKeyError, generate_checkpoint_keys

    same = tmp_path / "k"
    with pytest.raises(CheckpointKeyError, match="both be"):
        generate_checkpoint_keys(same, tmp_path / "." / "k")
    assert not same.exists()  # nothing written
