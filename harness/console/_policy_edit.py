"""The Policies page's logic, without HTTP: load the policy file, validate a draft as the
operator types, explain a sample call, and save.

A save replaces the file the gateway reads (its `PolicyFile` re-reads on every call, so the
next call decides under the new policy, with no restart) or changes nothing at all: it is
refused when the draft does not pass `proctor policy check`'s checks, when it is empty, when
the file changed since the editor loaded it (a lost update: the current digest is returned),
when the file is gone or unreadable, when the write fails, and always when the console runs on
the shipped policy (it must be started with `--policy FILE`, a copy the operator owns).

Every save is an audit event `policy.changed` on the chain `policy-changes` (who, old and new
digests, a bounded unified diff; the audit log redacts secrets in it); every refused save is a
`policy.change_refused` event there too (who, why): an operator probing what the console
accepts leaves a trace.
"""

from __future__ import annotations

import difflib
import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from governance import AuditWriteError, PolicyError, Principal, RunUsage
from governance.config import decode_text
from governance.policy import parse_policy
from harness._policy_explain import explain_call
from harness.cli._options import shipped_policy_path
from harness.console._policy_file import (
    FileChangedError,
    file_digest,
    read_bytes,
    replace_file,
    save_lock,
)
from harness.console._policy_problems import Problem, Validation, validate_text

if TYPE_CHECKING:
    from governance import Gateway
    from governance.stores import AuditBackend
    from governance.tools import ToolRegistry

CHANGES_RUN = "policy-changes"
CHANGED = "policy.changed"
REFUSED = "policy.change_refused"
MAX_DIFF_CHARS = 20_000  # an audit event stays small; the file itself holds the full text
MAX_OPERATOR_CHARS = 200

RefusalReason = Literal[
    "read_only", "invalid", "empty", "conflict", "missing", "unreadable", "write_failed",
    "audit_failed",
]  # fmt: skip


@dataclass(frozen=True, slots=True)
class LoadedPolicy:
    """What the editor opens with: the text, the digest to send back with a save."""

    path: str
    text: str | None  # None: the file is gone or unreadable (`problem` says why)
    digest: str | None
    editable: bool
    read_only_reason: str | None
    validation: Validation | None
    problem: str | None = None

    def as_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "text": self.text,
            "digest": self.digest,
            "editable": self.editable,
            "read_only_reason": self.read_only_reason,
            "validation": self.validation.as_json() if self.validation else None,
            "problem": self.problem,
        }


@dataclass(frozen=True, slots=True)
class SaveResult:
    """`saved` (the file holds the draft), `unchanged` (it already did) or `refused`."""

    outcome: Literal["saved", "unchanged", "refused"]
    message: str
    digest: str | None  # the file's digest now: the one to send with the next save
    reason: RefusalReason | None = None
    old_digest: str | None = None
    new_digest: str | None = None
    policy_digest: str | None = None
    diff: str | None = None
    problems: tuple[Problem, ...] = ()
    audited: bool = False
    event_seq: int | None = None

    def as_json(self) -> dict[str, Any]:
        return {
            "outcome": self.outcome,
            "reason": self.reason,
            "message": self.message,
            "digest": self.digest,
            "old_digest": self.old_digest,
            "new_digest": self.new_digest,
            "policy_digest": self.policy_digest,
            "diff": self.diff,
            "problems": [problem.as_json() for problem in self.problems],
            "audited": self.audited,
            "event_seq": self.event_seq,
        }


@dataclass(frozen=True, slots=True)
class SampleCall:
    """The facts `proctor policy explain` takes: a tool, JSON arguments, who proposes it."""

    tool: str
    arguments: Mapping[str, Any] = field(default_factory=dict)
    actor: str = "console"
    agent: str = "console"
    team: str = "console"
    tokens_used: int = 0
    tainted: bool = False

    @classmethod
    def from_json_arguments(cls, tool: str, arguments_json: str, **facts: Any) -> SampleCall:
        """From the page's form: the arguments as the operator typed them (ValueError when they
        are not a JSON object, naming the problem)."""
        try:
            arguments = json.loads(arguments_json or "{}")
        except json.JSONDecodeError as exc:
            raise ValueError(f"the arguments are not valid JSON: {exc}") from None
        except RecursionError:
            raise ValueError("the arguments nest too deeply") from None
        if not isinstance(arguments, dict):
            raise ValueError("the arguments must be a JSON object ({...})")
        return cls(tool=tool, arguments=arguments, **facts)


