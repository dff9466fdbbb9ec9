"""Saving: the running gateway's next call decides under the new policy, or nothing changes
at all; every save and every refusal is on the `policy-changes` audit chain."""

from __future__ import annotations

import errno
import json
import os
import shutil
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

import harness.console._policy_edit as policy_edit
from governance import AuditWriteError, Gateway
from governance.stores import MemoryAuditLog
from governance.tools import builtin_registry
from harness.cli._options import shipped_policy_path
from harness.console._policy_edit import (
    CHANGED,
    CHANGES_RUN,
    MAX_DIFF_CHARS,
    REFUSED,
    PolicyEditor,
)
from tests.child_processes import run_python_children
from tests.fake_secrets import GITHUB, leaked
from tests.unit.harness.console.policy_editing import POLICY, read_notes

BLOCKING = POLICY.replace("effect: allow", "effect: block")


def _events(audit: Any) -> list[tuple[str, Mapping[str, Any]]]:
    return [(event.kind, event.data) for event in audit.events(CHANGES_RUN)]


def _leftovers(directory: Path) -> list[str]:
    """Files a save may leave beside the policy besides its lock: none."""
    return sorted(p.name for p in directory.iterdir() if not p.name.endswith(".lock"))


def test_a_save_applies_to_the_running_gateways_next_call_without_a_restart(
    gateway: Gateway, policy_path: Path
) -> None:
    editor = PolicyEditor.for_gateway(gateway, policy_path)
    assert read_notes(gateway, "c1") == "executed"
    loaded = editor.load()
    assert loaded.editable and loaded.text == POLICY
    result = editor.save(BLOCKING, loaded.digest, "dana")
    assert result.outcome == "saved", result.message
    assert read_notes(gateway, "c2") == "blocked"
    assert result.digest == editor.load().digest != loaded.digest
    [(kind, data)] = _events(gateway.audit)
    assert kind == CHANGED
    assert data["operator"] == "dana"
    assert (data["old_digest"], data["new_digest"]) == (loaded.digest, result.digest)
    assert data["new_policy_digest"] == gateway.policy.current().digest
    assert "-    effect: allow\n+    effect: block\n" in data["diff"]
    assert gateway.audit.verify(CHANGES_RUN).ok


def test_the_text_round_trips_byte_for_byte_markup_and_comments_included(
    editor: PolicyEditor, policy_path: Path
) -> None:
    text = BLOCKING.replace("fine", "fine\u00e9 \u2014 <b>bold</b> & 'quoted'") + "# trailer\n"
    loaded = editor.load()
    assert loaded.text == POLICY and "<script>alert(1)</script>" in loaded.text
    assert editor.save(text, loaded.digest, "dana").outcome == "saved"
    assert policy_path.read_bytes() == text.encode("utf-8")
    assert editor.load().text == text


def test_a_draft_that_does_not_validate_is_refused_and_the_old_policy_stays_in_force(
    gateway: Gateway, policy_path: Path
) -> None:
    editor = PolicyEditor.for_gateway(gateway, policy_path)
    digest = editor.load().digest
    before = policy_path.read_bytes()
    drafts = {
        "yaml": BLOCKING.replace("effect: block", "effect: [block"),
        "schema": BLOCKING.replace("effect: block", "effect: blok"),
        "contract": BLOCKING.replace("tool: fs.read", "tool: fs.reed"),
    }
    for kind, draft in drafts.items():
        result = editor.save(draft, digest, "dana")
        assert (result.outcome, result.reason) == ("refused", "invalid")
        assert [p.kind for p in result.problems] == [kind]
        assert result.problems[0].line is not None
        assert f"line {result.problems[0].line}" in result.message
        assert policy_path.read_bytes() == before
        assert read_notes(gateway, f"c-{kind}") == "executed"
    assert [(k, d["reason"], d["operator"]) for k, d in _events(gateway.audit)] == [
        (REFUSED, "invalid", "dana")
    ] * 3
    assert _leftovers(policy_path.parent) == [policy_path.name]


