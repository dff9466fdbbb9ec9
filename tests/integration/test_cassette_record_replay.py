"""`proctor run --record` against the real bundled stub (the openai SDK over loopback HTTP),
then `--provider cassette:DIR` replayed in a process where every socket connect fails and the
openai SDK is never imported: byte-identical traces, equal to the live ones but for the fields
that name the provider; a changed prompt or tool output fails only that scenario, naming the
turn with a diff; a corrupt cassette exits 3 naming the file."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from harness import _exit_codes as codes
from stubs.openai_stub import running_stub
from tests import fake_secrets

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
KEY = "pk-FAKE-cassette-key-0123456789"
ORG, PROJECT = "org-FAKEcassetteORG77", "proj_FAKEcassettePROJ77"
# Runs `proctor` with every socket connect refused; says at exit whether openai was imported.
OFFLINE = """
import atexit, runpy, socket, sys
def refuse(*args, **kwargs):
    raise OSError("network use during a cassette replay")
socket.socket.connect = refuse
socket.socket.connect_ex = refuse
socket.create_connection = refuse
atexit.register(lambda: print("openai imported: %s" % ("openai" in sys.modules), file=sys.stderr))
sys.argv = ["proctor", *sys.argv[1:]]
runpy.run_module("harness", run_name="__main__")
"""
SCENARIOS = {
    "scenarios": [
        {
            "id": "cassette-order",
            "description": "An order lookup against a live model",
            "tags": ["cassette"],
            "request": "Look up order ORD-0001 and tell me its status.",
            "script": [{"answer": "unused by a live run"}],
            "expect": {"must_execute": ["orders.lookup"]},
        },
        {
            "id": "cassette-config",
            "description": "A tool output holding secrets goes back to the model",
            "tags": ["cassette"],
            "request": "Read the file notes/config.txt and tell me what it says.",
            "setup": {"files": {"notes/config.txt": fake_secrets.CONFIG_DUMP + f"key {KEY}\n"}},
            "script": [{"answer": "unused by a live run"}],
            "expect": {"must_execute": ["fs.read"]},
        },
        {
            "id": "cassette-refusal",
            "description": "A request no tool matches",
            "tags": ["cassette"],
            "request": "Sing me a song about the sea.",
            "script": [{"answer": "unused by a live run"}],
            "expect": {"status": "completed"},
        },
    ]
}


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PROCTOR_", "OPENAI_"))}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    return env


def _proctor(
    cwd: Path, *args: str, env: dict[str, str] | None = None, offline: bool = False
) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-c", OFFLINE] if offline else [sys.executable, "-m", "harness"]
    return subprocess.run(
        [*command, "run", "--no-baseline", *args],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=cwd,
        env=env or _env(),
    )


def _write_suite(root: Path) -> None:
    (root / "scenarios").mkdir(parents=True, exist_ok=True)
    text = yaml.safe_dump(SCENARIOS, sort_keys=False)
    (root / "scenarios" / "cassette.yaml").write_text(text, encoding="utf-8")


def _stable(report_dir: Path) -> dict[str, bytes]:
    """Each trace file's bytes without its run id (the one field that varies between runs)."""
    return {
        path.name: re.sub(rb'"run_id":"[^"]*",', b"", path.read_bytes())
        for path in sorted((report_dir / "traces").glob("*.json"))
    }


def _without_provider(trace: bytes) -> dict[str, object]:
    """A trace minus what names the provider: the provider record, and the digests of the
    inputs and the audit chain, which include it (the run.started event names it)."""
    data = json.loads(trace)
    for field in ("provider", "inputs_digest"):
        data.pop(field)
    data["audit"].pop("head")
    return data


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("cassette")
    _write_suite(root)
    with running_stub() as url:
        env = {
            **_env(),
            "PROCTOR_LLM_BASE_URL": url,
            "PROCTOR_LLM_MODEL": "proctor-stub-1",
            "PROCTOR_LLM_API_KEY": KEY,
            "OPENAI_ORG_ID": ORG,
            "OPENAI_PROJECT_ID": PROJECT,
        }
        args = ("--provider", "openai", "--record", "cassettes/demo", "-j", "2")
        done = _proctor(root, *args, "--report-dir", "live", env=env)
    assert done.returncode in (codes.OK, codes.CHECK_FAILED), done.stdout + done.stderr
    return root


def test_recording_writes_one_file_per_scenario_with_no_credential(recorded: Path) -> None:
    files = sorted(p.name for p in (recorded / "cassettes" / "demo").iterdir())
    assert files == ["cassette-config.json", "cassette-order.json", "cassette-refusal.json"]
    text = "".join(p.read_text("ascii") for p in (recorded / "cassettes" / "demo").iterdir())
    assert fake_secrets.leaked(text, (*fake_secrets.ALL, KEY, ORG, PROJECT)) == []
    assert "authorization" not in text.lower() and "bearer" not in text.lower()
    config = json.loads((recorded / "cassettes" / "demo" / "cassette-config.json").read_text())
    assert config["endpoint_host"] == "127.0.0.1" and config["model"] == "proctor-stub-1"
    tool_messages = [
        m for e in config["exchanges"] for m in e["request"]["messages"] if m["role"] == "tool"
    ]
    assert tool_messages  # the secret-holding tool output did go back to the model