class PolicyEditor:
    """Edits the policy file one gateway reads. `policy_path=None` means the console runs on
    the shipped policy: it can be read and explained, never saved."""

    def __init__(
        self,
        *,
        policy_path: Path | None,
        registry: ToolRegistry,
        audit: AuditBackend,
        mcp_known: bool | Callable[[], bool] = False,
    ) -> None:
        """`mcp_known`: whether `registry` holds every MCP tool a policy may name (asked on each
        validation when a callable: servers come up and go down)."""
        self._shipped = shipped_policy_path()
        self.path = policy_path if policy_path is not None else self._shipped
        self._registry = registry
        self._audit = audit
        self._mcp_known = mcp_known if callable(mcp_known) else lambda: mcp_known

    @classmethod
    def for_gateway(cls, gateway: Gateway, policy_path: Path | None) -> PolicyEditor:
        """The editor of the file `gateway` reads, judged against its tools. MCP tool names
        count as known only when every MCP server is up (a missing one's names would be
        refused as unknown; unjudged, they are reported as notes instead)."""

        def every_server_up() -> bool:
            sources = gateway.mcp_sources
            return bool(sources) and all(source.status.state == "up" for source in sources)

        return cls(
            policy_path=policy_path,
            registry=gateway.registry,
            audit=gateway.audit,
            mcp_known=every_server_up,
        )

    @property
    def read_only_reason(self) -> str | None:
        """Why saving is refused whatever the draft, or None when the file may be saved."""
        if not _same_file(self.path, self._shipped):
            return None
        return (
            f"the console runs on the shipped policy ({self._shipped}), which it never "
            "overwrites: copy it (cp "
            f"{self._shipped} my-policy.yaml) and start the console with "
            "`proctor console --policy my-policy.yaml`"
        )

    def load(self) -> LoadedPolicy:
        reason = self.read_only_reason
        try:
            raw = read_bytes(self.path)
            text = decode_text(raw, str(self.path), PolicyError, subject="policy")
        except (FileNotFoundError, PolicyError) as exc:
            return LoadedPolicy(
                str(self.path), None, None, False, reason, None, problem=_unreadable(self.path, exc)
            )
        return LoadedPolicy(
            str(self.path), text, file_digest(raw), reason is None, reason, self.validate(text)
        )

    def validate(self, text: str) -> Validation:
        """`proctor policy check`'s verdict on `text`, as if it were the policy file."""
        known = [descriptor.name for descriptor in self._registry.descriptors()]
        return validate_text(text, known, mcp_known=self._mcp_known(), shown=self.path.name)

    def explain(self, sample: SampleCall, text: str | None = None) -> dict[str, Any]:
        """How `text` (None: the file as it is now) decides `sample`, as `proctor policy
        explain --json` prints it, under `explanation`; or `ok: false` with the problems."""
        if text is None:
            try:
                raw = read_bytes(self.path)
                text = decode_text(raw, str(self.path), PolicyError, subject="policy")
            except (FileNotFoundError, PolicyError) as exc:
                return {"ok": False, "error": _unreadable(self.path, exc), "problems": []}
        try:
            policy = parse_policy(text, self.path.name)
        except PolicyError:
            problems = self.validate(text).problems
            error = "the policy does not parse: fix its problems to explain a call under it"
            return {"ok": False, "error": error, "problems": [p.as_json() for p in problems]}
        descriptor = self._registry.get(sample.tool)
        outcome = explain_call(
            policy,
            sample.tool,
            sample.arguments,
            descriptor=descriptor,
            registry_digest=self._registry.digest,
            principal=Principal(actor=sample.actor, agent=sample.agent, team=sample.team),
            usage=RunUsage(tokens_used=sample.tokens_used, tainted=sample.tainted),
        )
        return {"ok": True, "explanation": outcome.as_json()}

    def save(self, text: str, expected_digest: str | None, operator: str) -> SaveResult:
        """Replace the policy file with `text` if it validates and the file still has
        `expected_digest` (what `load` returned); see the module docstring."""
        operator = _checked_operator(operator)
        reason = self.read_only_reason
        if reason is not None:
            return self._refuse(operator, "read_only", f"saving is refused: {reason}", None)
        validation = self.validate(text)
        if validation.empty:
            message = "the draft is empty: a policy needs `version: 1` and at least one rule"
            return self._refuse(operator, "empty", message, None, validation.problems)
        if not validation.ok:
            first = validation.problems[0]
            where = f"line {first.line}: " if first.line is not None else ""
            message = (
                f"the draft does not validate ({len(validation.problems)} problem"
                f"{'s' if len(validation.problems) != 1 else ''}; {where}{first.message}); "
                "the policy in force is unchanged"
            )
            return self._refuse(operator, "invalid", message, None, validation.problems)
        target = Path(os.path.realpath(self.path))  # a symlinked policy keeps its link
        try:
            with save_lock(target):
                return self._replace(target, text.encode("utf-8"), expected_digest, operator,
                                     validation)  # fmt: skip
        except FileNotFoundError as exc:  # its directory is gone too: no lock file can be made
            message = f"{_unreadable(self.path, exc)}; nothing was written"
            return self._refuse(operator, "missing", message, None)
        except OSError as exc:  # the lock file could not be made: nothing was read or written
            message = (
                f"could not lock {self.path} for the save ({exc.strerror or exc}): the file and "
                "the policy in force are unchanged"
            )
            return self._refuse(operator, "write_failed", message, None)

    def _replace(
        self,
        target: Path,
        new: bytes,
        expected_digest: str | None,
        operator: str,
        validation: Validation,
    ) -> SaveResult:
        """The save itself, under the save lock: compare digests, replace, audit."""
        try:
            old = read_bytes(target)
        except (FileNotFoundError, PolicyError) as exc:
            gone: RefusalReason = "missing" if isinstance(exc, FileNotFoundError) else "unreadable"
            message = f"{_unreadable(self.path, exc)}; nothing was written"
            return self._refuse(operator, gone, message, None)
        current = file_digest(old)
        if current != expected_digest:
            message = (
                "the policy file changed since the editor loaded it (loaded "
                f"{expected_digest or 'nothing'}, now {current}): nothing was written; "
                "reload it and apply your change again"
            )
            return self._refuse(operator, "conflict", message, current)
        if new == old:
            return SaveResult("unchanged", "the file already holds this text", current)
        try:
            replace_file(target, new, unchanged=lambda: _digest_now(target) == current)
        except FileChangedError:
            now = _digest_now(target)
            message = (
                f"the policy file was edited on disk during the save (now {now}): nothing "
                "was written; reload it and apply your change again"
            )
            return self._refuse(operator, "conflict", message, now)
        except OSError as exc:
            message = (
                f"could not write {self.path} ({exc.strerror or exc}): the file and the "
                "policy in force are unchanged"
            )
            return self._refuse(operator, "write_failed", message, current)
        return self._record_change(target, operator, old, new, validation)

    def _record_change(
        self, target: Path, operator: str, old: bytes, new: bytes, validation: Validation
    ) -> SaveResult:
        """Audit the replace just made; when that fails, put the old bytes back (a policy
        change nobody can account for must not stay in force)."""
        old_digest, new_digest = file_digest(old), file_digest(new)
        diff = bounded_diff(old, new, self.path.name)
        policy_digest = validation.policy.digest if validation.policy is not None else None
        try:
            event = self._audit.append(
                CHANGES_RUN,
                CHANGED,
                {
                    "operator": operator,
                    "path": str(self.path),
                    "old_digest": old_digest,
                    "new_digest": new_digest,
                    "old_policy_digest": _policy_digest(old, self.path.name),
                    "new_policy_digest": policy_digest,
                    "diff": diff,
                },
            )
        except AuditWriteError as exc:
            return self._roll_back(target, old, new_digest, exc)
        return SaveResult(
            "saved",
            f"saved: the next call is decided under policy {policy_digest}",
            new_digest,
            old_digest=old_digest,
            new_digest=new_digest,
            policy_digest=policy_digest,
            diff=diff,
            audited=True,
            event_seq=event.seq,
        )

    def _roll_back(
        self, target: Path, old: bytes, new_digest: str, error: AuditWriteError
    ) -> SaveResult:
        try:
            replace_file(target, old, unchanged=lambda: _digest_now(target) == new_digest)
        except (OSError, FileChangedError) as exc:
            message = (
                f"the change could not be audited ({error}) and the old policy could not be "
                f"put back ({exc}): the new policy is in force, unaudited; restore the file"
            )
            return SaveResult("refused", message, new_digest, reason="audit_failed")
        message = f"the change could not be audited ({error}): the old policy was put back"
        return SaveResult("refused", message, file_digest(old), reason="audit_failed")

    def _refuse(
        self,
        operator: str,
        reason: RefusalReason,
        message: str,
        current: str | None,
        problems: tuple[Problem, ...] = (),
    ) -> SaveResult:
        audited, seq = False, None
        try:
            event = self._audit.append(
                CHANGES_RUN,
                REFUSED,
                {"operator": operator, "path": str(self.path), "reason": reason,
                 "message": message[:2000]},
            )  # fmt: skip
            audited, seq = True, event.seq
        except AuditWriteError:
            pass  # refused either way: nothing changed that needs accounting for
        return SaveResult(
            "refused", message, current, reason=reason, problems=problems, audited=audited,
            event_seq=seq,
        )  # fmt: skip


