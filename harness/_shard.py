"""Sharded runs: which scenarios `--shard I/N` runs, and what a shard records for the merge.

The partition is by a stable hash of the scenario id: scenario `s` is in shard
`int(sha256(s)[:8 bytes]) mod N + 1`. Adding, removing or reordering other scenarios never moves
`s` to another shard (the property a CI cache or a flaky-shard re-run relies on); the price is
balance: shard sizes are binomial, not equal (85 scenarios in 3 shards: 28 +- 4 each), and a
slow scenario is not balanced against fast ones. Round-robin by suite position would balance
counts exactly but move most scenarios whenever one is inserted.

A shard runs what the selectors (`--id`, `-k`, `--tag`, `--limit`) select from the suite,
partitioned: the selection is applied first, on the whole suite, then the partition. So the
merge of `--limit 10 --shard I/3` for I = 1..3 is the unsharded `--limit 10` run.

`shard.json` (written last into a shard's report directory) is what the merge needs to refuse a
mismatch: the shard, the ids it ran, the digest of the whole selected suite, the commit and the
uncommitted changes of the checkout, the code that ran (Proctor, Python, the dependencies, a
digest of the harness and governance source), the baseline and the options that change results.
It is bound to the run by the digest of report.json (which the run's manifest pins together
with the traces) and, with `PROCTOR_REPORT_KEY`, signed like the manifest.

Not recorded, because it cannot change a replay shard's results: the environment. A replay run
reads no PROCTOR_* setting that changes its suite, scoring or gate (the run command has no
env-backed option; PROCTOR_LLM_* and .env are for live providers, which --shard refuses;
PROCTOR_REPORT_KEY only signs; PROCTOR_CACHE_* caches parsed scenario files, whose results the
suite digest covers; scenario gateways ignore the audit/approvals keys), and traces are
byte-identical across hash seeds and -j. The one reader is an MCP server a scenario launches:
it inherits the environment. What it answered is in the traces, which the merge gates; a digest
of the whole environment would differ in every CI job (host, job id) and refuse every merge.

Pure: no file or environment access here.
"""

from __future__ import annotations

import hashlib
import hmac
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final, Literal

from pydantic import BaseModel, ConfigDict, Field

from governance import canonical_json
from harness._errors import UsageProblem
from harness._select import Selected

SHARD_RECORD_NAME = "shard.json"
PARTITION: Final = "sha256(scenario id) mod N"
_FORM = re.compile(r"([0-9]{1,6})/([0-9]{1,6})")
_DIGEST = r"^sha256:[0-9a-f]{64}$"
_SIGNATURE = r"^hmac-sha256:[0-9a-f]{64}$"


class ShardSpecError(UsageProblem):
    """`--shard` is not `I/N` with 1 <= I <= N (exit 64)."""


@dataclass(frozen=True, slots=True)
class Shard:
    index: int  # 1-based
    count: int

    @classmethod
    def parse(cls, text: str) -> Shard:
        found = _FORM.fullmatch(text.strip())
        if found is None:
            raise ShardSpecError(
                f"--shard {text!r}: expected I/N, the I-th of N shards with 1 <= I <= N "
                "(e.g. --shard 1/3)"
            )
        index, count = int(found.group(1)), int(found.group(2))
        if count < 1 or not 1 <= index <= count:
            raise ShardSpecError(
                f"--shard {text!r}: expected I/N with 1 <= I <= N (e.g. --shard 1/3, "
                f"--shard {count or 1}/{count or 1})"
            )
        return cls(index, count)

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"

    def holds(self, scenario_id: str) -> bool:
        return shard_of(scenario_id, self.count) == self.index


def shard_of(scenario_id: str, count: int) -> int:
    """The 1-based shard of `scenario_id` among `count`: a function of the id alone."""
    head = hashlib.sha256(scenario_id.encode("utf-8")).digest()[:8]
    return int.from_bytes(head, "big") % count + 1


@dataclass(frozen=True, slots=True)
class ShardSelected(Selected):
    """A shard's part of the run, as its reports state it (a `Selected`: the partial-run
    machinery shows it and scopes coverage to it)."""

    shard: str = ""

    def describe(self) -> str:
        return (
            f"SHARD {self.shard}: {len(self.ids)} of {self.total} scenarios ({PARTITION}"
            f"{', after ' + ' '.join(self.flags) if self.flags else ''}); NOT GATED here: "
            "`proctor merge` of all shards scores and gates the whole suite"
        )


