"""FileTree puts a directory back exactly as it was read, rewriting only what differs."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from harness._file_tree import FileTree


def _template(root: Path) -> FileTree:
    (root / "notes").mkdir(parents=True)
    (root / "notes" / "todo.txt").write_text("buy milk\n", encoding="utf-8")
    (root / "reports").mkdir()
    (root / "reports" / "q3.md").write_text("# Q3\n", encoding="utf-8")
    (root / "empty.txt").write_bytes(b"")
    return FileTree.read(root)


def _snapshot(root: Path) -> dict[str, tuple[str, int, bytes]]:
    """Every entry under `root`: kind, permission bits, bytes (a link: its target)."""
    found: dict[str, tuple[str, int, bytes]] = {}
    for path in sorted(root.rglob("*")):
        info = path.lstat()
        rel = path.relative_to(root).as_posix()
        if stat.S_ISLNK(info.st_mode):
            found[rel] = ("link", 0, os.readlink(path).encode())
        elif path.is_dir():
            found[rel] = ("dir", stat.S_IMODE(info.st_mode), b"")
        else:
            found[rel] = ("file", stat.S_IMODE(info.st_mode), path.read_bytes())
    return found


Snapshot = dict[str, tuple[str, int, bytes]]
Pair = tuple[FileTree, Path, Snapshot]


@pytest.fixture
def pair(tmp_path: Path) -> Pair:
    tree = _template(tmp_path / "template")
    work = tmp_path / "work"
    tree.restore(work)
    return tree, work, _snapshot(tmp_path / "template")


def test_restore_into_a_missing_directory_builds_the_whole_tree(pair: Pair) -> None:
    _, work, expected = pair
    assert _snapshot(work) == expected


def test_an_untouched_tree_keeps_its_files_rather_than_rewriting_them(pair: Pair) -> None:
    tree, work, _ = pair
    before = {p: p.stat().st_ino for p in work.rglob("*")}
    tree.restore(work)
    assert {p: p.stat().st_ino for p in work.rglob("*")} == before


def test_every_kind_of_change_is_undone(pair: Pair, tmp_path: Path) -> None:
    tree, work, expected = pair
    outside = tmp_path / "outside.txt"
    outside.write_text("secret", encoding="utf-8")
    (work / "notes" / "todo.txt").write_text("buy MILK\n", encoding="utf-8")  # same size
    (work / "reports" / "q3.md").unlink()
    (work / "reports" / "q3.md").symlink_to(outside)  # a link where a file was
    (work / "empty.txt").chmod(0o600)
    (work / "extra").mkdir()
    (work / "extra" / "deep.txt").write_text("x", encoding="utf-8")
    (work / "planted.txt").write_text("planted", encoding="utf-8")
    (work / "link").symlink_to(work / "notes")
    tree.restore(work)
    assert _snapshot(work) == expected
    assert outside.read_text(encoding="utf-8") == "secret", "a link is removed, never followed"


def test_a_hard_linked_file_is_replaced_even_with_the_same_bytes(
    pair: Pair, tmp_path: Path
) -> None:
    tree, work, expected = pair
    twin = tmp_path / "twin.txt"
    os.link(work / "notes" / "todo.txt", twin)
    tree.restore(work)
    assert (work / "notes" / "todo.txt").stat().st_nlink == 1
    assert twin.stat().st_nlink == 1
    assert _snapshot(work) == expected


def test_a_deleted_directory_and_a_root_replaced_by_a_file_come_back(pair: Pair) -> None:
    tree, work, expected = pair
    for path in sorted(work.rglob("*"), reverse=True):
        if path.is_dir():
            path.rmdir()
        else:
            path.unlink()
    work.rmdir()
    work.write_text("not a directory", encoding="utf-8")
    tree.restore(work)
    assert _snapshot(work) == expected


def test_reading_a_tree_with_a_symlink_is_refused(tmp_path: Path) -> None:
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "a").symlink_to(tmp_path)
    with pytest.raises(ValueError, match="not a directory or a regular file"):
        FileTree.read(tmp_path / "t")
