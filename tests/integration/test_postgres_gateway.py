"""A Gateway with all three stores on one PostgreSQL database, under real server faults.

Threads write and delete files and hold, approve and resume emails through `gateway.firewall`
while the server is SIGKILLed and restarted several times. Afterwards: every side effect has
its write-ahead record on the chain, destructive calls never ran without a budget reservation,
no run spent more than its budget, no approval ran twice, the chains verify without a gap, and
the same gateway (never rebuilt) works again. Then two gateways in two processes on one URL
share one budget: a per-run limit of 3 is 3 across both, not 3 per process.
"""

from __future__ import annotations

import collections
import contextlib
import itertools
import json
import os
import random
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from governance import Gateway, Principal, ToolCall
from governance._firewall import Firewall
from governance.core._errors import GovernanceError
from governance.stores import (
    CheckpointSchedule,
    PostgresAuditLog,
    generate_checkpoint_keys,
    load_checkpoint_private_key,
    load_checkpoint_public_key,
    migrate_postgres,
    verify_checkpoint,
)
from governance.stores._postgres import PostgresTarget
from governance.tools import file_tree, outbox_rows
from tests.postgres_cluster import PostgresCluster

pytestmark = pytest.mark.slow

RUN_LIMIT = 3
POLICY = f"""
version: 1
defaults: {{unknown_tool: block, no_match: block}}
rules:
  - {{id: write, effect: allow, match: {{tool: fs.write}}}}
  - {{id: delete, effect: allow, match: {{tool: fs.delete}}}}
  - {{id: hold-mail, effect: require_approval, match: {{tool: email.send}}}}
budgets:
  - {{id: deletes-per-run, scope: agent_run, limit: {RUN_LIMIT}, window_seconds: 3600,
     counts: [destructive], tools: [fs.delete]}}
"""
ANN = Principal("ann", "bot", "ops")
_ids = itertools.count(1)


@pytest.fixture
def cluster(postgres_cluster: PostgresCluster) -> Iterator[PostgresCluster]:
    """The session's server, running again after the test whatever the test did to it."""
    yield postgres_cluster
    if not postgres_cluster._accepting():
        postgres_cluster.start()


@pytest.fixture
def store_url(cluster: PostgresCluster) -> str:
    url = cluster.create_database("gw")
    migrate_postgres(PostgresTarget(url))
    return url


@pytest.fixture
def policy(tmp_path: Path) -> Path:
    path = tmp_path / "policy.yaml"
    path.write_text(POLICY, encoding="utf-8")
    return path


def _events_by_call(gateway: Gateway) -> dict[str, list[str]]:
    """Every call's event kinds, in chain order, over every run."""
    kinds: dict[str, list[str]] = collections.defaultdict(list)
    for run_id in gateway.audit.run_ids():
        for event in gateway.audit.events(run_id):
            call_id = event.data.get("call_id")
            if isinstance(call_id, str):
                kinds[call_id].append(event.kind)
    return kinds


def _assert_chains_whole(gateway: Gateway) -> None:
    verdicts = gateway.audit.verify_all()
    assert verdicts and all(v.ok for v in verdicts), [v for v in verdicts if not v.ok]
    for verdict in verdicts:
        seqs = [e.seq for e in gateway.audit.events(verdict.run_id)]
        assert seqs == list(range(1, len(seqs) + 1)), verdict.run_id


WRITERS = 4
REVIEWERS = 2
KILLS = 3


