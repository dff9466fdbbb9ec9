"""The chat-completions request body, built once for the live provider and for cassettes.

`request_body` is exactly what the live provider hands the openai SDK (model, messages with
vendor-safe tool names, sanitised tool schemas; `tools` omitted when empty, as OpenAI rejects
`[]`), so a cassette compares the very body a vendor would have received. No SDK import here:
a cassette replay never loads `openai`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from harness.providers._base import Message, ToolSpec
from harness.providers._schema import ToolNameCodec, sanitize_tool_schema

__all__ = ["request_body"]


def request_body(
    model: str, messages: Sequence[Message], tools: Sequence[ToolSpec]
) -> tuple[dict[str, Any], ToolNameCodec]:
    """The JSON body of one request, and the codec that maps the vendor's tool names back.

    Raises ValueError when a tool cannot be offered (no name, an unusable schema)."""
    codec = ToolNameCodec.for_request(tools, messages)
    wire_tools = [_encode_tool(tool, codec) for tool in tools]
    body: dict[str, Any] = {
        "model": model,
        "messages": [_encode_message(message, codec) for message in messages],
    }
    if wire_tools:
        body["tools"] = wire_tools
    return body, codec


def _encode_tool(tool: ToolSpec, codec: ToolNameCodec) -> dict[str, Any]:
    """A tool spec with a vendor-safe name and a sanitised schema; the input is not mutated."""
    function = tool.get("function")
    if not isinstance(function, Mapping) or not isinstance(function.get("name"), str):
        raise ValueError(f"a tool spec needs function.name, got {dict(tool)!r}")
    name = function["name"]
    try:
        parameters = sanitize_tool_schema(function.get("parameters"))
    except ValueError as exc:
        raise ValueError(f"tool {name!r}: {exc}") from None
    wire_function = {**function, "name": codec.encode(name), "parameters": parameters}
    return {**tool, "type": tool.get("type", "function"), "function": wire_function}


def _encode_message(message: Message, codec: ToolNameCodec) -> dict[str, Any]:
    """A history message with tool names in the assistant's tool calls encoded; a copy."""
    wire = dict(message)
    calls = message.get("tool_calls")
    if isinstance(calls, Sequence) and not isinstance(calls, str):
        wire["tool_calls"] = [_encode_call(call, codec) for call in calls]
    return wire


def _encode_call(call: Any, codec: ToolNameCodec) -> Any:
    if not isinstance(call, Mapping):
        return call
    function = call.get("function")
    if not isinstance(function, Mapping) or not isinstance(function.get("name"), str):
        return dict(call)
    return {**call, "function": {**function, "name": codec.encode(function["name"])}}
