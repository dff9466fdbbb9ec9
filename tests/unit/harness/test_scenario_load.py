"""Scenario files load with the line of every key; directories, lists, tags and policy paths."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness._errors import ScenarioError
from harness._scenario_load import (
    LoadedScenario,
    default_policy_path,
    load_scenarios,
    resolve_policy_path,
)
from harness._select import SelectionError

ONE = """\
id: {id}
description: looks up an order
tags: [{tags}]
request: where is ORD-0001?
script:
  - calls:
      - tool: orders.lookup
        args: {{order_id: ORD-0001}}
  - answer: it shipped
expect:
  must_execute: [orders.lookup]
"""


def _scenario(sid: str, tags: str = "") -> str:
    return ONE.format(id=sid, tags=tags)


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def _indent(text: str, prefix: str) -> str:
    return "".join(prefix + line if line else line for line in text.splitlines(keepends=True))


def _list_file(*texts: str) -> str:
    items = ["  - " + _indent(text, "    ").lstrip() for text in texts]
    return "scenarios:\n" + "".join(items)


def _ids(loaded: list[LoadedScenario]) -> list[str]:
    return [item.scenario.id for item in loaded]


def test_a_single_scenario_file_loads_with_its_lines(tmp_path: Path) -> None:
    path = _write(tmp_path / "one.yaml", "# a comment first\n" + _scenario("lookup"))
    [loaded] = load_scenarios([path])
    assert loaded.scenario.id == "lookup"
    assert loaded.path == path
    assert loaded.line == 2
    assert loaded.line_of("script", 0, "calls", 0, "tool") == 8
    assert loaded.line_of("script", 0, "calls", 0, "args", "order_id") == 9
    assert loaded.line_of("expect", "must_execute", 0) == 12


def test_line_of_falls_back_to_the_closest_known_parent(tmp_path: Path) -> None:
    [loaded] = load_scenarios([_write(tmp_path / "one.yaml", _scenario("lookup"))])
    assert loaded.line_of("script", 0, "calls", 0, "args", "absent") == 8
    assert loaded.line_of("principal", "actor") == loaded.line == 1
    assert loaded.line_of() == 1


def test_a_list_file_gives_each_scenario_its_own_relative_lines(tmp_path: Path) -> None:
    path = _write(tmp_path / "many.yaml", _list_file(_scenario("first"), _scenario("second")))
    first, second = load_scenarios([path])
    assert (first.scenario.id, second.scenario.id) == ("first", "second")
    assert (first.line, second.line) == (2, 13)
    assert first.line_of("script", 0, "calls", 0, "tool") == 8
    assert second.line_of("script", 0, "calls", 0, "tool") == 19
    assert ("scenarios", 0, "id") not in first.lines


def test_a_directory_is_searched_recursively_in_sorted_order_skipping_scripts(
    tmp_path: Path,
) -> None:
    _write(tmp_path / "b.yaml", _scenario("b-top"))
    _write(tmp_path / "a" / "z.yml", _scenario("a-z"))
    _write(tmp_path / "a" / "b.yaml", _scenario("a-b"))
    _write(tmp_path / "scripts" / "replay.yaml", "script:\n  - answer: hi\n")
    _write(tmp_path / "a" / "scripts" / "deep.yaml", "script:\n  - answer: hi\n")
    _write(tmp_path / "policies" / "strict.yaml", "version: 1\nrules: []\n")
    _write(tmp_path / "notes.txt", "not a scenario")
    _write(tmp_path / "scenario.schema.json", "{}")
    assert _ids(load_scenarios([tmp_path])) == ["a-b", "a-z", "b-top"]


def test_imported_agentdojo_scenarios_run_only_when_their_folder_is_named(
    tmp_path: Path,
) -> None:
    _write(tmp_path / "b.yaml", _scenario("b-top"))
    _write(tmp_path / "agentdojo" / "banking" / "user_task_0.yaml", _scenario("imported"))
    _write(tmp_path / "team" / "agentdojo" / "mine.yaml", _scenario("deeper"))
    assert _ids(load_scenarios([tmp_path])) == ["b-top", "deeper"]
    assert _ids(load_scenarios([tmp_path / "agentdojo"])) == ["imported"]


def test_the_same_file_given_twice_is_loaded_once(tmp_path: Path) -> None:
    path = _write(tmp_path / "one.yaml", _scenario("lookup"))
    assert _ids(load_scenarios([path, tmp_path])) == ["lookup"]


def test_tags_keep_scenarios_having_any_of_them(tmp_path: Path) -> None:
    _write(tmp_path / "a.yaml", _scenario("smoke-only", "smoke"))
    _write(tmp_path / "b.yaml", _scenario("both", "smoke, refunds"))
    _write(tmp_path / "c.yaml", _scenario("refunds-only", "refunds"))
    _write(tmp_path / "d.yaml", _scenario("untagged"))
    assert _ids(load_scenarios([tmp_path], tags=["refunds"])) == ["both", "refunds-only"]
    assert _ids(load_scenarios([tmp_path], tags=["smoke", "refunds"])) == [
        "smoke-only",
        "both",
        "refunds-only",
    ]
    assert len(load_scenarios([tmp_path])) == 4


def test_an_empty_selection_is_an_error_naming_the_existing_tags(tmp_path: Path) -> None:
    _write(tmp_path / "a.yaml", _scenario("smoke-only", "smoke"))
    with pytest.raises(
        SelectionError, match=r"--tag 'nightly': no scenario has this tag \(tags: smoke\)"
    ):
        load_scenarios([tmp_path], tags=["nightly"])
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ScenarioError, match="no scenarios found here") as caught:
        load_scenarios([empty])
    assert str(caught.value).startswith(f"{empty}: ")  # the path, never `<input>:`


def test_a_missing_path_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ScenarioError, match="no such file or directory") as info:
        load_scenarios([tmp_path / "absent"])
    assert info.value.path == str(tmp_path / "absent")


def test_duplicate_ids_across_files_name_both_places(tmp_path: Path) -> None:
    first = _write(tmp_path / "a.yaml", _scenario("same"))
    second = _write(tmp_path / "b.yaml", "\n\n" + _scenario("same"))
    with pytest.raises(ScenarioError) as info:
        load_scenarios([tmp_path])
    assert str(info.value) == (
        f"{second}:3: scenario same: duplicate id, first used at {first}:1; scenario ids are "
        "unique across the suite, rename one"
    )


def test_duplicate_ids_within_one_list_file_are_an_error(tmp_path: Path) -> None:
    path = _write(tmp_path / "many.yaml", _list_file(_scenario("twin"), _scenario("twin")))
    with pytest.raises(ScenarioError, match=rf"^{path}:13: scenario twin: duplicate id") as info:
        load_scenarios([path])
    assert f"first used at {path}:2" in str(info.value)


def test_the_default_policy_is_the_shipped_one_and_others_are_relative_to_the_file(
    tmp_path: Path,
) -> None:
    text = _scenario("custom").replace("request:", "policy: ../policies/strict.yaml\nrequest:")
    custom = _write(tmp_path / "suite" / "custom.yaml", text)
    default = _write(tmp_path / "suite" / "default.yaml", _scenario("shipped"))
    [loaded_custom] = load_scenarios([custom])
    [loaded_default] = load_scenarios([default])
    assert resolve_policy_path(loaded_custom) == tmp_path / "suite" / "../policies/strict.yaml"
    assert resolve_policy_path(loaded_default) == default_policy_path()
    assert default_policy_path().name == "default_policy.yaml"
    assert default_policy_path().is_file()


def test_a_hallucinated_call_is_a_valid_scenario_field(tmp_path: Path) -> None:
    text = _scenario("ghost").replace(
        "- tool: orders.lookup\n", "- tool: orders.teleport\n        hallucinated: true\n"
    )
    [loaded] = load_scenarios([_write(tmp_path / "ghost.yaml", text)])
    step = loaded.scenario.script[0]
    assert not hasattr(step, "branch")
    assert step.calls[0].hallucinated is True  # type: ignore[union-attr]


def test_display_paths_depend_on_where_the_file_is_never_on_how_it_was_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "project"
    path = _write(project / "scenarios" / "deep" / "a.yaml", _scenario("a"))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    shown = set()
    for cwd, spelling in [
        (project, Path("scenarios")),
        (project, Path("./scenarios/deep/a.yaml")),
        (project / "scenarios", Path(".")),
        (project / "scenarios" / "deep", Path("a.yaml")),
        (elsewhere, path),
        (elsewhere, Path("../project/scenarios/deep/../deep")),
    ]:
        monkeypatch.chdir(cwd)
        [loaded] = load_scenarios([spelling])
        shown.add(loaded.display_path)
    assert shown == {"scenarios/deep/a.yaml"}


def test_the_scenario_root_is_the_nearer_of_a_project_and_a_scenarios_directory(
    tmp_path: Path,
) -> None:
    (tmp_path / "proj").mkdir()
    (tmp_path / "proj" / "pyproject.toml").write_text("[project]\n", "utf-8")
    in_project = _write(tmp_path / "proj" / "evals" / "a.yaml", _scenario("a"))
    nested = _write(tmp_path / "proj" / "agents" / "scenarios" / "b.yaml", _scenario("b"))
    loose = _write(tmp_path / "loose" / "c.yaml", _scenario("c"))
    [a], [b], [c] = (load_scenarios([p]) for p in (in_project, nested, loose))
    assert (a.display_path, b.display_path, c.display_path) == (
        "evals/a.yaml",
        "scenarios/b.yaml",
        "c.yaml",
    )