def test_a_postgres_gateway_under_server_kills_never_runs_a_call_unrecorded_or_over_budget(
    cluster: PostgresCluster, store_url: str, policy: Path, tmp_path: Path
) -> None:
    gateway = Gateway(state_dir=tmp_path / "state", policy_path=policy, store=store_url)
    assert gateway.store.kind == "postgres"
    firewall = gateway.firewall
    results: list[tuple[ToolCall, Any]] = []
    errors: list[BaseException] = []
    lock = threading.Lock()
    done = threading.Event()

    def keep(call: ToolCall, got: Any) -> Any:
        with lock:
            results.append((call, got))
        return got

    def writer(index: int) -> None:
        """Creates a file, then deletes it, five files to a run (limit: three deletions)."""
        try:
            for n in itertools.count():
                if done.is_set():
                    return
                run_id, path = f"run-{index}-{n // 5}", f"chaos/{index}-{n}.txt"
                write = ToolCall(f"w{next(_ids)}", "fs.write", {"path": path, "content": "x"},
                                 run_id, ANN)  # fmt: skip
                if keep(write, firewall.call(write)).outcome != "executed":
                    continue
                delete = ToolCall(f"d{next(_ids)}", "fs.delete", {"path": path}, run_id, ANN)
                keep(delete, firewall.call(delete))
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    def reviewer(index: int) -> None:
        try:
            while not done.is_set():
                subject = f"m{next(_ids)}"
                call = ToolCall(subject, "email.send",
                                {"to": "a@b.co", "subject": subject, "body": "b"},
                                f"mail-{index}", ANN)  # fmt: skip
                approval_id = keep(call, firewall.call(call)).approval_id
                if approval_id is None:
                    continue
                with contextlib.suppress(GovernanceError):
                    firewall.approve(approval_id, "bob")
                for _ in range(3):  # a resume the outage refused is tried again
                    got = keep(call, firewall.resume_held(approval_id, call))
                    if got.outcome == "executed" or not got.reason.endswith("unavailable"):
                        break
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    def killer() -> None:
        chance = random.Random(11)
        try:
            for _ in range(KILLS):
                time.sleep(chance.uniform(0.15, 0.35))
                cluster.kill()
                time.sleep(chance.uniform(0.05, 0.2))
                cluster.start()
            time.sleep(0.3)  # calls after the last restart
        finally:
            done.set()

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(WRITERS)]
    threads += [threading.Thread(target=reviewer, args=(i,)) for i in range(REVIEWERS)]
    chaos = threading.Thread(target=killer)
    try:
        for thread in [*threads, chaos]:
            thread.start()
        for thread in [chaos, *threads]:
            thread.join(timeout=300)
        assert not any(t.is_alive() for t in [*threads, chaos]) and errors == []

        outcomes = collections.Counter((got.outcome, got.reason) for _, got in results)
        # The outage was met (refused calls), and budgets were spent (denied deletions).
        assert outcomes[("executed", None)] > 0
        assert any(o == "failed" or (r or "").endswith("unavailable") for o, r in outcomes)
        assert outcomes[("blocked", "budget_exhausted:agent_run")] > 0, outcomes

        kinds = _events_by_call(gateway)
        files = file_tree(gateway.workspace)
        sent = [row["subject"] for row in outbox_rows(gateway.workspace)]
        ledger = {row.call_id: row for row in gateway.budgets.ledger("deletes-per-run")}
        deleted_per_run: collections.Counter[str] = collections.Counter()
        for call, got in results:
            started = "execution.started" in kinds[call.call_id]
            if started:
                assert kinds[call.call_id].index("tool.requested") < kinds[call.call_id].index(
                    "execution.started"
                )
            if got.outcome == "executed":
                assert started, (call.call_id, kinds[call.call_id])
            path = call.arguments.get("path")
            if call.tool == "fs.write" and f"{path}" in files:
                assert started, f"{path} was written without its write-ahead record"
            if call.tool == "fs.delete":
                write_ran = any(
                    other.tool == "fs.write" and other.arguments["path"] == path
                    and "execution.started" in kinds[other.call_id]
                    for other, _ in results
                )  # fmt: skip
                if write_ran and path not in files:  # the deletion happened
                    assert started, f"{path} was deleted without its write-ahead record"
                    assert call.call_id in ledger, f"{path} was deleted without a reservation"
                    deleted_per_run[call.run_id] += 1
        assert deleted_per_run and max(deleted_per_run.values()) <= RUN_LIMIT, deleted_per_run
        charged = collections.Counter(
            row.run_id for row in ledger.values() if row.status != "released"
        )
        assert max(charged.values()) <= RUN_LIMIT, charged
        for status in gateway.budgets.status(gateway.policy.current().budgets):
            assert status.used <= status.limit, status

        assert len(sent) == len(set(sent)), "an approval executed twice"
        for subject in sent:
            assert kinds[subject].index("approval.consumed") < kinds[subject].index(
                "execution.started"
            ), subject
        assert sent, "no held call was approved and run"
        _assert_chains_whole(gateway)

        # The same gateway, never rebuilt: every kind of call works again.
        again = ToolCall("after-w", "fs.write", {"path": "after.txt", "content": "y"}, "after", ANN)
        assert firewall.call(again).outcome == "executed"
        delete = ToolCall("after-d", "fs.delete", {"path": "after.txt"}, "after", ANN)
        assert firewall.call(delete).outcome == "executed"
        assert "after.txt" not in file_tree(gateway.workspace)
        held = ToolCall("after-m", "email.send", {"to": "a@b.co", "subject": "s", "body": "b"},
                        "after", ANN)  # fmt: skip
        assert firewall.call(held).outcome == "held"
        _assert_chains_whole(gateway)
    finally:
        done.set()
        gateway.close()


class KilledAtReserve:
    """A budget ledger whose server is killed just as `reserve` goes out, and restarted
    before the firewall's next write: only the budget step meets the dead server."""

    def __init__(self, inner: Any, cluster: PostgresCluster) -> None:
        self._inner, self._cluster = inner, cluster

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def reserve(self, *args: Any) -> Any:
        self._cluster.kill()
        try:
            return self._inner.reserve(*args)
        finally:
            self._cluster.start()


