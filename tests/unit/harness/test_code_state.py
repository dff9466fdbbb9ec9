"""What a shard and a merge record of their checkout and code (harness._code_state)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from harness._code_state import code_state, current_commit, source_digest, tree_state


def _git(root: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.email=t@t", "-c", "user.name=t", *args],
        cwd=root, check=True, capture_output=True,
    )  # fmt: skip


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "repo"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "rules.py").write_text("LIMIT = 1\n", encoding="utf-8")
    (root / ".gitignore").write_text("ignored/\n", encoding="utf-8")
    _git(root, "init", "-q")
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "a")
    monkeypatch.chdir(root)
    return root


def test_a_clean_checkout_is_not_dirty(repo: Path) -> None:
    state = tree_state()
    assert state is not None and not state.dirty and state.digest is None


def test_an_edited_tracked_file_makes_the_tree_dirty_and_its_digest_follows_the_edit(
    repo: Path,
) -> None:
    commit = current_commit()
    (repo / "pkg" / "rules.py").write_text("LIMIT = 2\n", encoding="utf-8")
    first = tree_state()
    assert first is not None and first.dirty and first.digest is not None
    (repo / "pkg" / "rules.py").write_text("LIMIT = 3\n", encoding="utf-8")
    second = tree_state()
    assert second is not None and second.dirty and second.digest != first.digest
    _git(repo, "add", "-A")  # staged changes are still not the commit
    assert tree_state() == second
    assert current_commit() == commit  # HEAD alone cannot tell


def test_an_untracked_python_file_makes_the_tree_dirty(repo: Path) -> None:
    (repo / "pkg" / "shadow.py").write_text("x = 1\n", encoding="utf-8")
    state = tree_state()
    assert state is not None and state.dirty


def test_untracked_reports_and_ignored_files_leave_the_tree_clean(repo: Path) -> None:
    # Shard report directories are written into the checkout: they must not count.
    (repo / "reports" / "shard-1").mkdir(parents=True)
    (repo / "reports" / "shard-1" / "report.json").write_text("{}", encoding="utf-8")
    (repo / "ignored").mkdir()
    (repo / "ignored" / "cached.py").write_text("x = 1\n", encoding="utf-8")
    state = tree_state()
    assert state is not None and not state.dirty and state.digest is None


def test_outside_a_repository_there_is_no_commit_and_no_tree(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path.parent))
    assert current_commit() is None
    assert tree_state() is None


def test_the_source_digest_follows_every_file_but_not_caches_or_type_markers(
    tmp_path: Path,
) -> None:
    pkg = tmp_path / "harness"
    pkg.mkdir()
    (pkg / "_gate.py").write_text("LIMIT = 1\n", encoding="utf-8")
    (pkg / "policy.yaml").write_text("rules: []\n", encoding="utf-8")
    before = source_digest([pkg])
    (pkg / "__pycache__").mkdir()
    (pkg / "__pycache__" / "_gate.cpython-312.pyc").write_bytes(b"\0")
    (pkg / "py.typed").write_bytes(b"")  # in a checkout, not in the wheel
    assert source_digest([pkg]) == before
    (pkg / "policy.yaml").write_text("rules: [deny]\n", encoding="utf-8")
    assert source_digest([pkg]) != before
    (pkg / "policy.yaml").write_text("rules: []\n", encoding="utf-8")
    (pkg / "_gate.py").rename(pkg / "_gate2.py")  # a renamed module is other code
    assert source_digest([pkg]) != before


def test_the_code_record_names_this_proctor_and_python() -> None:
    import platform

    record = code_state()
    assert record.python == f"{platform.python_implementation()} {platform.python_version()}"
    assert record.proctor not in ("", "(not installed)")
