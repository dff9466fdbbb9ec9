"""A ToolSource over one AgentDojo environment: the suite's functions run in-process, behind the
firewall like any other tool (only the firewall calls `call`).

The source keeps every call it received, in order: AgentDojo's trace-based checks read them.
The firewall sends only what it allowed, so a blocked call never appears there, as it never
touched the environment.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from pydantic_core import to_jsonable_python

from governance.agentdojo._suite import SOURCE_NAME, SuiteTools
from governance.core._contracts import ToolCall, ToolDescriptor, ToolResult


def render_result(value: Any) -> str:
    """A function's return value as the model reads it: strings as they are, anything else as
    JSON in the model's own field order (AgentDojo's default is YAML; JSON is what Proctor's
    replay quotes and claims check read)."""
    if isinstance(value, str):
        return value
    return json.dumps(to_jsonable_python(value), ensure_ascii=False, allow_nan=False)


@dataclass(frozen=True, slots=True)
class ReceivedCall:
    function: str
    args: dict[str, Any]


@dataclass(slots=True)
class AgentDojoToolSource:
    """`<suite>.<function>` tools over `environment` (mutated by the calls, as in AgentDojo)."""

    tools: SuiteTools
    environment: Any
    received: list[ReceivedCall] = field(default_factory=list)
    name: str = SOURCE_NAME

    def list_tools(self) -> list[ToolDescriptor]:
        return list(self.tools.descriptors)

    def call(self, call: ToolCall) -> ToolResult:
        prefix = f"{self.tools.name}."
        function = call.tool[len(prefix) :] if call.tool.startswith(prefix) else None
        if function is None or function not in self.tools.functions:
            return ToolResult(
                call_id=call.call_id,
                tool=call.tool,
                outcome="failed",
                error=f"unknown tool {call.tool!r} in source {self.name!r}",
                reason="unknown_tool",
                before_effect=True,
            )
        arguments = dict(call.arguments)
        self.received.append(ReceivedCall(function, arguments))
        try:
            value, error = self.tools.runtime.run_function(self.environment, function, arguments)
        except Exception as exc:  # a function that raises past AgentDojo's own handling
            value, error = None, f"{type(exc).__name__}: {exc}"
        if error is not None:
            return ToolResult(
                call_id=call.call_id,
                tool=call.tool,
                outcome="failed",
                error=error,
                reason="tool_error",
                # AgentDojo validates the arguments before the function runs.
                before_effect=error.startswith("ValidationError"),
            )
        return ToolResult(
            call_id=call.call_id, tool=call.tool, outcome="executed", output=render_result(value)
        )