def bounded_diff(old: bytes, new: bytes, name: str) -> str:
    """A unified diff of two policy texts, cut at MAX_DIFF_CHARS with a note saying so."""
    lines = difflib.unified_diff(
        old.decode("utf-8", "replace").splitlines(keepends=True),
        new.decode("utf-8", "replace").splitlines(keepends=True),
        fromfile=f"a/{name}",
        tofile=f"b/{name}",
    )
    text = "".join(line if line.endswith("\n") else f"{line}\n" for line in lines)
    if len(text) <= MAX_DIFF_CHARS:
        return text
    cut = len(text) - MAX_DIFF_CHARS
    return f"{text[:MAX_DIFF_CHARS]}\n... (diff cut: {cut} more characters)\n"


def _policy_digest(raw: bytes, shown: str) -> str | None:
    """The digest of the policy `raw` holds, or None when it does not parse (a file that had
    turned bad before this save)."""
    try:
        return parse_policy(decode_text(raw, shown, PolicyError, subject="policy"), shown).digest
    except PolicyError:
        return None


def _digest_now(path: Path) -> str | None:
    try:
        return file_digest(read_bytes(path))
    except (FileNotFoundError, PolicyError):
        return None


def _same_file(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.realpath(a) == os.path.realpath(b)


def _unreadable(path: Path, exc: Exception) -> str:
    if isinstance(exc, FileNotFoundError):
        return (
            f"the policy file {path} is gone (deleted or moved): every call is blocked until "
            "it is restored"
        )
    return f"the policy file cannot be read: {exc}"


def _checked_operator(operator: str) -> str:
    """Who saves: a name the session carries. An empty or outsized one is a caller's bug."""
    name = operator.strip() if isinstance(operator, str) else ""
    if not name or len(name) > MAX_OPERATOR_CHARS or not name.isprintable():
        raise ValueError(f"a save needs the operator's name, not {operator!r}")
    return name