@pytest.mark.parametrize("draft", ["", "\n\n", "# everything commented out\n#version: 1\n"])
def test_an_empty_draft_is_refused(editor: PolicyEditor, policy_path: Path, draft: str) -> None:
    result = editor.save(draft, editor.load().digest, "dana")
    assert (result.outcome, result.reason) == ("refused", "empty")
    assert policy_path.read_text(encoding="utf-8") == POLICY


def test_a_stale_digest_is_a_lost_update_refused_with_the_current_digest(
    editor: PolicyEditor, policy_path: Path, audit: MemoryAuditLog
) -> None:
    loaded = editor.load()
    manual = POLICY.replace("notes/", "reports/")
    policy_path.write_text(manual, encoding="utf-8")  # someone edits the file by hand
    result = editor.save(BLOCKING, loaded.digest, "dana")
    assert (result.outcome, result.reason) == ("refused", "conflict")
    assert result.digest == editor.load().digest != loaded.digest
    assert str(result.digest) in result.message and "changed since the editor loaded it" in (
        result.message
    )
    assert policy_path.read_text(encoding="utf-8") == manual
    assert [(k, d["reason"]) for k, d in _events(audit)] == [(REFUSED, "conflict")]


def test_an_edit_on_disk_during_the_write_abandons_the_save(
    editor: PolicyEditor, policy_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    loaded = editor.load()
    manual = POLICY.replace("notes/", "reports/")
    real_fsync = os.fsync

    def edit_by_hand_then_fsync(fd: int) -> None:
        # The temporary file is written; a hand edit lands before the rename.
        if policy_path.read_text(encoding="utf-8") != manual:
            policy_path.write_text(manual, encoding="utf-8")
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", edit_by_hand_then_fsync)
    result = editor.save(BLOCKING, loaded.digest, "dana")
    monkeypatch.undo()
    assert (result.outcome, result.reason) == ("refused", "conflict")
    assert "edited on disk during the save" in result.message
    assert policy_path.read_text(encoding="utf-8") == manual
    assert _leftovers(policy_path.parent) == [policy_path.name]


def test_saving_the_text_already_on_disk_changes_nothing_and_records_nothing(
    editor: PolicyEditor, policy_path: Path, audit: MemoryAuditLog
) -> None:
    loaded = editor.load()
    inode = policy_path.stat().st_ino
    result = editor.save(POLICY, loaded.digest, "dana")
    assert (result.outcome, result.digest) == ("unchanged", loaded.digest)
    assert policy_path.stat().st_ino == inode
    assert _events(audit) == []


def test_the_console_on_the_shipped_policy_is_read_only(tmp_path: Path) -> None:
    editor = PolicyEditor(policy_path=None, registry=builtin_registry(), audit=MemoryAuditLog())
    loaded = editor.load()
    assert loaded.path == str(shipped_policy_path()) and not loaded.editable
    assert loaded.text == shipped_policy_path().read_text(encoding="utf-8")
    assert loaded.read_only_reason is not None
    assert "proctor console --policy" in loaded.read_only_reason


def test_saving_the_shipped_policy_is_refused_by_any_path_to_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A stand-in for the shipped file: a regression here must not overwrite the real one.
    shipped = tmp_path / "package" / "default_policy.yaml"
    shipped.parent.mkdir()
    shipped.write_bytes(shipped_policy_path().read_bytes())
    before = shipped.read_bytes()
    monkeypatch.setattr(policy_edit, "shipped_policy_path", lambda: shipped)
    link = tmp_path / "policy.yaml"
    link.symlink_to(shipped)
    for given in (None, shipped, link, tmp_path / "package" / ".." / "package" / shipped.name):
        audit = MemoryAuditLog()
        editor = PolicyEditor(policy_path=given, registry=builtin_registry(), audit=audit)
        loaded = editor.load()
        assert not loaded.editable and loaded.text == before.decode("utf-8")
        result = editor.save(before.decode() + "# mine\n", loaded.digest, "dana")
        assert (result.outcome, result.reason) == ("refused", "read_only")
        assert "proctor console --policy" in result.message
        assert [(k, d["reason"]) for k, d in _events(audit)] == [(REFUSED, "read_only")]
    assert shipped.read_bytes() == before


def test_a_file_deleted_under_the_editor_is_not_recreated(
    editor: PolicyEditor, policy_path: Path, audit: MemoryAuditLog
) -> None:
    digest = editor.load().digest
    policy_path.unlink()
    result = editor.save(BLOCKING, digest, "dana")
    assert (result.outcome, result.reason) == ("refused", "missing")
    assert "is gone" in result.message and not policy_path.exists()
    loaded = editor.load()
    assert loaded.text is None and loaded.problem is not None and "is gone" in loaded.problem
    assert [d["reason"] for _, d in _events(audit)] == ["missing"]


def test_a_policy_whose_directory_was_removed_under_the_editor_is_refused(
    editor: PolicyEditor, policy_path: Path
) -> None:
    digest = editor.load().digest
    shutil.rmtree(policy_path.parent)
    result = editor.save(BLOCKING, digest, "dana")
    assert (result.outcome, result.reason) == ("refused", "missing")
    assert not policy_path.parent.exists()


def test_a_policy_directory_where_no_lock_can_be_made_is_refused(
    editor: PolicyEditor, policy_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    digest = editor.load().digest
    real_open = os.open

    def no_lock_file(path: Any, *args: Any, **kwargs: Any) -> int:
        if str(path).endswith(".lock"):
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES))
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", no_lock_file)
    result = editor.save(BLOCKING, digest, "dana")
    monkeypatch.undo()
    assert (result.outcome, result.reason) == ("refused", "write_failed")
    assert "could not lock" in result.message
    assert policy_path.read_text(encoding="utf-8") == POLICY


