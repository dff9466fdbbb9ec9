"""`proctor import agentdojo` as a command: options, determinism, stale files, refusals."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from harness import _exit_codes as codes
from harness.agentdojo import MARK
from harness.cli._import_cmd import DEFAULT_VERSION
from tests.unit.harness.agentdojo.importing import INSTALL_COMMAND, VERSION, run_import

REPO = Path(__file__).resolve().parents[4]


def _tree(root: Path) -> dict[str, bytes]:
    return {
        path.relative_to(root).as_posix(): path.read_bytes()
        for path in sorted(root.rglob("*"))
        if path.is_file()
    }


def test_a_second_import_writes_byte_identical_files(
    suites: dict[str, Any], tmp_path: Path
) -> None:
    args = ("--suite", "banking", "--suite", "slack", "--policy-dir", str(tmp_path / "p"))
    assert run_import(*args, "--out", str(tmp_path / "a"))[0] == codes.OK
    first = _tree(tmp_path / "a")
    code, _, stderr = run_import(*args, "--out", str(tmp_path / "a"))
    assert code == codes.OK
    assert _tree(tmp_path / "a") == first
    assert "(0 written, 16 unchanged)" in stderr
    # Another directory of the same shape gets the same bytes: nothing depends on where.
    assert run_import(*args, "--out", str(tmp_path / "b"))[0] == codes.OK
    assert _tree(tmp_path / "b") == first
    assert sorted({name.split("/")[0] for name in first}) == ["banking", "slack"]


def test_a_new_import_removes_only_files_an_earlier_import_wrote(
    suites: dict[str, Any], tmp_path: Path
) -> None:
    out = tmp_path / "out"
    generated = f"{MARK} from agentdojo 0.0.1 (benchmark v1.2.2).\nscenarios: []\n"
    keep = {
        "banking/notes.yaml": "# my own scenarios\nscenarios: []\n",
        "banking/README.md": generated,  # not a scenario file
        "banking/nested/user_task_99.yaml": generated,  # below the suite's directory
        "slack/user_task_99.yaml": generated,  # a suite this import does not touch
    }
    stale = {"banking/user_task_99.yaml": generated, "banking/user_task_98.yml": generated}
    for name, text in {**keep, **stale}.items():
        (out / name).parent.mkdir(parents=True, exist_ok=True)
        (out / name).write_text(text, encoding="utf-8")
    code, _, stderr = run_import("--suite", "banking", "--out", str(out))
    assert code == codes.OK, stderr
    for name, text in keep.items():
        assert (out / name).read_text(encoding="utf-8") == text
    for name in stale:
        assert not (out / name).exists()
    assert "2 stale removed" in stderr
    assert (out / "banking" / "user_task_0.yaml").read_text(encoding="utf-8").startswith(MARK)


def test_a_filtered_import_writes_only_what_it_names_and_removes_nothing(
    suites: dict[str, Any], tmp_path: Path
) -> None:
    out = tmp_path / "out"
    earlier = out / "banking" / "user_task_5.yaml"
    earlier.parent.mkdir(parents=True)
    earlier.write_text(f"{MARK} (an earlier full import)\nscenarios: []\n", encoding="utf-8")
    code, _, stderr = run_import(
        "--suite", "banking", "--user-task", "user_task_1",
        "--injection-task", "injection_task_2", "--out", str(out),
    )  # fmt: skip
    assert code == codes.OK, stderr
    assert sorted(path.name for path in (out / "banking").iterdir()) == [
        "user_task_1.yaml",
        "user_task_5.yaml",
    ]
    text = (out / "banking" / "user_task_1.yaml").read_text(encoding="utf-8")
    assert "id: agentdojo-banking-user_task_1\n" in text
    assert "id: agentdojo-banking-user_task_1-injection_task_2\n" in text
    assert text.count("- id: ") == 2


def test_an_existing_file_the_command_did_not_write_is_never_overwritten(
    suites: dict[str, Any], tmp_path: Path
) -> None:
    mine = tmp_path / "out" / "slack" / "user_task_3.yaml"
    mine.parent.mkdir(parents=True)
    mine.write_text("# hand-written\nscenarios: []\n", encoding="utf-8")
    code, _, stderr = run_import(
        "--suite", "banking", "--suite", "slack", "--out", str(tmp_path / "out")
    )  # fmt: skip
    assert code == codes.USAGE
    assert str(mine) in stderr and "were not written by `proctor import agentdojo`" in stderr
    # Nothing at all was written, not even the suite that came first.
    assert sorted(path.name for path in (tmp_path / "out").iterdir()) == ["slack"]
    assert sorted(path.name for path in mine.parent.iterdir()) == ["user_task_3.yaml"]
    assert mine.read_text(encoding="utf-8") == "# hand-written\nscenarios: []\n"


def test_a_user_task_that_shows_no_injection_gets_no_pairs_and_is_counted(
    suites: dict[str, Any], tmp_path: Path, monkeypatch: Any
) -> None:
    from harness.agentdojo import _import
    from harness.agentdojo._ground_truth import Walk

    real_walk = _import.walk

    def blind_walk(user_task: Any, *args: Any) -> Walk:
        found = real_walk(user_task, *args)
        if user_task.ID != "user_task_0":
            return found
        return Walk(found.steps, tuple(() for _ in found.steps))

    monkeypatch.setattr(_import, "walk", blind_walk)
    code, _, stderr = run_import("--suite", "banking", "--out", str(tmp_path / "out"))
    assert code == codes.OK, stderr
    assert "note: banking user_task_0 shows no injection vector: no pairs" in stderr
    assert "banking: 16 user tasks, 135 pairs (1 user tasks show no injection" in stderr
    text = (tmp_path / "out" / "banking" / "user_task_0.yaml").read_text(encoding="utf-8")
    assert text.count("- id: ") == 1
    assert "injection_task" not in text


def test_the_scenarios_name_the_policy_relative_to_their_own_file(
    suites: dict[str, Any], tmp_path: Path, monkeypatch: Any
) -> None:
    monkeypatch.chdir(tmp_path)
    code, _, stderr = run_import("--suite", "banking", "--user-task", "user_task_0")
    assert code == codes.OK, stderr
    text = (tmp_path / "scenarios/agentdojo/banking/user_task_0.yaml").read_text(encoding="utf-8")
    assert "  policy: ../../policies/agentdojo/banking.yaml\n" in text
    assert "scenarios/policies/agentdojo/banking.yaml" in stderr  # it does not exist yet


def test_bad_options_exit_64_and_write_nothing(suites: dict[str, Any], tmp_path: Path) -> None:
    out = str(tmp_path / "out")
    for args, said in [
        (("--suite", "shopping"), "'shopping' is not one of"),
        (("--benchmark-version", "v9.9.9"), "no benchmark version 'v9.9.9'"),
        (("--benchmark-version", "v1"), "cannot be named in a scenario"),
        (("--suite", "banking", "--user-task", "user_task_999"), "--user-task: no user_task_999"),
        (("--injection-task", "injection_task_99"), "no injection_task_99"),
    ]:
        code, _, stderr = run_import(*args, "--out", out)
        assert code == codes.USAGE, args
        assert said in stderr, stderr
    assert not (tmp_path / "out").exists()


def test_without_agentdojo_the_command_exits_64_with_the_install_line(tmp_path: Path) -> None:
    shadow = tmp_path / "shadow" / "agentdojo"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("raise ImportError('agentdojo is hidden')\n")
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "shadow")}
    done = subprocess.run(
        [sys.executable, "-c", "from harness.cli._app import main; main()",
         "import", "agentdojo", "--out", str(tmp_path / "out")],
        cwd=REPO, env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == codes.USAGE, done.stderr
    assert INSTALL_COMMAND in done.stderr
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "out").exists()


def test_help_says_what_is_written_and_how_to_run_it() -> None:
    code, stdout, _ = run_import("--help")
    assert code == codes.OK
    text = " ".join(stdout.split())
    assert "<out>/<suite>/<user_task>.yaml" in text
    assert "proctor run --scenarios scenarios/agentdojo" in text
    assert INSTALL_COMMAND in text
    assert "important_instructions" in text


def test_the_command_and_the_generator_default_to_the_same_benchmark_version() -> None:
    from harness.agentdojo import DEFAULT_VERSION as generator_default

    assert DEFAULT_VERSION == generator_default == VERSION
