"""Proctor against the official MCP conformance suite (`@modelcontextprotocol/conformance`).

Server mode: `proctor serve --transport http` is tested by the suite as a foreign client.
Client mode: the suite's test servers are reached by Proctor's own MCP client through a Gateway
(`python -m stubs.mcp_demo.conformance_client`). Each run passes only when the conformance
process exits 0: every failure is listed, with its reason, in
.ci/mcp-conformance-expected-failures.yaml, and a listed scenario that passes fails the run too.
Run with `-s` to see the counts.
"""

from __future__ import annotations

import json
import queue
import re
import shlex
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import yaml

from governance.stores._audit import AuditLog
from tests.integration import _node

pytestmark = pytest.mark.slow

EXPECTED_FAILURES = _node.ROOT / ".ci" / "mcp-conformance-expected-failures.yaml"
CLIENT_MODULE = "stubs.mcp_demo.conformance_client"
RESULT_DIR = re.compile(r"(?P<name>.+)-\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-\d{3}Z")
SERVE_READY = re.compile(r"serving MCP \(Streamable HTTP\) at (\S+)")
SUITE_TIMEOUT = 600.0
START_TIMEOUT = 30.0

Checks = list[dict[str, Any]]


def _expected(mode: str) -> set[str]:
    document = yaml.safe_load(EXPECTED_FAILURES.read_text(encoding="utf-8"))
    names = document[mode]
    assert len(names) == len(set(names)), f"{mode}: a scenario is listed twice"
    return set(names)


def _results(out: Path, mode: str) -> dict[str, Checks]:
    """Each scenario's checks from `-o`: `<out>/[server-]<scenario>-<timestamp>/checks.json`."""
    found: dict[str, Checks] = {}
    for checks in sorted(out.rglob("checks.json")):
        relative = checks.parent.relative_to(out).as_posix()
        match = RESULT_DIR.fullmatch(relative)
        assert match, f"unexpected result directory {relative}"
        name = match.group("name")
        if mode == "server":
            name = name.removeprefix("server-")
        found[name] = json.loads(checks.read_text(encoding="utf-8"))
    return found


def _failed(checks: Checks) -> bool:
    """As the suite judges a scenario: any FAILURE or WARNING check fails it."""
    return any(check["status"] in ("FAILURE", "WARNING") for check in checks)


def _only_the_retry_timing_failed(results: dict[str, Checks], expected: set[str]) -> bool:
    """True when the one unexpected failure is sse-retry's reconnect timing check, alone."""
    unexpected = {name for name, checks in results.items() if _failed(checks)} - expected
    if unexpected != {"sse-retry"}:
        return False
    bad = {c["id"] for c in results["sse-retry"] if c["status"] in ("FAILURE", "WARNING")}
    return bad == {"client-sse-retry-timing"}


def _report(mode: str, results: dict[str, Checks], expected: set[str]) -> set[str]:
    failing = {name for name, checks in results.items() if _failed(checks)}
    passed = len(results) - len(failing)
    print(
        f"\nMCP conformance ({mode}): {passed} passed, {len(failing & expected)} expected "
        f"failures, {len(results)} scenarios"
    )
    return failing


def _run_conformance(
    conformance: list[str], *args: str, cwd: Path
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*conformance, *args],
        cwd=cwd,
        env=_node.clean_env(),
        capture_output=True,
        text=True,
        timeout=SUITE_TIMEOUT,
        check=False,
    )


def _explain(done: subprocess.CompletedProcess[str]) -> str:
    return (
        f"exit {done.returncode}\n--- stdout (tail)\n{done.stdout[-6000:]}"
        f"\n--- stderr (tail)\n{done.stderr[-3000:]}"
    )


# -- server mode ------------------------------------------------------------------------------


