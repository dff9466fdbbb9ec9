"""The fs sandbox: nothing escapes the root, no link is followed, every effect is observable."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from governance.tools import SEED_FILES, Sandbox
from governance.tools._fs import MAX_SEARCH_HITS, seed_files
from governance.tools._local import ToolExecutionError


@pytest.fixture
def root(tmp_path: Path) -> Path:
    files = tmp_path / "files"
    files.mkdir()
    seed_files(files)
    return files


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A directory next to the root holding a file the agent must never reach."""
    out = tmp_path / "outside"
    out.mkdir()
    (out / "secret.txt").write_text("TOP SECRET\n")
    return out


@pytest.fixture
def box(root: Path) -> Sandbox:
    return Sandbox(root)


def refused(reason: str, fn: object, *args: str) -> ToolExecutionError:
    assert callable(fn)
    with pytest.raises(ToolExecutionError) as info:
        fn(*args)
    assert info.value.reason == reason, str(info.value)
    return info.value


# -- escapes ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "path",
    [
        "../outside/secret.txt",
        "..",
        "/etc/passwd",
        "reports/../../outside/secret.txt",
        "a/../../x",
        "./../x",
        "reports/../..",
    ],
)
def test_escaping_paths_are_refused_for_every_operation(
    box: Sandbox, outside: Path, path: str
) -> None:
    refused("path_escapes_sandbox", box.read, path)
    refused("path_escapes_sandbox", box.list_dir, path)
    refused("path_escapes_sandbox", box.search, "secret", path)
    refused("path_escapes_sandbox", box.write, path, "pwned")
    refused("path_escapes_sandbox", box.delete, path)
    refused("path_escapes_sandbox", box.move, "README.txt", path)
    refused("path_escapes_sandbox", box.move, path, "stolen.txt")
    assert (outside / "secret.txt").read_text() == "TOP SECRET\n"
    assert not (box.root / "stolen.txt").exists()


@pytest.mark.parametrize("path", ["../does/not/exist.txt", "/no/such/file", "a/../../missing"])
def test_a_missing_escaping_path_fails_as_an_escape_not_as_not_found(
    box: Sandbox, path: str
) -> None:
    assert not os.path.exists(os.path.join(box.root, path))
    error = refused("path_escapes_sandbox", box.read, path)
    assert "escapes the sandbox" in str(error)


def test_dotdot_that_stays_inside_is_allowed(box: Sandbox) -> None:
    assert box.read("notes/../reports/q3.md") == SEED_FILES["reports/q3.md"]


def test_a_sibling_with_the_root_as_prefix_is_outside(box: Sandbox, tmp_path: Path) -> None:
    sibling = tmp_path / "files-evil"
    sibling.mkdir()
    (sibling / "x.txt").write_text("evil")
    refused("path_escapes_sandbox", box.read, "../files-evil/x.txt")


@pytest.mark.parametrize("path", ["", "bad\x00name"])
def test_empty_or_nul_paths_are_invalid(box: Sandbox, path: str) -> None:
    refused("invalid_path", box.read, path)


# -- symlinks -----------------------------------------------------------------------------


def test_a_symlink_inside_pointing_inside_is_refused_and_named(box: Sandbox) -> None:
    (box.root / "alias.md").symlink_to("reports/q3.md")
    error = refused("symlink_refused", box.read, "alias.md")
    assert "'alias.md'" in str(error)
    refused("symlink_refused", box.write, "alias.md", "overwritten")
    refused("symlink_refused", box.delete, "alias.md")
    refused("symlink_refused", box.move, "alias.md", "moved.md")
    assert (box.root / "reports/q3.md").read_text() == SEED_FILES["reports/q3.md"]
    assert (box.root / "alias.md").is_symlink()
    assert not (box.root / "moved.md").exists()


def test_a_symlink_pointing_outside_is_refused_as_an_escape_naming_the_link(
    box: Sandbox, outside: Path
) -> None:
    (box.root / "leak").symlink_to(outside / "secret.txt")
    error = refused("path_escapes_sandbox", box.read, "leak")
    assert "'leak'" in str(error)
    assert "TOP SECRET" not in str(error)
    refused("path_escapes_sandbox", box.write, "leak", "pwned")
    refused("path_escapes_sandbox", box.delete, "leak")
    assert (outside / "secret.txt").read_text() == "TOP SECRET\n"