def test_a_file_made_unreadable_under_the_editor_is_refused(
    editor: PolicyEditor, policy_path: Path
) -> None:
    digest = editor.load().digest
    policy_path.unlink()
    policy_path.mkdir()  # a directory where the file was: unreadable even to root
    result = editor.save(BLOCKING, digest, "dana")
    assert (result.outcome, result.reason) == ("refused", "unreadable")
    assert policy_path.is_dir()
    assert editor.load().text is None


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads a file whatever its mode")
def test_a_file_whose_permissions_forbid_reading_is_refused(
    editor: PolicyEditor, policy_path: Path
) -> None:
    digest = editor.load().digest
    policy_path.chmod(0)
    result = editor.save(BLOCKING, digest, "dana")
    assert (result.outcome, result.reason) == ("refused", "unreadable")
    policy_path.chmod(0o600)
    assert policy_path.read_text(encoding="utf-8") == POLICY


@pytest.mark.parametrize(
    ("failing", "code"), [("replace", errno.EACCES), ("fsync", errno.ENOSPC), ("write", errno.EIO)]
)
def test_a_failed_write_leaves_the_old_file_intact_and_no_temporary_file(
    gateway: Gateway,
    policy_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    failing: str,
    code: int,
) -> None:
    editor = PolicyEditor.for_gateway(gateway, policy_path)
    digest = editor.load().digest

    def fail(*_: object) -> None:
        raise OSError(code, os.strerror(code))

    monkeypatch.setattr(os, failing, fail)
    result = editor.save(BLOCKING, digest, "dana")
    monkeypatch.undo()
    assert (result.outcome, result.reason) == ("refused", "write_failed")
    assert os.strerror(code) in result.message
    assert policy_path.read_text(encoding="utf-8") == POLICY
    assert _leftovers(policy_path.parent) == [policy_path.name]
    assert read_notes(gateway, "c1") == "executed"
    assert [d["reason"] for _, d in _events(gateway.audit)] == ["write_failed"]