def test_a_server_killed_as_the_budget_is_reserved_blocks_the_destructive_call(
    cluster: PostgresCluster, store_url: str, policy: Path, tmp_path: Path
) -> None:
    with Gateway(state_dir=tmp_path / "state", policy_path=policy, store=store_url) as gateway:
        write = ToolCall("w", "fs.write", {"path": "keep.txt", "content": "x"}, "run-k", ANN)
        assert gateway.firewall.call(write).outcome == "executed"
        killing = Firewall(
            gateway.registry,
            gateway.policy,
            gateway.audit,
            approvals=gateway.approvals,
            budgets=KilledAtReserve(gateway.budgets, cluster),
        )
        delete = ToolCall("d", "fs.delete", {"path": "keep.txt"}, "run-k", ANN)
        got = killing.call(delete)
        assert (got.outcome, got.reason) == ("blocked", "budget_store_unavailable")
        assert "keep.txt" in file_tree(gateway.workspace), "a destructive call failed open"
        kinds = _events_by_call(gateway)["d"]
        assert "budget.denied" in kinds and "execution.started" not in kinds
        assert gateway.budgets.ledger("deletes-per-run") == []
        # The same gateway's ledger reconnects by itself: the deletion goes through now.
        assert gateway.firewall.call(delete).outcome == "executed"
        assert "keep.txt" not in file_tree(gateway.workspace)
        _assert_chains_whole(gateway)


def test_gateways_on_one_database_one_after_another_extend_one_checkpoint(
    store_url: str, policy: Path, tmp_path: Path
) -> None:
    """Each gateway signs a checkpoint when it closes; the next gateway on the same database
    (a restart, another replica) must recognise the same log and sign over it, not refuse it
    as another log's."""
    key, public = tmp_path / "ck", tmp_path / "ck.pub"
    generate_checkpoint_keys(key, public)
    schedule = CheckpointSchedule(tmp_path / "checkpoint.json", load_checkpoint_private_key(key))
    log_ids = []
    for n in range(2):
        gateway = Gateway(state_dir=tmp_path / f"state-{n}", policy_path=policy,
                          store=store_url, checkpoint=schedule)  # fmt: skip
        write = ToolCall(f"w{n}", "fs.write", {"path": "a.txt", "content": "x"}, f"run-{n}", ANN)
        assert gateway.firewall.call(write).outcome == "executed"
        gateway.close()
        assert gateway.checkpoints is not None
        assert gateway.checkpoints.errors == []
        log_ids.append(gateway.checkpoints.written[-1].log_id)
    assert log_ids[0] == log_ids[1]
    with PostgresAuditLog(PostgresTarget(store_url)) as log:
        report = verify_checkpoint(schedule.path, log, load_checkpoint_public_key(public))
    assert report.ok and {f.run_id for f in report.findings} == {"run-0", "run-1"}


WORKER = """
import json, sys, time
from pathlib import Path
from governance import Gateway, Principal, ToolCall
from governance._firewall import Firewall

url, policy, state, tag, go = sys.argv[1:6]
gateway = Gateway(state_dir=Path(state), policy_path=Path(policy), store=url)
ann = Principal("ann", "bot", "ops")
while not Path(go).exists():  # both processes open their gateway, then start together
    time.sleep(0.01)
outcomes = []
for n in range(6):
    path = f"shared/{tag}-{n}.txt"
    write = ToolCall(f"{tag}-w{n}", "fs.write", {"path": path, "content": "x"}, "shared-run", ann)
    assert gateway.firewall.call(write).outcome == "executed"
    delete = ToolCall(f"{tag}-d{n}", "fs.delete", {"path": path}, "shared-run", ann)
    got = gateway.firewall.call(delete)
    outcomes.append([got.outcome, got.reason])
gateway.close()
print(json.dumps(outcomes))
"""


def test_two_gateway_processes_on_one_url_share_one_per_run_budget(
    store_url: str, policy: Path, tmp_path: Path
) -> None:
    go = tmp_path / "go"
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    workers = [
        subprocess.Popen(
            [
                sys.executable,
                "-c",
                WORKER,
                store_url,
                str(policy),
                str(tmp_path / tag),
                tag,
                str(go),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )  # fmt: skip
        for tag in ("a", "b")
    ]
    time.sleep(0.5)
    go.touch()
    outcomes: list[list[Any]] = []
    for worker in workers:
        out, err = worker.communicate(timeout=120)
        assert worker.returncode == 0, err
        outcomes.extend(json.loads(out))
    executed = [o for o in outcomes if o == ["executed", None]]
    denied = [o for o in outcomes if o == ["blocked", "budget_exhausted:agent_run"]]
    assert (len(executed), len(denied)) == (RUN_LIMIT, 12 - RUN_LIMIT), outcomes
    deleted = [
        path
        for tag in ("a", "b")
        for path in (f"shared/{tag}-{n}.txt" for n in range(6))
        if path not in file_tree(tmp_path / tag / "workspace")
    ]
    assert len(deleted) == RUN_LIMIT