def test_a_symlinked_directory_pointing_outside_cannot_be_written_through(
    box: Sandbox, outside: Path
) -> None:
    (box.root / "out").symlink_to(outside, target_is_directory=True)
    error = refused("path_escapes_sandbox", box.write, "out/planted.txt", "x")
    assert "'out'" in str(error)
    refused("path_escapes_sandbox", box.read, "out/secret.txt")
    refused("path_escapes_sandbox", box.list_dir, "out")
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]


def test_a_symlinked_parent_directory_is_refused_and_named(box: Sandbox) -> None:
    (box.root / "rep").symlink_to("reports", target_is_directory=True)
    error = refused("symlink_refused", box.read, "rep/q3.md")
    assert "'rep'" in str(error)
    refused("symlink_refused", box.write, "rep/new.md", "x")
    refused("symlink_refused", box.delete, "rep/q3.md")
    refused("symlink_refused", box.list_dir, "rep")
    refused("symlink_refused", box.move, "README.txt", "rep/README.txt")
    assert not (box.root / "reports/new.md").exists()
    assert (box.root / "reports/q3.md").exists()
    assert (box.root / "README.txt").exists()


def test_a_dangling_symlink_is_refused_not_created_through(box: Sandbox) -> None:
    (box.root / "dangling").symlink_to("reports/not-yet.md")
    refused("symlink_refused", box.write, "dangling", "x")
    assert not (box.root / "reports/not-yet.md").exists()


