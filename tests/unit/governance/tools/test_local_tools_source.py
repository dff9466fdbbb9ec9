"""LocalToolSource: schemas come from the argument model; nothing runs on bad input; no raise."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict, Field, field_validator

from governance.core._contracts import Principal, ToolCall, ToolSource
from governance.core._errors import GovernanceError, RegistryError
from governance.tools._local import (
    LocalTool,
    LocalToolSource,
    ToolExecutionError,
    local_tool,
    render_output,
)
from governance.tools._registry import ToolRegistry


class GreetArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = Field(min_length=1, description="Who to greet.")
    times: int = Field(default=1, ge=1, le=3, description="How often.")


class LooseArgs(BaseModel):
    name: str


class Counter:
    def __init__(self) -> None:
        self.calls: list[Any] = []


def make_source(result: Any = "ok", *, raises: BaseException | None = None) -> tuple[
    LocalToolSource, Counter
]:
    counter = Counter()

    @local_tool(
        "demo.greet",
        description="Greet someone.",
        args=GreetArgs,
        action_type="write",
        risk="medium",
        idempotent=True,
    )
    def greet(args: GreetArgs) -> Any:
        counter.calls.append(args)
        if raises is not None:
            raise raises
        return result

    return LocalToolSource([greet]), counter


def call(source: LocalToolSource, arguments: Any, tool: str = "demo.greet") -> Any:
    return source.call(
        ToolCall(
            call_id="c1",
            tool=tool,
            arguments=arguments,
            run_id="run-1",
            principal=Principal(actor="alice", agent="bot", team="support"),
        )
    )


def test_descriptor_facts_come_from_the_decorator_keywords() -> None:
    source, _ = make_source()
    (descriptor,) = source.list_tools()
    assert descriptor.name == "demo.greet"
    assert descriptor.description == "Greet someone."
    assert descriptor.source == "local"
    assert (descriptor.action_type, descriptor.risk) == ("write", "medium")
    assert (descriptor.reversible, descriptor.external_side_effect, descriptor.idempotent) == (
        True,
        False,
        True,
    )


def test_input_schema_is_derived_from_the_argument_model() -> None:
    source, _ = make_source()
    schema = source.list_tools()[0].input_schema
    assert schema == GreetArgs.model_json_schema()
    assert schema["additionalProperties"] is False
    assert schema["required"] == ["name"]
    assert schema["properties"]["times"]["maximum"] == 3
    assert schema["properties"]["name"]["description"] == "Who to greet."


def test_an_argument_model_that_allows_extra_fields_is_refused() -> None:
    with pytest.raises(RegistryError, match="extra='forbid'"):
        local_tool("demo.loose", description="", args=LooseArgs, action_type="read", risk="low")


def test_duplicate_tool_names_are_refused() -> None:
    source, _ = make_source()
    tool = source.get("demo.greet")
    assert tool is not None
    with pytest.raises(RegistryError, match="demo.greet"):
        LocalToolSource([tool, tool])


def test_source_satisfies_the_tool_source_protocol_and_registers() -> None:
    source, _ = make_source()
    assert isinstance(source, ToolSource)
    registry = ToolRegistry([source])
    assert registry.names() == ["demo.greet"]
    assert registry._source_for("demo.greet") is source


def test_source_name_is_configurable() -> None:
    source = LocalToolSource([], name="extras")
    assert source.name == "extras"
    assert source.list_tools() == []


def test_list_tools_is_sorted_by_name() -> None:
    tools = [
        local_tool(n, description="", args=GreetArgs, action_type="read", risk="low")(
            lambda a: "x"
        )
        for n in ("z.last", "a.first", "m.middle")
    ]
    assert [d.name for d in LocalToolSource(tools).list_tools()] == [
        "a.first",
        "m.middle",
        "z.last",
    ]


def test_valid_arguments_run_the_function_once_with_the_parsed_model() -> None:
    source, counter = make_source("hello")
    result = call(source, {"name": "Ada", "times": 2})
    assert (result.outcome, result.output, result.error, result.reason) == (
        "executed",
        "hello",
        None,
        None,
    )
    assert (result.call_id, result.tool) == ("c1", "demo.greet")
    assert counter.calls == [GreetArgs(name="Ada", times=2)]


@pytest.mark.parametrize(
    ("arguments", "field"),
    [
        ({"name": "Ada", "admin": True}, "admin"),  # extra field
        ({"name": 7}, "name"),  # wrong type
        ({"name": "Ada", "times": "2"}, "times"),  # numeric string: strict, no coercion
        ({"name": "Ada", "times": True}, "times"),  # bool is not an int here
        ({}, "name"),  # missing
        ({"name": ""}, "name"),  # constraint
        ({"name": "Ada", "times": 9}, "times"),  # bound
    ],
)
def test_invalid_arguments_fail_without_running_the_function(
    arguments: dict[str, Any], field: str
) -> None:
    source, counter = make_source()
    result = call(source, arguments)
    assert result.outcome == "failed"
    assert result.reason == "invalid_arguments"
    assert result.error is not None
    assert result.error.startswith("invalid arguments for demo.greet: ")
    assert f"{field}: " in result.error
    assert result.output == ""
    assert counter.calls == []


def test_validation_error_does_not_echo_the_argument_values() -> None:
    source, counter = make_source()
    result = call(source, {"name": "Ada", "password": "hunter2-secret"})
    assert result.reason == "invalid_arguments"
    assert "password" in (result.error or "")
    assert "hunter2-secret" not in (result.error or "")
    assert counter.calls == []


def test_non_object_arguments_fail_without_running_the_function() -> None:
    source, counter = make_source()
    result = call(source, ["Ada"])
    assert (result.outcome, result.reason) == ("failed", "invalid_arguments")
    assert "JSON object" in (result.error or "")
    assert counter.calls == []


def test_unknown_tool_is_a_failed_result() -> None:
    source, counter = make_source()
    result = call(source, {"name": "Ada"}, tool="demo.nope")
    assert (result.outcome, result.reason) == ("failed", "unknown_tool")
    assert "demo.nope" in (result.error or "")
    assert counter.calls == []


def test_tool_execution_error_becomes_its_reason_and_message() -> None:
    source, counter = make_source(raises=ToolExecutionError("not_found", "no greeting for Ada"))
    result = call(source, {"name": "Ada"})
    assert (result.outcome, result.reason, result.error) == (
        "failed",
        "not_found",
        "no greeting for Ada",
    )
    assert len(counter.calls) == 1


def test_tool_execution_error_is_a_governance_error_with_a_reason() -> None:
    exc = ToolExecutionError("exists", "already there")
    assert isinstance(exc, GovernanceError)
    assert (exc.reason, str(exc)) == ("exists", "already there")


def test_any_other_exception_is_a_tool_error_result_not_a_raise() -> None:
    source, _ = make_source(raises=ZeroDivisionError("division by zero"))
    result = call(source, {"name": "Ada"})
    assert (result.outcome, result.reason) == ("failed", "tool_error")
    assert result.error == "ZeroDivisionError: division by zero"


def test_keyboard_interrupt_is_not_swallowed() -> None:
    source, _ = make_source(raises=KeyboardInterrupt())
    with pytest.raises(KeyboardInterrupt):
        call(source, {"name": "Ada"})


def test_structured_output_is_sorted_key_json() -> None:
    source, _ = make_source({"b": 1, "a": ["é", 2.5], "c": None})
    result = call(source, {"name": "Ada"})
    assert result.outcome == "executed"
    assert result.output == '{"a": ["é", 2.5], "b": 1, "c": null}'
    assert json.loads(result.output) == {"b": 1, "a": ["é", 2.5], "c": None}


def test_output_is_identical_whatever_the_insertion_order() -> None:
    first, _ = make_source({"x": 1, "y": {"q": 1, "p": 2}})
    second, _ = make_source({"y": {"p": 2, "q": 1}, "x": 1})
    assert call(first, {"name": "A"}).output == call(second, {"name": "A"}).output


@pytest.mark.parametrize("value", [{"x": float("nan")}, {"x": object()}])
def test_unencodable_output_is_a_tool_error(value: Any) -> None:
    source, _ = make_source(value)
    result = call(source, {"name": "Ada"})
    assert (result.outcome, result.reason) == ("failed", "tool_error")
    assert result.output == ""


def test_render_output_passes_strings_through_untouched() -> None:
    assert render_output('{"not": "re-encoded"}') == '{"not": "re-encoded"}'
    assert render_output([1, "a"]) == '[1, "a"]'


def test_validate_arguments_checks_without_running() -> None:
    source, counter = make_source()
    assert source.validate_arguments("demo.greet", {"name": "Ada"}) is None
    error = source.validate_arguments("demo.greet", {"name": "Ada", "extra": 1})
    assert error is not None and "extra" in error
    unknown = source.validate_arguments("demo.missing", {})
    assert unknown is not None and "demo.missing" in unknown
    assert counter.calls == []


def test_local_tool_exposes_its_parts() -> None:
    source, _ = make_source()
    tool = source.get("demo.greet")
    assert isinstance(tool, LocalTool)
    assert tool.args_model is GreetArgs
    assert tool.name == tool.descriptor.name == "demo.greet"
    assert source.get("demo.other") is None


class ExplodingArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str

    @field_validator("name")
    @classmethod
    def explode(cls, value: str) -> str:
        raise LookupError("validator bug")


def test_a_validator_that_raises_oddly_refuses_without_running() -> None:
    ran: list[object] = []
    decorate = local_tool(
        "demo.boom", description="", args=ExplodingArgs, action_type="read", risk="low"
    )
    tool = decorate(ran.append)
    source = LocalToolSource([tool])
    result = call(source, {"name": "x"}, tool="demo.boom")
    assert (result.outcome, result.reason) == ("failed", "invalid_arguments")
    assert "LookupError: validator bug" in (result.error or "")
    assert source.validate_arguments("demo.boom", {"name": "x"}) is not None
    assert ran == []
