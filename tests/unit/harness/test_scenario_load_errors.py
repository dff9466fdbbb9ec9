"""A broken suite is one readable error: every problem, `FILE:LINE: scenario ID: where: what`."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness._errors import ScenarioError
from harness._scenario_load import load_scenarios

BASE = """\
id: lookup
description: looks up an order
request: where is ORD-0001?
script:
  - calls:
      - tool: orders.lookup
        args: {order_id: ORD-0001}
  - answer: it shipped
reviews:
  - action: approve
expect:
  must_execute: [orders.lookup]
"""


def _problems(tmp_path: Path, text: str, name: str = "s.yaml") -> list[str]:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ScenarioError) as info:
        load_scenarios([path])
    prefix = f"{path}:"
    lines = str(info.value).splitlines()
    assert all(line.startswith(prefix) for line in lines), lines
    return [line.removeprefix(prefix) for line in lines]


def _edit(old: str, new: str) -> str:
    assert old in BASE
    return BASE.replace(old, new)


def test_the_unedited_base_scenario_is_valid(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(BASE, encoding="utf-8")
    assert [s.scenario.id for s in load_scenarios([path])] == ["lookup"]


def test_a_misspelled_key_is_named_with_a_suggestion(tmp_path: Path) -> None:
    assert _problems(tmp_path, _edit("  - calls:", "  - cals:")) == [
        "5: scenario lookup: script[0]: unknown key 'cals' (did you mean 'calls'?)"
    ]


def test_a_misspelled_top_level_key_lists_the_allowed_ones_when_nothing_is_close(
    tmp_path: Path,
) -> None:
    [problem] = _problems(tmp_path, BASE + "zzz: 1\n")
    assert problem.startswith("13: scenario lookup: unknown key 'zzz'; allowed keys: ")
    assert "expect, " in problem and "script, " in problem


def test_a_call_without_tool_is_one_message_without_union_noise(tmp_path: Path) -> None:
    assert _problems(tmp_path, _edit("      - tool: orders.lookup\n", "      - tol: x\n")) == [
        "6: scenario lookup: script[0].calls[0]: missing required key 'tool'",
        "6: scenario lookup: script[0].calls[0]: unknown key 'tol' (did you mean 'tool'?)",
    ]


def test_a_bad_review_action_lists_the_choices(tmp_path: Path) -> None:
    assert _problems(tmp_path, _edit("action: approve", "action: aprove")) == [
        "10: scenario lookup: reviews[0].action: value 'aprove' is not allowed here; use one "
        "of: approve, reject, leave, expire (did you mean 'approve'?)"
    ]


def test_a_missing_expect_points_at_the_scenario(tmp_path: Path) -> None:
    text = BASE.split("expect:")[0]
    assert _problems(tmp_path, text) == ["1: scenario lookup: missing required key 'expect'"]


def test_a_branch_is_judged_as_a_branch(tmp_path: Path) -> None:
    text = _edit(
        "  - answer: it shipped\n",
        "  - branch:\n"
        "      exeucted:\n"
        "        - answer: done\n"
        "      held:\n"
        "        - calls:\n"
        "            - {tool: orders.lookup, arg: {}}\n",
    )
    assert _problems(tmp_path, text) == [
        "9: scenario lookup: script[1].branch.exeucted: key 'exeucted' is not allowed here; use "
        "one of: executed, blocked, held, failed (did you mean 'executed'?)",
        "13: scenario lookup: script[1].branch.held[0].calls[0]: unknown key 'arg' (did you "
        "mean 'args'?)",
    ]


def test_a_turn_with_a_stray_branch_key_is_judged_as_a_branch(tmp_path: Path) -> None:
    text = _edit("  - answer: it shipped\n", "  - answer: x\n    branch: {}\n")
    assert _problems(tmp_path, text) == [
        "8: scenario lookup: script[1]: unknown key 'answer'; allowed keys: branch, otherwise"
    ]


def test_a_step_that_is_not_a_mapping_says_what_it_should_be(tmp_path: Path) -> None:
    text = _edit("  - answer: it shipped\n", "  - it shipped\n")
    assert _problems(tmp_path, text) == [
        "8: scenario lookup: script[1]: expected a mapping, not the string 'it shipped'"
    ]


def test_an_empty_turn_gives_the_models_own_message(tmp_path: Path) -> None:
    text = _edit("  - answer: it shipped\n", "  - {}\n")
    [problem] = _problems(tmp_path, text)
    assert problem.startswith("8: scenario lookup: script[1]: a turn needs `calls`")


def test_a_must_block_item_of_the_wrong_shape_names_both_allowed_shapes(tmp_path: Path) -> None:
    text = _edit("  must_execute: [orders.lookup]\n", "  must_block:\n    - 3\n    - {tol: x}\n")
    assert _problems(tmp_path, text) == [
        "13: scenario lookup: expect.must_block[0]: expected a mapping or a string, not the "
        "number 3",
        "14: scenario lookup: expect.must_block[1]: missing required key 'tool'",
        "14: scenario lookup: expect.must_block[1]: unknown key 'tol' (did you mean 'tool'?)",
    ]


def test_a_bad_id_names_the_pattern(tmp_path: Path) -> None:
    [problem] = _problems(tmp_path, _edit("id: lookup", "id: Lookup Order"))
    assert problem.startswith("1: scenario Lookup Order: id: 'Lookup Order' does not match")


def test_a_scenario_without_id_is_named_by_position(tmp_path: Path) -> None:
    assert _problems(tmp_path, _edit("id: lookup\n", "")) == [
        "1: scenario #1: missing required key 'id'"
    ]


def test_problems_of_every_file_and_scenario_are_reported_together(tmp_path: Path) -> None:
    first = tmp_path / "a.yaml"
    first.write_text(_edit("action: approve", "action: nope"), encoding="utf-8")
    listed = "scenarios:\n  - 5\n  - id: other\n    description: d\n    request: r\n"
    second = tmp_path / "b.yaml"
    second.write_text(listed, encoding="utf-8")
    with pytest.raises(ScenarioError) as info:
        load_scenarios([tmp_path])
    assert info.value.path == str(first) and info.value.line == 10
    lines = str(info.value).splitlines()
    assert lines[0].startswith(f"{first}:10: scenario lookup: reviews[0].action:")
    assert lines[1:] == [
        f"{second}:2: scenario #1: expected a mapping (id, description, request, script, "
        "expect), not the number 5",
        # a script is optional: without one the scenario is live-only
        f"{second}:3: scenario other: missing required key 'expect'",
    ]


@pytest.mark.parametrize(
    ("text", "line", "fragment"),
    [
        ("", 1, "the scenario file is empty"),
        ("- id: a\n", 1, "a scenario file holds one scenario"),
        ("scenarios: []\n", 1, "`scenarios:` must be a non-empty list"),
        ("scenarios:\n  - 1\nextra: 2\n", 3, "unknown key 'extra' next to `scenarios:`"),
        ("id: a\nid: b\n", 2, "duplicate key 'id' (first on line 1)"),
        ("id: a\nscript: [\n", 3, "invalid YAML"),
        ("id: !!python/object:os.system a\n", 1, "invalid YAML"),
    ],
)
def test_file_level_problems_name_the_file_and_line(
    tmp_path: Path, text: str, line: int, fragment: str
) -> None:
    problems = _problems(tmp_path, text)
    assert any(p.startswith(f"{line}: ") and fragment in p for p in problems), problems


def test_a_file_that_is_not_utf8_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "latin1.yaml"
    path.write_bytes(b"id: a\n# caf\xe9\n")
    with pytest.raises(ScenarioError, match=rf"^{path}:2: the scenario file is not UTF-8"):
        load_scenarios([path])


@pytest.mark.parametrize(
    "path", ["notes\\\\..\\\\secrets/k.txt", "../outside.txt", "/etc/x", "a\\u200b/b.txt", "."]
)
def test_a_setup_file_is_read_by_the_one_path_function(tmp_path: Path, path: str) -> None:
    text = BASE + f'setup:\n  files:\n    "{path}": hello\n'
    [problem] = _problems(tmp_path, text)
    assert "must be a relative path inside the sandbox" in problem