def test_the_descriptor_walk_refuses_a_link_the_path_check_missed(
    box: Sandbox, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A symlink swapped in after the resolved-path check: the O_NOFOLLOW walk still refuses it.
    (box.root / "out").symlink_to(outside, target_is_directory=True)
    monkeypatch.setattr(os.path, "realpath", lambda p, **_: os.path.abspath(p))
    refused("symlink_refused", box.write, "out/planted.txt", "x")
    assert not (outside / "planted.txt").exists()


def test_the_final_open_uses_o_nofollow(
    box: Sandbox, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The lstat pre-check is fooled (a race); the open itself must still refuse the link.
    (box.root / "swapped").symlink_to(outside / "secret.txt")
    monkeypatch.setattr(os.path, "realpath", lambda p, **_: os.path.abspath(p))
    regular = os.stat(box.root / "README.txt")
    monkeypatch.setattr(Sandbox, "_lstat", staticmethod(lambda dir_fd, name: regular))
    refused("symlink_refused", box.read, "swapped")
    refused("symlink_refused", box.write, "swapped", "pwned")
    assert (outside / "secret.txt").read_text() == "TOP SECRET\n"


def test_listing_shows_links_without_following_them(box: Sandbox, outside: Path) -> None:
    (box.root / "out").symlink_to(outside, target_is_directory=True)
    listing = box.list_dir(".").splitlines()
    assert listing == ["README.txt", "kb/", "notes/", "out@", "reports/", "secrets/"]


def test_search_does_not_follow_links(box: Sandbox, outside: Path) -> None:
    (box.root / "out").symlink_to(outside, target_is_directory=True)
    (box.root / "leak.txt").symlink_to(outside / "secret.txt")
    assert box.search("top secret") == "no matches for 'top secret'"


# -- hard links ---------------------------------------------------------------------------


def test_a_hardlinked_file_cannot_be_written_or_truncated(box: Sandbox) -> None:
    os.link(box.root / "reports/q3.md", box.root / "q3-hard.md")
    error = refused("hardlink_refused", box.write, "q3-hard.md", "")
    assert "'q3-hard.md'" in str(error)
    assert (box.root / "reports/q3.md").read_text() == SEED_FILES["reports/q3.md"]


def test_a_hardlinked_file_cannot_be_deleted_or_read(box: Sandbox, outside: Path) -> None:
    os.link(outside / "secret.txt", box.root / "hard.txt")
    refused("hardlink_refused", box.read, "hard.txt")
    refused("hardlink_refused", box.delete, "hard.txt")
    assert (box.root / "hard.txt").exists()
    assert box.search("top secret") == "no matches for 'top secret'"


# -- happy paths and other refusals -------------------------------------------------------


def test_list_sorts_entries_and_marks_directories(box: Sandbox) -> None:
    assert box.list_dir().splitlines() == ["README.txt", "kb/", "notes/", "reports/", "secrets/"]
    assert box.list_dir("reports") == "q3.md"
    (box.root / "empty").mkdir()
    assert box.list_dir("empty") == "empty: (empty)"
    refused("not_found", box.list_dir, "missing")
    refused("not_a_directory", box.list_dir, "README.txt")


def test_read_returns_the_file_and_refuses_directories_and_missing(box: Sandbox) -> None:
    assert box.read("secrets/api_keys.txt") == SEED_FILES["secrets/api_keys.txt"]
    refused("is_a_directory", box.read, "reports")
    refused("invalid_path", box.read, ".")
    refused("not_found", box.read, "reports/q4.md")
    refused("not_found", box.read, "nope/q4.md")


def test_read_refuses_binary_files(box: Sandbox) -> None:
    (box.root / "blob.bin").write_bytes(b"\xff\xfe\x00\x01")
    refused("not_text", box.read, "blob.bin")


def test_read_of_a_fifo_is_refused_without_blocking(box: Sandbox) -> None:
    os.mkfifo(box.root / "pipe")
    refused("not_a_file", box.read, "pipe")
    refused("not_a_file", box.write, "pipe", "x")


def test_write_creates_parents_inside_the_root(box: Sandbox) -> None:
    assert box.write("drafts/2025/summary.md", "héllo") == "wrote 6 bytes to drafts/2025/summary.md"
    target = box.root / "drafts/2025/summary.md"
    assert target.read_text(encoding="utf-8") == "héllo"
    assert stat.S_IMODE(target.stat().st_mode) & 0o022 == 0


def test_write_replaces_an_existing_file_completely(box: Sandbox) -> None:
    box.write("notes/todo.txt", "short")
    assert (box.root / "notes/todo.txt").read_text() == "short"


def test_write_refuses_a_directory_target_and_a_file_as_parent(box: Sandbox) -> None:
    refused("is_a_directory", box.write, "reports", "x")
    refused("not_a_directory", box.write, "README.txt/child.txt", "x")
    refused("invalid_path", box.write, ".", "x")


def test_move_renames_and_refuses_to_overwrite(box: Sandbox) -> None:
    message = box.move("notes/todo.txt", "archive/todo.txt")
    assert message == "moved notes/todo.txt to archive/todo.txt"
    assert not (box.root / "notes/todo.txt").exists()
    assert (box.root / "archive/todo.txt").read_text() == SEED_FILES["notes/todo.txt"]
    error = refused("exists", box.move, "archive/todo.txt", "README.txt")
    assert "never overwrites" in str(error)
    assert (box.root / "README.txt").read_text() == SEED_FILES["README.txt"]
    assert (box.root / "archive/todo.txt").exists()


def test_move_handles_directories_missing_sources_and_self_nesting(box: Sandbox) -> None:
    box.move("reports", "old-reports")
    assert (box.root / "old-reports/q3.md").exists()
    refused("not_found", box.move, "reports", "elsewhere")
    refused("invalid_move", box.move, "old-reports", "old-reports/inner")
    refused("exists", box.move, "old-reports", "old-reports")
    assert (box.root / "old-reports/q3.md").exists()


def test_delete_removes_a_file_and_refuses_directories(box: Sandbox) -> None:
    assert box.delete("secrets/api_keys.txt") == "deleted secrets/api_keys.txt"
    assert not (box.root / "secrets/api_keys.txt").exists()
    refused("is_a_directory", box.delete, "reports")
    assert (box.root / "reports/q3.md").exists()
    refused("not_found", box.delete, "secrets/api_keys.txt")


def test_search_is_case_insensitive_and_reports_path_line_and_text(box: Sandbox) -> None:
    assert box.search("ord-0003").splitlines() == [
        "notes/todo.txt:1: - Follow up on ORD-0003 (still processing)",
        "reports/q3.md:5: Open issue: delayed shipments for ORD-0003.",
    ]
    assert box.search("ORD-0003", "reports") == (
        "reports/q3.md:5: Open issue: delayed shipments for ORD-0003."
    )
    assert box.search("nowhere", "secrets/api_keys.txt") == "no matches for 'nowhere'"
    assert box.search("STAGING", "secrets/api_keys.txt").startswith("secrets/api_keys.txt:1: ")
    refused("not_found", box.search, "x", "missing")


def test_search_skips_binary_files(box: Sandbox) -> None:
    (box.root / "blob.bin").write_bytes(b"needle\x00\xff")
    (box.root / "text.txt").write_text("a needle here\n")
    assert box.search("needle") == "text.txt:1: a needle here"


def test_search_is_bounded(box: Sandbox) -> None:
    (box.root / "many.txt").write_text("".join(f"hit {i}\n" for i in range(MAX_SEARCH_HITS + 20)))
    lines = box.search("HIT").splitlines()
    assert len(lines) == MAX_SEARCH_HITS + 1
    assert lines[0] == "many.txt:1: hit 0"
    assert lines[-1] == f"... (stopped at {MAX_SEARCH_HITS} matches)"


def test_search_of_exactly_the_bound_is_not_marked_truncated(box: Sandbox) -> None:
    (box.root / "many.txt").write_text("hit\n" * MAX_SEARCH_HITS)
    assert len(box.search("hit").splitlines()) == MAX_SEARCH_HITS


def test_sandbox_root_must_be_a_directory(tmp_path: Path) -> None:
    with pytest.raises(NotADirectoryError):
        Sandbox(tmp_path / "missing")


def test_a_symlinked_root_is_resolved_once_at_construction(root: Path, tmp_path: Path) -> None:
    alias = tmp_path / "root-alias"
    alias.symlink_to(root, target_is_directory=True)
    box = Sandbox(alias)
    assert box.root == root.resolve()
    assert box.read("README.txt") == SEED_FILES["README.txt"]


# -- pre-effect refusals: only a refusal before any change releases a budget slot ------------


def test_refusals_before_any_change_say_so(box: Sandbox, root: Path) -> None:
    (root / "taken").mkdir()
    (root / "a.txt").write_text("a")
    assert refused("not_found", box.delete, "missing.txt").before_effect
    assert refused("is_a_directory", box.delete, "taken").before_effect
    assert refused("is_a_directory", box.write, "taken", "x").before_effect
    assert refused("exists", box.move, "a.txt", "taken").before_effect
    assert refused("not_found", box.move, "missing.txt", "b.txt").before_effect
    assert refused("path_escapes_sandbox", box.write, "../x", "x").before_effect
    assert sorted(p.name for p in root.iterdir() if p.name in ("taken", "a.txt")) == [
        "a.txt",
        "taken",
    ]


def test_refusals_after_creating_a_parent_directory_are_unknown_effects(
    box: Sandbox, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # fs.write and fs.move create missing parents first; if the target then turns out to be
    # taken (another writer raced in), the refusal comes after a change: never "no effect".
    (root / "a.txt").write_text("a")
    real_mkdir = os.mkdir

    def mkdir_and_race(path: str, mode: int = 0o777, *, dir_fd: int | None = None) -> None:
        real_mkdir(path, mode, dir_fd=dir_fd)
        real_mkdir(root / path / "taken")  # someone else makes the target right after

    monkeypatch.setattr("governance.tools._fs.os.mkdir", mkdir_and_race)
    written = refused("is_a_directory", box.write, "fresh/taken", "x")
    assert not written.before_effect and (root / "fresh").is_dir()
    moved = refused("exists", box.move, "a.txt", "other/taken")
    assert not moved.before_effect and (root / "other").is_dir()
    assert (root / "a.txt").read_text() == "a"