def test_a_save_keeps_the_files_mode_and_a_symlinked_policy_keeps_its_link(
    editor: PolicyEditor, policy_path: Path, tmp_path: Path
) -> None:
    policy_path.chmod(0o640)
    assert editor.save(BLOCKING, editor.load().digest, "dana").outcome == "saved"
    assert stat.S_IMODE(policy_path.stat().st_mode) == 0o640
    link = tmp_path / "linked.yaml"
    link.symlink_to(policy_path)
    linked = PolicyEditor(policy_path=link, registry=builtin_registry(), audit=MemoryAuditLog())
    assert linked.save(POLICY, linked.load().digest, "erin").outcome == "saved"
    assert link.is_symlink() and policy_path.read_text(encoding="utf-8") == POLICY


class _RefusingAudit(MemoryAuditLog):
    """An audit log whose disk is full for policy changes (refusals still fit)."""

    def append(self, run_id: str, kind: str, data: Mapping[str, Any]) -> Any:
        if kind == CHANGED:
            raise AuditWriteError("disk full")
        return super().append(run_id, kind, data)


def test_a_change_that_cannot_be_audited_is_rolled_back(policy_path: Path) -> None:
    audit = _RefusingAudit()
    editor = PolicyEditor(policy_path=policy_path, registry=builtin_registry(), audit=audit)
    loaded = editor.load()
    result = editor.save(BLOCKING, loaded.digest, "dana")
    assert (result.outcome, result.reason) == ("refused", "audit_failed")
    assert "put back" in result.message and result.digest == loaded.digest
    assert policy_path.read_text(encoding="utf-8") == POLICY


def test_the_audited_diff_is_bounded_and_redacted(
    editor: PolicyEditor, policy_path: Path, audit: MemoryAuditLog
) -> None:
    noisy = "".join(f"# padding line {n} {'x' * 60}\n" for n in range(600))
    secret = f"# deploy token: {GITHUB}\n{BLOCKING}"
    result = editor.save(secret + noisy, editor.load().digest, "dana")
    assert result.outcome == "saved" and result.diff is not None
    assert len(result.diff) < MAX_DIFF_CHARS + 100 and "diff cut" in result.diff
    [(_, data)] = _events(audit)
    assert leaked(str(data)) == []
    assert "effect: block" in data["diff"]


@pytest.mark.parametrize("operator", ["", "   ", "x" * 201, "ann\nroot"])
def test_a_save_without_a_proper_operator_name_is_a_bug_in_the_caller(
    editor: PolicyEditor, policy_path: Path, operator: str
) -> None:
    with pytest.raises(ValueError, match="operator"):
        editor.save(BLOCKING, editor.load().digest, operator)
    assert policy_path.read_text(encoding="utf-8") == POLICY


# A child process whose files may not grow past the policy's size (RLIMIT_FSIZE): the write of
# a longer draft fails for real, as on a full disk.
SMALL_DISK = """
import json, resource, signal, sys
from pathlib import Path
from governance.stores import MemoryAuditLog
from governance.tools import builtin_registry
from harness.console._policy_edit import PolicyEditor

path, text = Path(sys.argv[1]), sys.argv[2]
editor = PolicyEditor(policy_path=path, registry=builtin_registry(), audit=MemoryAuditLog())
digest = editor.load().digest
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
size = path.stat().st_size
resource.setrlimit(resource.RLIMIT_FSIZE, (size, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))
print(json.dumps(editor.save(text, digest, "dana").as_json()))
"""


def test_a_write_cut_short_by_a_real_file_size_limit_leaves_the_old_file(
    policy_path: Path,
) -> None:
    longer = BLOCKING + "".join(f"# note {n}\n" for n in range(200))
    [child] = run_python_children(SMALL_DISK, [[str(policy_path), longer]], timeout=60)
    assert child.returncode == 0, child.stderr
    result = json.loads(child.stdout)
    assert (result["outcome"], result["reason"]) == ("refused", "write_failed")
    assert "File too large" in result["message"]
    assert policy_path.read_text(encoding="utf-8") == POLICY
    assert _leftovers(policy_path.parent) == [policy_path.name]