# -- shard.json ---------------------------------------------------------------------------------


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class SelectionRecord(_Model):
    ids: list[str] = []
    expression: str | None = None
    tags: list[str] = []
    limit: int | None = None


class BaselineRecord(_Model):
    path: str | None = Field(description="The baseline file as given (null: not gated).")
    ref: str | None = Field(default=None, description="The git ref it was read from, if any.")
    digest: str | None = Field(
        default=None,
        pattern=_DIGEST,
        description="Digest of the baseline and the acknowledgements that count with it.",
    )


class ShardOptions(_Model):
    """The options that change a run's results: the merge gates with these."""

    provider: str
    scenarios: list[str] = Field(description="--scenarios as given (empty: the default).")
    selection: SelectionRecord
    fail_on_drift: bool


class TreeRecord(_Model):
    """The checkout's uncommitted changes: `commit` alone says nothing about an edited tree."""

    dirty: bool
    digest: str | None = Field(
        default=None,
        pattern=_DIGEST,
        description="Digest of `git diff HEAD` and the untracked Python files (null: clean).",
    )


class CodeRecord(_Model):
    """The code that ran and scores: a merge by other code gates old results with new rules."""

    proctor: str = Field(description="The installed Proctor's version.")
    python: str = Field(description="Implementation and version, e.g. CPython 3.12.3.")
    dependencies: str = Field(pattern=_DIGEST, description="Digest of the runtime deps' versions.")
    source: str = Field(pattern=_DIGEST, description="Digest of the harness and governance files.")


class ShardRecord(_Model):
    version: Literal[2] = 2
    index: int = Field(ge=1)
    count: int = Field(ge=1)
    partition: Literal["sha256(scenario id) mod N"] = PARTITION
    run_id: str
    scenario_ids: list[str] = Field(description="What this shard ran, in suite order.")
    suite_digest: str = Field(pattern=_DIGEST, description="The whole selected suite's.")
    suite_size: int = Field(ge=0)
    commit: str | None = Field(description="git HEAD where the shard ran (null: no repo).")
    tree: TreeRecord | None = Field(description="Its uncommitted changes (null: no repo).")
    code: CodeRecord
    baseline: BaselineRecord
    options: ShardOptions
    report_digest: str = Field(pattern=_DIGEST, description="sha256 of report.json's bytes.")
    signature: str | None = Field(default=None, pattern=_SIGNATURE)

    def signed_bytes(self) -> bytes:
        return canonical_json(self.model_dump(mode="json", exclude={"signature"}))

    def signed(self, key: bytes | None) -> ShardRecord:
        if not key:
            return self
        return self.model_copy(update={"signature": _sign(self.signed_bytes(), key)})

    def signature_problem(self, key: bytes | None) -> str | None:
        """Why the key (PROCTOR_REPORT_KEY, or None) does not accept this record; None when it
        does. A signed record needs the key: skipping its signature would accept any edit."""
        if not key:
            if self.signature is not None:
                return "the shards are signed; set PROCTOR_REPORT_KEY to verify them"
            return None
        if self.signature is None:
            return "unsigned, but PROCTOR_REPORT_KEY is set: run the shard with the key"
        if not hmac.compare_digest(self.signature, _sign(self.signed_bytes(), key)):
            return "its signature does not verify with PROCTOR_REPORT_KEY: changed, or another key"
        return None

    @property
    def shard(self) -> str:
        return f"{self.index}/{self.count}"


def _sign(data: bytes, key: bytes) -> str:
    return "hmac-sha256:" + hmac.new(key, data, hashlib.sha256).hexdigest()


def suite_digest(entries: Iterable[tuple[str, str, str]]) -> str:
    """Digest of a suite from (scenario id, inputs digest, definition digest) in suite order."""
    hasher = hashlib.sha256()
    for sid, inputs, definition in entries:
        hasher.update(canonical_json([sid, inputs, definition]))
        hasher.update(b"\n")
    return "sha256:" + hasher.hexdigest()
