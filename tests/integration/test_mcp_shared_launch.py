"""Configs that launch the same stateless MCP server share one process per suite worker: one
session keyed by the launch (command, arguments, whole child environment, cwd), each config
with its own source on it, so the mapping and the pins stay the config's. A config that is not
stateless, or launches the server any differently, never shares; a session that crashed is
closed for every config on it, and the traces are the bytes an unshared run writes."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import pytest

from governance import Principal, ToolCall
from governance.mcp import McpSession, McpToolSource, session_key
from governance.mcp._config import McpServerSpec, ToolMapping
from harness._scenario_runner import ProviderChoice, run_scenario
from harness._suite import load_checked_suite, run_checked_suite
from harness._suite_cache import SuiteCache

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
READ = "{action_type: read, risk: low, reversible: true, external_side_effect: false}"
WRITE = "{action_type: write, risk: low, reversible: true, external_side_effect: false}"
CONFIG = """\
version: 1
servers:
  {name}:
    transport: stdio
    stateless: {stateless}
    command: python
    args: ["-m", "stubs.mcp_demo"{extra}]
    cwd: {cwd}
    env: [{env}]
    tools:
      echo: {echo}
      crash: {read}
"""
POLICY = """\
version: 1
rules:
  - id: demo-calls
    description: the demo server's mapped tools, reads or writes
    effect: allow
    match: {namespace: mcp.demo}
"""
SCENARIO = """\
  - id: {id}
    description: calls {tool} through {config}
    request: go
    policy: policy.yaml
    mcp_config: {config}
    script:
      - calls: [{{tool: mcp.demo.{tool}, args: {args}}}]
      - answer: "said {{{{tool:mcp.demo.{tool}}}}}"
    expect: {{must_execute: [mcp.demo.{tool}]}}
