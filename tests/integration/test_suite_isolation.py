"""Scenarios share a process's cache (policies, tools, a workspace template), never state: what
one scenario writes, deletes or inserts is gone before the next one starts, in either order,
serial or in parallel."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness._scenario_runner import ProviderChoice, run_scenario
from harness._suite import load_checked_suite, run_checked_suite
from harness._suite_cache import SuiteCache
from harness._trace import Trace

POLICY = """\
version: 1
defaults: {unknown_tool: block, no_match: block}
rules:
  - id: anything
    description: The isolation test may do anything to the demo workspace
    effect: allow
    match: {tool: "*"}
"""

WRITER = """\
  - id: {id}
    description: Leaves a mark on every kind of workspace state
    request: make a mess
    policy: policy.yaml
    setup:
      files: {{"planted.txt": "planted by setup"}}
    script:
      - calls:
          - {{tool: fs.write, args: {{path: notes/new.txt, content: written by the writer}}}}
          - {{tool: fs.delete, args: {{path: notes/todo.txt}}}}
          - {{tool: fs.write, args: {{path: reports/q3.md, content: overwritten}}}}
          - {{tool: refunds.create_draft, args: {{order_id: ORD-0001, amount: 5.0, reason: r}}}}
          - {{tool: tickets.create, args: {{title: t, body: b, priority: low}}}}
      - answer: done
    expect: {{status: completed}}
"""

READER = """\
  - id: {id}
    description: Reports what the workspace holds
    request: look around
    policy: policy.yaml
    script:
      - calls:
          - {{tool: fs.list, args: {{path: "."}}}}
          - {{tool: fs.search, args: {{query: "e", path: notes}}}}
          - {{tool: fs.read, args: {{path: reports/q3.md}}}}
          - {{tool: db.query, args: {{sql: "{counts}"}}}}
      - answer: >-
          top={{{{tool:fs.list}}}} notes={{{{tool:fs.search}}}} q3={{{{tool:fs.read}}}}
          rows={{{{tool:db.query}}}}
    expect: {{status: completed}}
"""


COUNTS = (
    "SELECT (SELECT count(*) FROM refund_drafts) AS drafts, "
    "(SELECT count(*) FROM tickets) AS tickets"
)


def _suite(tmp_path: Path, order: list[str]) -> Path:
    (tmp_path / "policy.yaml").write_text(POLICY, encoding="utf-8")
    parts = ["scenarios:\n"]
    for n, kind in enumerate(order):
        template = WRITER if kind == "writer" else READER
        parts.append(template.format(id=f"{kind}-{n}", counts=COUNTS))
    path = tmp_path / "suite.yaml"
    path.write_text("".join(parts), encoding="utf-8")
    return path


def _answers(traces: list[Trace]) -> dict[str, str]:
    return {t.scenario_id: str(t.final_answer) for t in traces}


def _reader_alone(tmp_path: Path) -> str:
    alone = tmp_path / "alone"
    alone.mkdir()
    traces = run_checked_suite(
        load_checked_suite([_suite(alone, ["reader"])]), provider=ProviderChoice()
    ).traces
    return str(traces[0].final_answer)


@pytest.mark.parametrize("jobs", [1, 2])
@pytest.mark.parametrize(
    "order",
    [
        ["writer", "reader", "writer", "reader"],
        ["reader", "writer", "reader", "writer", "writer", "reader"],
    ],
)
def test_a_scenario_that_writes_and_deletes_cannot_affect_the_next(
    tmp_path: Path, order: list[str], jobs: int
) -> None:
    clean = _reader_alone(tmp_path)
    assert "notes/todo.txt" in clean and "new.txt" not in clean and "planted" not in clean
    assert "Revenue grew" in clean and '"rows": [[0, 0]]' in clean
    traces = run_checked_suite(
        load_checked_suite([_suite(tmp_path, order)]), provider=ProviderChoice(), jobs=jobs
    ).traces
    assert all(t.status == "completed" for t in traces), [t.termination for t in traces]
    writers = [t for t in traces if t.scenario_id.startswith("writer")]
    for writer in writers:  # every writer really changed the state it found
        outcomes = [getattr(s, "outcome", None) for s in writer.spans if s.kind == "tool_call"]
        assert outcomes == ["executed"] * 5, writer.scenario_id
    for sid, answer in _answers(traces).items():
        if sid.startswith("reader"):
            # Exactly what a reader sees in a suite of its own: nothing the writers left.
            assert answer == clean, sid
            assert "new.txt" not in answer and "planted" not in answer
            assert "overwritten" not in answer


def test_the_reader_sees_what_a_writer_leaves_when_state_is_not_reset(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The isolation test above can fail: with the reset disabled, the writer's marks show."""
    cache = SuiteCache()
    try:
        cache.fresh_workspace()
        monkeypatch.setattr(cache, "fresh_workspace", lambda: cache.workspace)
        suite = load_checked_suite([_suite(tmp_path, ["writer", "reader"])])
        run_scenario(suite[0], run_id="r", provider=ProviderChoice(), cache=cache)
        leaked = run_scenario(suite[1], run_id="r", provider=ProviderChoice(), cache=cache)
    finally:
        cache.close()
    answer = str(leaked.final_answer)
    assert "new.txt" in answer and "planted" in answer and "overwritten" in answer
    assert '"rows": [[1, 1]]' in answer


def test_an_edited_policy_file_is_compiled_again(tmp_path: Path) -> None:
    path = tmp_path / "policy.yaml"
    path.write_text(POLICY, encoding="utf-8")
    cache = SuiteCache()
    try:
        first = cache.policy(path)
        assert cache.policy(path) is first  # parsed once per content
        path.write_text(POLICY.replace("anything", "everything"), encoding="utf-8")
        second = cache.policy(path)
    finally:
        cache.close()
    assert second is not first and second.digest != first.digest


def test_the_suite_scratch_is_removed_when_the_suite_ends(tmp_path: Path) -> None:
    cache = SuiteCache()
    root = cache.workspace.root.parent
    assert root.is_dir()
    cache.close()
    assert not root.exists()
