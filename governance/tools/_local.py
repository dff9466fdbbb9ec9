"""In-process tools: a pydantic argument model, governance facts, and a plain Python function.

A `LocalToolSource` validates arguments before anything runs and turns every failure into a
failed `ToolResult`, so a misbehaving tool can never crash the run that governs it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from governance.core._contracts import ActionType, Risk, ToolCall, ToolDescriptor, ToolResult
from governance.core._errors import GovernanceError, RegistryError

ModelT = TypeVar("ModelT", bound=BaseModel)


class ToolExecutionError(GovernanceError):
    """A tool refused or failed on purpose; `reason` is a stable code (`not_found`, ...).

    `before_effect=True` states that the tool refused before it changed anything: only then is
    the call's budget slot released (audit `effect: none`). The default, False, means the
    effect is unknown (the slot stays counted), whatever the reason: raise with True only from
    a check that comes before every change."""

    def __init__(self, reason: str, message: str, *, before_effect: bool = False) -> None:
        self.reason = reason
        self.message = message
        self.before_effect = before_effect
        super().__init__(message)


@dataclass(frozen=True, slots=True)
class LocalTool:
    """One in-process tool: what it is, what it accepts, and the function that does it."""

    descriptor: ToolDescriptor
    args_model: type[BaseModel]
    fn: Callable[[Any], object]

    @property
    def name(self) -> str:
        return self.descriptor.name


def local_tool(
    name: str,
    *,
    description: str,
    args: type[ModelT],
    action_type: ActionType,
    risk: Risk,
    reversible: bool = True,
    external_side_effect: bool = False,
    idempotent: bool = False,
    source: str = "local",
    untrusted_output: bool = False,
) -> Callable[[Callable[[ModelT], object]], LocalTool]:
    """Decorate `fn(args) -> str | JSON` into a `LocalTool`; the input schema comes from `args`."""
    if args.model_config.get("extra") != "forbid":
        raise RegistryError(
            f"tool {name!r}: argument model {args.__name__} must set "
            "model_config = ConfigDict(extra='forbid') so unknown arguments are refused"
        )
    descriptor = ToolDescriptor(
        name=name,
        description=description,
        input_schema=args.model_json_schema(),
        source=source,
        action_type=action_type,
        risk=risk,
        reversible=reversible,
        external_side_effect=external_side_effect,
        idempotent=idempotent,
        untrusted_output=untrusted_output,
    )

    def wrap(fn: Callable[[ModelT], object]) -> LocalTool:
        return LocalTool(descriptor=descriptor, args_model=args, fn=fn)

    return wrap


def _describe_validation_error(tool: str, exc: ValidationError) -> str:
    # Input values are left out on purpose: they may carry secrets into traces and audit.
    problems = []
    for error in exc.errors(include_url=False, include_input=False, include_context=False):
        field = ".".join(str(part) for part in error["loc"]) or "<arguments>"
        problems.append(f"{field}: {error['msg']}")
    return f"invalid arguments for {tool}: " + "; ".join(problems)


def render_output(value: object) -> str:
    """A tool's return value as text: strings as-is, anything else as sorted-key JSON."""
    if isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True, ensure_ascii=False, allow_nan=False)


class LocalToolSource:
    """A `ToolSource` over in-process tools. Never raises from a call: failures are results."""

    def __init__(self, tools: Iterable[LocalTool], *, name: str = "local") -> None:
        self.name = name
        self._tools: dict[str, LocalTool] = {}
        for tool in tools:
            if tool.name in self._tools:
                raise RegistryError(
                    f"source {name!r} defines tool {tool.name!r} twice; give each tool one name"
                )
            self._tools[tool.name] = tool

    def list_tools(self) -> list[ToolDescriptor]:
        return [self._tools[name].descriptor for name in sorted(self._tools)]

    def get(self, tool_name: str) -> LocalTool | None:
        return self._tools.get(tool_name)

    def _parse(self, tool: LocalTool, arguments: object) -> BaseModel | str:
        """The validated model, or an error message. Strict: the policy saw these exact values."""
        if not isinstance(arguments, Mapping):
            return f"invalid arguments for {tool.name}: arguments must be a JSON object"
        try:
            return tool.args_model.model_validate(dict(arguments), strict=True)
        except ValidationError as exc:
            return _describe_validation_error(tool.name, exc)
        except Exception as exc:  # a validator that raises something else still refuses
            return f"invalid arguments for {tool.name}: {type(exc).__name__}: {exc}"

    def validate_arguments(self, tool_name: str, arguments: object) -> str | None:
        """Check arguments against a tool's model without running it: an error message or None."""
        tool = self._tools.get(tool_name)
        if tool is None:
            return f"unknown tool {tool_name!r} in source {self.name!r}"
        parsed = self._parse(tool, arguments)
        return parsed if isinstance(parsed, str) else None

    def call(self, call: ToolCall) -> ToolResult:
        tool = self._tools.get(call.tool)
        if tool is None:
            message = f"unknown tool {call.tool!r} in source {self.name!r}"
            return self._failed(call, "unknown_tool", message, before_effect=True)
        parsed = self._parse(tool, call.arguments)
        if isinstance(parsed, str):  # refused before the function is called
            return self._failed(call, "invalid_arguments", parsed, before_effect=True)
        try:
            output = render_output(tool.fn(parsed))
        except ToolExecutionError as exc:  # pre-effect only if the tool itself says so
            return self._failed(call, exc.reason, exc.message, before_effect=exc.before_effect)
        except Exception as exc:  # a tool bug is a failed call, never a crashed run
            return self._failed(call, "tool_error", f"{type(exc).__name__}: {exc}")
        return ToolResult(call_id=call.call_id, tool=call.tool, outcome="executed", output=output)

    @staticmethod
    def _failed(
        call: ToolCall, reason: str, message: str, *, before_effect: bool = False
    ) -> ToolResult:
        return ToolResult(
            call_id=call.call_id,
            tool=call.tool,
            outcome="failed",
            error=message,
            reason=reason,
            before_effect=before_effect,
        )