"""
ARGS = {"echo": "{text: hello}", "crash": "{}"}


def _config(
    path: Path,
    *,
    stateless: bool = True,
    echo: str = READ,
    env: str = "",
    extra: str = "",
    name: str = "demo",
) -> Path:
    text = CONFIG.format(
        name=name,
        stateless=str(stateless).lower(),
        extra=extra,
        cwd=REPO,
        env=env,
        echo=echo,
        read=READ,
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def _pids(cache: SuiteCache, config: Path) -> list[int | None]:
    found = cache.shared_mcp_sources(config)
    assert found is not None
    return [source.pid for source in found]


def test_two_configs_launching_the_same_stateless_server_share_one_process(
    tmp_path: Path,
) -> None:
    reads = _config(tmp_path / "reads.yaml")
    writes = _config(tmp_path / "writes.yaml", echo=WRITE)
    cache = SuiteCache()
    try:
        cache.prestart_mcp([reads, writes])
        (read_source,) = cache.shared_mcp_sources(reads) or []
        (write_source,) = cache.shared_mcp_sources(writes) or []
        assert read_source is not write_source
        assert read_source.session is write_source.session
        assert read_source.pid is not None and read_source.pid == write_source.pid
        # The mapping is each config's own, though the server is one.
        (read_echo,) = [d for d in read_source.list_tools() if d.name == "mcp.demo.echo"]
        (write_echo,) = [d for d in write_source.list_tools() if d.name == "mcp.demo.echo"]
        assert (read_echo.action_type, write_echo.action_type) == ("read", "write")
    finally:
        cache.close()
    assert read_source.status.state == write_source.status.state == "closed"


def test_a_config_that_is_not_stateless_never_shares_the_server(tmp_path: Path) -> None:
    shared = _config(tmp_path / "shared.yaml")
    private = _config(tmp_path / "private.yaml", stateless=False)
    cache = SuiteCache()
    try:
        cache.prestart_mcp([shared, private])
        assert cache.shared_mcp_sources(private) is None  # its gateway starts its own
        (pid,) = _pids(cache, shared)
        assert pid is not None
        assert len(cache._sessions) == 1
    finally:
        cache.close()


@pytest.mark.parametrize(
    ("env", "extra"),
    [
        ("PROCTOR_SHARED_LAUNCH_PROBE", ""),  # a variable (set) that only one child gets
        ("", ', "--extra-tool", "other"'),  # other arguments
    ],
)
def test_a_config_launching_the_server_differently_gets_a_process_of_its_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, env: str, extra: str
) -> None:
    monkeypatch.setenv("PROCTOR_SHARED_LAUNCH_PROBE", "only-for-one")
    plain = _config(tmp_path / "plain.yaml")
    different = _config(tmp_path / "different.yaml", env=env, extra=extra)
    cache = SuiteCache()
    try:
        cache.prestart_mcp([plain, different])
        (first,) = _pids(cache, plain)
        (second,) = _pids(cache, different)
        assert first is not None and second is not None and first != second
    finally:
        cache.close()


def test_an_allow_listed_variable_that_is_not_set_leaves_the_launch_the_same(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("PROCTOR_SHARED_LAUNCH_PROBE", raising=False)
    base = McpServerSpec(
        name="demo",
        transport="stdio",
        stateless=True,
        command="python",
        args=("-m", "stubs.mcp_demo"),
        cwd=str(REPO),
    )
    listed = replace(base, env=("PROCTOR_SHARED_LAUNCH_PROBE",))
    environ = {"PATH": "/usr/bin", "HOME": "/root"}
    assert session_key(base, environ) == session_key(listed, environ) is not None
    set_too = {**environ, "PROCTOR_SHARED_LAUNCH_PROBE": "x"}
    assert session_key(base, set_too) != session_key(listed, set_too)
    assert session_key(replace(base, stateless=False), environ) is None
    http = McpServerSpec(name="demo", transport="http", stateless=True, url="http://127.0.0.1:1")
    assert session_key(http, environ) is None


def _suite(tmp_path: Path, steps: list[tuple[str, str]], *, stateless: bool = True) -> Path:
    """A suite whose scenarios call `tool` through `config` (reads.yaml or writes.yaml)."""
    _config(tmp_path / "reads.yaml", stateless=stateless)
    _config(tmp_path / "writes.yaml", stateless=stateless, echo=WRITE)
    (tmp_path / "policy.yaml").write_text(POLICY, encoding="utf-8")
    parts = ["scenarios:\n"]
    for n, (config, tool) in enumerate(steps):
        parts.append(
            SCENARIO.format(id=f"{tool}-{n}", tool=tool, config=config, args=ARGS[tool])
        )
    path = tmp_path / "suite.yaml"
    path.write_text("".join(parts), encoding="utf-8")
    return path


@pytest.mark.parametrize("crasher", ["reads.yaml", "writes.yaml"])
def test_a_crash_through_one_config_replaces_the_session_for_every_config_on_it(
    tmp_path: Path, crasher: str
) -> None:
    other = "writes.yaml" if crasher == "reads.yaml" else "reads.yaml"
    steps = [(other, "echo"), (crasher, "crash"), (other, "echo")]
    suite = load_checked_suite([_suite(tmp_path, steps)])
    cache = SuiteCache()
    try:
        first = run_scenario(suite[0], run_id="r", provider=ProviderChoice(), cache=cache)
        (before,) = cache.shared_mcp_sources(tmp_path / other) or []
        run_scenario(suite[1], run_id="r", provider=ProviderChoice(), cache=cache)
        assert before.status.state == "closed"  # the other config's source went with it
        assert before.session.status.state == "closed"
        last = run_scenario(suite[2], run_id="r", provider=ProviderChoice(), cache=cache)
        (after,) = cache.shared_mcp_sources(tmp_path / other) or []
        assert after.session is not before.session
        assert after.status.restarts == 0 and after.reusable()
    finally:
        cache.close()
    assert first.final_answer == last.final_answer == "said hello"


def _bytes_without_inputs(text: str) -> str:
    return re.sub(r'"inputs_digest":"sha256:[0-9a-f]+"', "", text)


def test_traces_are_the_same_bytes_shared_across_configs_or_not_serial_or_in_parallel(
    tmp_path: Path,
) -> None:
    steps = [
        ("reads.yaml", "echo"),
        ("writes.yaml", "echo"),
        ("writes.yaml", "crash"),
        ("reads.yaml", "echo"),
        ("writes.yaml", "echo"),
    ]
    runs: dict[tuple[bool, int], list[str]] = {}
    for stateless in (True, False):
        for jobs in (1, 2):
            where = tmp_path / f"{stateless}-{jobs}"
            suite = load_checked_suite([_suite(where, steps, stateless=stateless)])
            traces = run_checked_suite(suite, provider=ProviderChoice(), jobs=jobs).traces
            runs[stateless, jobs] = [
                t.model_copy(update={"run_id": "r", "scenario_file": "s"}).model_dump_json()
                for t in traces
            ]
    assert runs[True, 2] == runs[True, 1] and runs[False, 2] == runs[False, 1]
    shared = [_bytes_without_inputs(t) for t in runs[True, 1]]
    assert shared == [_bytes_without_inputs(t) for t in runs[False, 1]]
    assert sum('"final_answer":"said hello"' in t for t in shared) == 4


def _spec(name: str) -> McpServerSpec:
    read = ToolMapping("read", "low", reversible=True, external_side_effect=False)
    return McpServerSpec(
        name=name,
        transport="stdio",
        stateless=True,
        command="python",
        args=("-m", "stubs.mcp_demo"),
        cwd=str(REPO),
        tools={"echo": read, "crash": read},
    )


def _call(source: McpToolSource, tool: str, **arguments: object) -> tuple[str, str | None]:
    call = ToolCall("c1", f"{source.name}.{tool}", arguments, "run", Principal("a", "b", "c"))
    result = source.call(call)
    return result.outcome, result.output if result.outcome == "executed" else result.error


def test_a_source_on_a_shared_session_closes_alone_and_then_refuses_every_call() -> None:
    session = McpSession(_spec("alpha"))
    alpha = McpToolSource(_spec("alpha"), session=session)
    beta = McpToolSource(_spec("beta"), session=session)
    try:
        alpha.begin()
        beta.begin()
        assert alpha.wait_started().state == beta.wait_started().state == "up"
        pid = session.pid
        alpha.close()
        assert alpha.status.state == "closed" and alpha.pid is None and not alpha.reusable()
        outcome, error = _call(alpha, "echo", text="after close")
        assert outcome == "failed" and error is not None and "unavailable" in error
        # The session and the other source are untouched.
        assert session.pid == pid and beta.reusable()
        assert _call(beta, "echo", text="hi") == ("executed", "hi")
        # A crash through beta is reported in beta's name, never alpha's.
        outcome, error = _call(beta, "crash")
        assert outcome == "failed" and error is not None
        assert "mcp.beta" in error and "mcp.alpha" not in error
        assert not beta.reusable()
    finally:
        beta.close()
        alpha.close()
        session.close()
    assert session.status.state == "closed" and session.pid is None
