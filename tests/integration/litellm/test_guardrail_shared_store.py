"""Two LiteLLM proxy replicas on one PostgreSQL store: their guardrails (each in a process of
its own, built from `proctor_store_url` as the proxy builds it) share budgets, approvals and the
audit log. A budget of 2 is 2 across both replicas; a call held on one, approved with
`proctor approvals approve --store URL`, runs once when it is sent again to the other."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from governance.stores import PostgresAuditLog, PostgresTarget, migrate_postgres
from tests.integration import _node
from tests.integration.litellm import _proxy
from tests.postgres_cluster import PostgresCluster

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[3]
WORKER = Path(__file__).with_name("_guardrail_worker.py")
BIG_LIMIT = 2  # policy.yaml: big-per-actor


class Replica:
    """One guardrail process; `send` plays a list of calls through its hooks."""

    def __init__(self, store_url: str, state_dir: Path) -> None:
        params = {
            "proctor_policy": str(_proxy.POLICY),
            "proctor_state_dir": str(state_dir),
            "proctor_store_url": store_url,
            "proctor_tools": _proxy.TOOL_FACTS,
            "proctor_outcome_timeout": 60,
        }
        self.process = subprocess.Popen(
            [sys.executable, str(WORKER), json.dumps(params)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=_node.clean_env(PYTHONPATH=str(ROOT), LITELLM_LOCAL_MODEL_COST_MAP="True"),
        )

    def ready(self) -> str:
        return str(self._reply()["ready"])

    def ask(self, calls: list[dict[str, Any]]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps({"calls": calls}) + "\n")
        self.process.stdin.flush()

    def answer(self) -> list[dict[str, Any]]:
        return list(self._reply())

    def send(self, calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
        self.ask(calls)
        return self.answer()

    def _reply(self) -> Any:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line:
            self.process.kill()
            _, err = self.process.communicate(timeout=30)
            pytest.fail(f"the guardrail process died: {err[-3000:]}")
        return json.loads(line)

    def close(self) -> None:
        try:
            self.process.communicate(timeout=30)  # closes stdin: the worker ends
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.communicate(timeout=30)


@pytest.fixture
def store_url(postgres_cluster: PostgresCluster) -> str:
    url = postgres_cluster.create_database("litellm")
    migrate_postgres(PostgresTarget(url))
    return url


@pytest.fixture
def replicas(store_url: str, tmp_path: Path) -> Iterator[tuple[Replica, Replica]]:
    _proxy.require_litellm()
    pair = (Replica(store_url, tmp_path / "a"), Replica(store_url, tmp_path / "b"))
    try:
        assert [replica.ready() for replica in pair] == ["postgres", "postgres"]
        yield pair
    finally:
        for replica in pair:
            replica.close()


def _started(store_url: str, tool: str) -> int:
    """How many calls of `tool` the shared audit log let through, over every run."""
    with PostgresAuditLog(PostgresTarget(store_url)) as log:
        return sum(
            1
            for run_id in log.run_ids()
            for event in log.events(run_id)
            if event.kind == "execution.started" and event.data.get("tool") == tool
        )


def test_a_budget_holds_across_two_replicas_on_one_store(
    replicas: tuple[Replica, Replica], store_url: str
) -> None:
    calls = [{"tool": "big", "arguments": {"size": 10}} for _ in range(4)]
    for replica in replicas:  # both at once
        replica.ask(calls)
    results = [result for replica in replicas for result in replica.answer()]
    executed = [r for r in results if r["status"] == "executed"]
    denied = [r for r in results if r.get("reason") == "budget_exhausted:actor"]
    assert (len(executed), len(denied)) == (BIG_LIMIT, 8 - BIG_LIMIT), results
    assert _started(store_url, "mcp.demo.big") == BIG_LIMIT


def test_a_call_held_on_one_replica_and_approved_runs_once_on_the_other(
    replicas: tuple[Replica, Replica], store_url: str, tmp_path: Path
) -> None:
    first, second = replicas
    wipe = {"tool": "wipe", "arguments": {"target": "db-shared"}}
    [held] = first.send([wipe])
    assert held["status"] == "waiting_approval", held
    approval_id = held["approval_id"]
    # The other replica sees the same pending request: no second one is parked.
    [waiting] = second.send([wipe])
    assert (waiting["status"], waiting["approval_id"]) == ("waiting_approval", approval_id)

    approved = subprocess.run(
        [str(Path(sys.executable).with_name("proctor")), "approvals", "approve", approval_id,
         "--reviewer", "alice", "--store", store_url, "--state-dir", str(tmp_path / "cli"),
         "--policy", str(_proxy.POLICY)],
        capture_output=True, text=True, timeout=120, check=False,
        env={k: v for k, v in os.environ.items() if not k.startswith("PROCTOR_")},
    )  # fmt: skip
    assert approved.returncode == 0, approved.stderr

    [ran] = second.send([wipe])
    assert ran == {"status": "executed"}
    # Used up: the first replica cannot run it again; the same call is a new request.
    [again] = first.send([wipe])
    assert again["status"] == "waiting_approval" and again["approval_id"] != approval_id
    assert _started(store_url, "mcp.demo.wipe") == 1
