"""The run manifest: what a run directory must hold, by digest, optionally signed.

`manifest.json` is written last into a run's report directory. It records the run id, each
scenario's trace file and trace digest, and the digest of `report.json`'s bytes. With a key
(`PROCTOR_REPORT_KEY`, a CI secret) it carries an HMAC-SHA256 over the canonical JSON of all
of that, so `proctor score`/`gate` can tell a run Proctor wrote from one rewritten after the
fact. Without a key the manifest still pins every trace to the report, but anyone who can write
the directory can rewrite the three consistently: such a run is called unauthenticated.

Pure: no file or environment access here.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
from collections.abc import Iterable, Iterator, Mapping
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from governance import canonical_json

MANIFEST_NAME = "manifest.json"
MANIFEST_VERSION: Literal[1] = 1
REPORT_KEY_ENV = "PROCTOR_REPORT_KEY"
SIGNATURE_ALG = "hmac-sha256"
_DIGEST = r"^sha256:[0-9a-f]{64}$"
_SIGNATURE = r"^hmac-sha256:[0-9a-f]{64}$"


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ManifestTrace(_Model):
    file: str = Field(description="The trace file, relative to the run directory.")
    digest: str = Field(pattern=_DIGEST, description="The trace digest (without run_id).")


class RunManifest(_Model):
    version: Literal[1] = MANIFEST_VERSION
    run_id: str
    report_digest: str = Field(pattern=_DIGEST, description="sha256 of report.json's bytes.")
    traces: dict[str, ManifestTrace] = Field(description="scenario id -> its trace.")
    signature: str | None = Field(
        default=None,
        pattern=_SIGNATURE,
        description="HMAC-SHA256 of the canonical JSON of every other field; null: unsigned.",
    )

    def signed_bytes(self) -> bytes:
        """What the signature covers: the canonical JSON of the manifest without it."""
        return canonical_json(self.model_dump(mode="json", exclude={"signature"}))


def bytes_digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def build_manifest(
    run_id: str,
    traces: Mapping[str, ManifestTrace],
    report_bytes: bytes | None = None,
    *,
    key: bytes | None,
    report_digest: str | None = None,
) -> RunManifest:
    """The manifest of a run just written; signed when a key is given. The report is given
    as its bytes, or as their digest (`bytes_digest` form) when it was written in pieces."""
    if report_digest is None:
        if report_bytes is None:
            raise ValueError("build_manifest needs the report's bytes or their digest")
        report_digest = bytes_digest(report_bytes)
    manifest = RunManifest(run_id=run_id, report_digest=report_digest, traces=dict(traces))
    if not key:
        return manifest
    return manifest.model_copy(update={"signature": _sign(manifest.signed_bytes(), key)})


def manifest_chunks(
    run_id: str,
    traces: Iterable[tuple[str, str, str]],
    *,
    key: bytes | None,
    report_digest: str,
) -> Iterator[str]:
    """`build_manifest(...).model_dump_json(indent=2)` in pieces, signed the same way, from
    (scenario id, file, digest) in sorted id order: a big run's manifest is never held whole.
    The signature's canonical JSON is fed to the HMAC as the entries go by."""
    if not re.fullmatch(_DIGEST, report_digest):
        raise ValueError(f"not a report digest: {report_digest!r}")
    mac = hmac.new(key, digestmod=hashlib.sha256) if key else None

    def signed(text: str) -> None:
        if mac is not None:
            mac.update(text.encode("utf-8"))

    signed(f'{{"report_digest":{_str(report_digest)},"run_id":{_str(run_id)},"traces":{{')
    yield (
        f'{{\n  "version": {MANIFEST_VERSION},\n  "run_id": {_str(run_id)},\n'
        f'  "report_digest": {_str(report_digest)},\n  "traces": {{'
    )
    last: str | None = None
    for sid, file, digest in traces:
        if last is not None and sid <= last:
            raise ValueError(f"manifest entries out of order: {sid!r} after {last!r}")
        if not re.fullmatch(_DIGEST, digest):
            raise ValueError(f"not a trace digest: {digest!r}")
        signed(
            f"{',' if last is not None else ''}{_str(sid)}:"
            f'{{"digest":{_str(digest)},"file":{_str(file)}}}'
        )
        yield (
            f"{',' if last is not None else ''}\n    {_str(sid)}: {{\n"
            f'      "file": {_str(file)},\n      "digest": {_str(digest)}\n    }}'
        )
        last = sid
    signed(f'}},"version":{MANIFEST_VERSION}}}')
    signature = "null" if mac is None else _str(f"{SIGNATURE_ALG}:" + mac.hexdigest())
    yield f'{"" if last is None else chr(10) + "  "}}},\n  "signature": {signature}\n}}'


def _str(text: str) -> str:
    """A JSON string as both pydantic's writer and canonical JSON spell it."""
    return json.dumps(text, ensure_ascii=False)


def _sign(data: bytes, key: bytes) -> str:
    return f"{SIGNATURE_ALG}:" + hmac.new(key, data, hashlib.sha256).hexdigest()


def signature_problem(manifest: RunManifest, key: bytes | None) -> str | None:
    """Why a configured key does not accept this manifest; None when it does (or no key)."""
    if not key:
        return None
    if manifest.signature is None:
        return (
            f"the run is unsigned, but {REPORT_KEY_ENV} is set: a run gated with a key must be "
            "written with it (re-run the suite with the key)"
        )
    if not hmac.compare_digest(manifest.signature, _sign(manifest.signed_bytes(), key)):
        return (
            "the signature does not verify with the configured "
            f"{REPORT_KEY_ENV}: the manifest was changed or signed with another key"
        )
    return None
