"""Two operators save at once from the same loaded digest: exactly one wins, the other is told
its update would be lost. Each save is held right after it read the file, which is where a
missing lock would let both pass the digest check."""

from __future__ import annotations

import json
import select
import subprocess
import sys
import threading
from pathlib import Path
from typing import IO, Any

import pytest

import harness.console._policy_edit as policy_edit
from governance.stores import MemoryAuditLog
from governance.tools import builtin_registry
from harness.console._policy_edit import CHANGED, CHANGES_RUN, PolicyEditor, SaveResult
from tests.unit.harness.console.policy_editing import POLICY

DRAFTS = {
    "dana": POLICY.replace("effect: allow", "effect: block"),
    "erin": POLICY.replace("effect: allow", "effect: require_approval"),
}
# Long enough for the other save to reach the same point if nothing stopped it.
OVERLAP_SECONDS = 1.5


def test_two_threads_saving_from_one_digest_one_wins_one_is_refused(
    policy_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    audit = MemoryAuditLog()
    editor = PolicyEditor(policy_path=policy_path, registry=builtin_registry(), audit=audit)
    digest = editor.load().digest
    both_read = threading.Barrier(2, timeout=OVERLAP_SECONDS)
    real_read = policy_edit.read_bytes
    held = threading.local()
    met: list[bool] = []

    def read_then_wait_for_the_other(path: Path) -> bytes:
        data = real_read(path)
        if not getattr(held, "done", False):
            held.done = True
            try:  # without the lock both saves meet here, both with the old digest
                both_read.wait()
                met.append(True)
            except threading.BrokenBarrierError:
                pass  # the other save is waiting for the lock
        return data

    monkeypatch.setattr(policy_edit, "read_bytes", read_then_wait_for_the_other)
    results: dict[str, SaveResult] = {}

    def save(operator: str) -> None:
        results[operator] = editor.save(DRAFTS[operator], digest, operator)

    threads = [threading.Thread(target=save, args=(name,)) for name in DRAFTS]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert not any(thread.is_alive() for thread in threads)
    assert met == [], "both saves read the file at once: the save lock did not hold"
    _exactly_one_won({name: r.as_json() for name, r in results.items()}, policy_path)
    assert [e.kind for e in audit.events(CHANGES_RUN)].count(CHANGED) == 1


# A child process: load the editor, say "ready", wait for "go", save; the save says "locked"
# right after reading the file and waits for a line before going on; then its result as JSON.
CHILD = """
import json, sys
from pathlib import Path
import harness.console._policy_edit as edit
from governance.stores import MemoryAuditLog
from governance.tools import builtin_registry

path, text, digest, operator = sys.argv[1:5]
editor = edit.PolicyEditor(policy_path=Path(path), registry=builtin_registry(),
                           audit=MemoryAuditLog())
real_read, held = edit.read_bytes, []

def held_read(p):
    data = real_read(p)
    if not held:
        held.append(1)
        print("locked", flush=True)
        sys.stdin.readline()
    return data

print("ready", flush=True)
sys.stdin.readline()
edit.read_bytes = held_read
print(json.dumps(editor.save(text, digest, operator).as_json()), flush=True)
"""


def _line(stream: IO[bytes]) -> str:
    return stream.readline().decode().strip()


def _say(proc: subprocess.Popen[bytes], line: str) -> None:
    assert proc.stdin is not None
    proc.stdin.write(f"{line}\n".encode())
    proc.stdin.flush()


def test_two_processes_saving_from_one_digest_one_wins_one_is_refused(policy_path: Path) -> None:
    digest = str(PolicyEditor(policy_path=policy_path, registry=builtin_registry(),
                              audit=MemoryAuditLog()).load().digest)  # fmt: skip
    procs = {
        name: subprocess.Popen(
            [sys.executable, "-c", CHILD, str(policy_path), text, digest, name],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            bufsize=0,
        )  # fmt: skip
        for name, text in DRAFTS.items()
    }
    results: dict[str, Any] = {}
    try:
        outs = {name: proc.stdout for name, proc in procs.items() if proc.stdout is not None}
        assert [_line(out) for out in outs.values()] == ["ready", "ready"]
        for proc in procs.values():
            _say(proc, "go")
        ready, _, _ = select.select(list(outs.values()), [], [], 60)
        first = next(name for name, out in outs.items() if out is ready[0])
        assert _line(outs[first]) == "locked"
        [second] = [name for name in procs if name != first]
        # While the first save holds the lock, the second cannot get as far as reading.
        late, _, _ = select.select([outs[second]], [], [], OVERLAP_SECONDS)
        assert late == [], "both saves read the file at once: the save lock did not hold"
        _say(procs[first], "")
        results[first] = json.loads(_line(outs[first]))
        assert _line(outs[second]) == "locked"
        _say(procs[second], "")
        results[second] = json.loads(_line(outs[second]))
    finally:
        for proc in procs.values():
            if proc.poll() is None:
                proc.kill()
            _, err = proc.communicate(timeout=30)
            assert proc.returncode in (0, -9), err.decode()
    _exactly_one_won(results, policy_path)


def _exactly_one_won(results: dict[str, Any], policy_path: Path) -> None:
    outcomes = sorted((r["outcome"], r["reason"]) for r in results.values())
    assert outcomes == [("refused", "conflict"), ("saved", None)]
    [winner] = [name for name, r in results.items() if r["outcome"] == "saved"]
    [loser] = [r for r in results.values() if r["outcome"] == "refused"]
    assert policy_path.read_text(encoding="utf-8") == DRAFTS[winner]
    assert loser["digest"] == results[winner]["new_digest"]