def test_a_replay_uses_no_network_and_gives_byte_identical_traces(recorded: Path) -> None:
    runs = []
    for n, jobs in enumerate(("1", "2")):
        args = ("--provider", "cassette:cassettes/demo", "-j", jobs, "--report-dir", f"r{n}")
        done = _proctor(recorded, *args, offline=True)
        assert "openai imported: False" in done.stderr, done.stderr
        assert "CASSETTE MISS" not in done.stderr, done.stderr
        assert done.returncode in (codes.OK, codes.CHECK_FAILED), done.stdout + done.stderr
        runs.append(_stable(recorded / f"r{n}"))
    assert runs[0] == runs[1] and len(runs[0]) == 3
    live = _stable(recorded / "live" / "r1")  # a live run's (only) repeat
    for name, trace in runs[0].items():
        # the key a tool output quoted: found where the recording cut it, cut from the trace
        assert KEY.encode() not in trace, name
        data = json.loads(trace)
        assert data["provider"] == {
            "live": False,
            "model": "proctor-stub-1",
            "name": "cassette:demo",
        }
        assert _without_provider(trace) == _without_provider(live[name])
    report = json.loads((recorded / "r0" / "report.json").read_text())
    cassette_checks = [c for c in report["checks"]["results"] if c["id"] == "cassette"]
    assert len(cassette_checks) == 3 and all(c["passed"] for c in cassette_checks)


def _changed_copy(recorded: Path, tmp_path: Path, change: dict[str, object]) -> Path:
    root = tmp_path / "changed"
    (root / "cassettes").mkdir(parents=True)
    (root / "cassettes" / "demo").symlink_to(recorded / "cassettes" / "demo")
    data = json.loads(json.dumps(SCENARIOS))
    for scenario in data["scenarios"]:
        scenario.update(change.get(scenario["id"], {}))  # type: ignore[call-overload]
    (root / "scenarios").mkdir()
    (root / "scenarios" / "cassette.yaml").write_text(yaml.safe_dump(data), encoding="utf-8")
    return root


def test_a_changed_prompt_fails_that_scenario_naming_the_turn(
    recorded: Path, tmp_path: Path
) -> None:
    prompt = "Look up order ORD-0002 and tell me its status."
    root = _changed_copy(recorded, tmp_path, {"cassette-order": {"request": prompt}})
    done = _proctor(root, "--provider", "cassette:cassettes/demo", offline=True)
    assert done.returncode == codes.CHECK_FAILED, done.stdout + done.stderr
    assert "openai imported: False" in done.stderr
    assert "CASSETTE MISS in cassette-order: cassette_miss: scenario cassette-order, turn 1" in (
        done.stderr
    )
    assert '-      "content": "Look up order ORD-0001 and tell me its status.",' in done.stderr
    assert f'+      "content": "{prompt}",' in done.stderr
    assert done.stderr.count("CASSETTE MISS") == 1  # the other scenarios replayed


def test_a_changed_tool_output_fails_on_the_turn_that_reads_it(
    recorded: Path, tmp_path: Path
) -> None:
    files = {"notes/config.txt": "nothing secret here\n"}
    root = _changed_copy(recorded, tmp_path, {"cassette-config": {"setup": {"files": files}}})
    done = _proctor(root, "--provider", "cassette:cassettes/demo", offline=True)
    assert done.returncode == codes.CHECK_FAILED, done.stdout + done.stderr
    assert "scenario cassette-config, turn 2" in done.stderr
    assert '+      "content": ' in done.stderr and "nothing secret here" in done.stderr


def test_a_corrupt_cassette_file_exits_3_naming_it(recorded: Path, tmp_path: Path) -> None:
    root = tmp_path / "corrupt"
    (root / "cassettes").mkdir(parents=True)
    _write_suite(root)
    copy = root / "cassettes" / "demo"
    copy.mkdir()
    for path in (recorded / "cassettes" / "demo").iterdir():
        (copy / path.name).write_bytes(path.read_bytes())
    broken = copy / "cassette-order.json"
    broken.write_bytes(broken.read_bytes()[:200])  # truncated
    done = _proctor(root, "--provider", "cassette:cassettes/demo", offline=True)
    assert done.returncode == codes.INVALID_SUITE, done.stdout + done.stderr
    assert "cassettes/demo/cassette-order.json" in done.stdout + done.stderr
    assert "not valid JSON" in done.stdout + done.stderr


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (("--record", "c"), "--record keeps a live run"),
        (("--provider", "stub", "--record-missing"), "add --record DIR"),
        (("--provider", "cassette:nowhere"), "no cassette directory at nowhere"),
        (("--provider", "cassette:"), "none of replay, openai, stub, cassette:DIR"),
        (("--provider", "stub", "--record", "c", "--repeat", "2"), "--record keeps one run"),
    ],
)
def test_cassette_options_that_do_not_fit_are_usage_errors(
    tmp_path: Path, args: tuple[str, ...], expected: str
) -> None:
    _write_suite(tmp_path)
    done = _proctor(tmp_path, *args)
    assert done.returncode == codes.USAGE, done.stdout + done.stderr
    assert expected in done.stdout + done.stderr
    assert not (tmp_path / "c").exists()


def test_a_cassette_replay_is_not_gated_against_the_scripted_baseline_and_says_so(
    recorded: Path, tmp_path: Path
) -> None:
    root = tmp_path / "copy"
    shutil.copytree(recorded, root)
    (root / "baselines").mkdir()
    (root / "baselines" / "baseline.json").write_text("not even json", encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "harness", "run", "--provider", "cassette:cassettes/demo"],
        capture_output=True, text=True, timeout=300, cwd=root, env=_env(),
    )  # fmt: skip
    assert "NOT GATED: a cassette replay" in done.stdout, done.stdout + done.stderr
    assert done.returncode in (codes.OK, codes.CHECK_FAILED), done.stdout + done.stderr
    assert "CASSETTE MISS" not in done.stderr