@contextmanager
def _proctor_serve(state_dir: Path) -> Iterator[str]:
    """`proctor serve --transport http --port 0` in a subprocess; yields the announced URL."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "harness", "serve", "--transport", "http", "--port", "0",
         "--state-dir", str(state_dir)],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        env=_node.clean_env(),
    )  # fmt: skip
    assert proc.stderr is not None
    lines: queue.Queue[str] = queue.Queue()
    said: list[str] = []

    def pump() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            lines.put(line)
        lines.put("")  # EOF

    thread = threading.Thread(target=pump, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + START_TIMEOUT
        found = None
        while found is None:
            try:
                line = lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                pytest.fail(f"proctor serve did not start within {START_TIMEOUT:g}s: {said}")
            assert line, f"proctor serve exited before it was ready: {''.join(said)}"
            said.append(line)
            found = SERVE_READY.search(line)
        yield found.group(1)
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=30) == 0
    finally:
        _node.stop(proc)
        thread.join(timeout=10)  # EOF once the process is gone
        proc.stderr.close()


def test_proctor_serve_passes_the_conformance_server_suite_but_for_the_listed_gaps(
    tmp_path: Path,
) -> None:
    conformance = _node.node_command(_node.CONFORMANCE)  # skip (or fail in CI) before serving
    expected = _expected("server")
    out = tmp_path / "server-results"
    state = tmp_path / "state"
    with _proctor_serve(state) as url:
        done = _run_conformance(
            conformance, "server", "--url", url,
            "--expected-failures", str(EXPECTED_FAILURES), "-o", str(out),
            cwd=tmp_path,
        )  # fmt: skip
    assert done.returncode == 0, _explain(done)
    results = _results(out, "server")
    failing = _report("server", results, expected)
    assert failing == expected
    passing = set(results) - failing
    assert {"server-initialize", "tools-list", "ping", "dns-rebinding-protection"} <= passing
    # These two "pass" only because the suite accepts any text result: Proctor does not publish
    # the fixture tools, so each call was blocked as an unknown tool and nothing ran.
    for scenario in ("tools-call-simple-text", "tools-call-error"):
        (check,) = results[scenario]
        result = check["details"]["result"]
        assert result["isError"] is True
        assert result["_meta"]["proctor"]["outcome"] == "blocked"
        assert result["_meta"]["proctor"]["reason"] == "unknown_tool"
    audit = AuditLog(state / "audit.sqlite", readonly=True)
    try:
        kinds = {e.kind for run in audit.run_ids() for e in audit.events(run)}
        verdicts = audit.verify_all()
    finally:
        audit.close()
    assert "policy.decided" in kinds and "execution.started" not in kinds  # nothing executed
    assert verdicts and all(v.ok for v in verdicts)


# -- client mode ------------------------------------------------------------------------------


def test_proctors_mcp_client_passes_the_conformance_client_suite_but_for_the_listed_gaps(
    tmp_path: Path,
) -> None:
    conformance = _node.node_command(_node.CONFORMANCE)
    expected = _expected("client")
    out = tmp_path / "client-results"
    # The suite splits the command on spaces and runs it through a shell, so quoting survives.
    command = shlex.join([sys.executable, "-m", CLIENT_MODULE])
    done = _run_conformance(
        conformance, "client", "--command", command, "--suite", "all",
        "--expected-failures", str(EXPECTED_FAILURES), "-o", str(out),
        cwd=tmp_path,
    )  # fmt: skip
    results = _results(out, "client")
    if done.returncode != 0 and _only_the_retry_timing_failed(results, expected):
        # sse-retry times the reconnect (500 ms, late by at most 500 ms); the suite starts
        # 23 Python clients at once on this 2-core machine, which can push it past. Judge that
        # scenario again on its own, with the same thresholds: it must pass there.
        alone = tmp_path / "sse-retry-alone"
        again = _run_conformance(
            conformance, "client", "--command", command, "--scenario", "sse-retry",
            "--expected-failures", str(EXPECTED_FAILURES), "-o", str(alone),
            cwd=tmp_path,
        )  # fmt: skip
        assert again.returncode == 0, _explain(again)
        results["sse-retry"] = _results(alone, "client")["sse-retry"]
    else:
        assert done.returncode == 0, _explain(done)
    failing = _report("client", results, expected)
    assert failing == expected
    assert {"initialize", "tools_call", "sse-retry"} <= set(results) - failing
    # tools_call passed because the firewall let add_numbers through and the server answered.
    (tools_call,) = out.glob("tools_call-*")
    report = json.loads((tools_call / "stdout.txt").read_text(encoding="utf-8"))
    assert report["status"] == "up"
    assert report["calls"] == [
        {
            "tool": "mcp.conformance.add_numbers",
            "outcome": "executed",
            "reason": None,
            "output": "The sum of 2 and 3 is 5",
            "error": None,
        }
    ]


def test_only_a_late_reconnect_in_the_crowded_suite_earns_a_second_look() -> None:
    timing = {"id": "client-sse-retry-timing", "status": "FAILURE"}
    fine = {"id": "client-sse-graceful-reconnect", "status": "SUCCESS"}
    lost = {"id": "client-sse-last-event-id", "status": "WARNING"}
    auth = {"auth/pre-registration": [{"id": "x", "status": "FAILURE"}]}
    assert _only_the_retry_timing_failed({"sse-retry": [fine, timing], **auth}, set(auth))
    # Any other failed check of the scenario, or any other unexpected failure: no second look.
    assert not _only_the_retry_timing_failed({"sse-retry": [timing, lost], **auth}, set(auth))
    assert not _only_the_retry_timing_failed(
        {"sse-retry": [timing], "initialize": [{"id": "i", "status": "FAILURE"}]}, set()
    )
    assert not _only_the_retry_timing_failed({"sse-retry": [fine], **auth}, set(auth))
