"""Strict request validation: a malformed chat request gets the 400 a strict vendor would send.

The checks that matter most to Proctor are the conversation-flow ones: a `tool` message must
answer a call of the assistant message right before its block, every assistant tool call must be
answered before the next non-tool message, and `function.arguments` is JSON *text*. An agent loop
that describes calls in prose or drops tool results fails here, loudly, as it would against a
real vendor. Tool names follow OpenAI's `^[a-zA-Z0-9_-]{1,64}$`: no dots.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any, Literal, NoReturn

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError

from stubs.openai_stub._errors import VendorError, bad_request

Role = Literal["system", "developer", "user", "assistant", "tool"]
ToolChoice = Literal["none", "auto", "required", "function"]

TOOL_NAME = re.compile(r"[a-zA-Z0-9_-]{1,64}")
ROLES: tuple[Role, ...] = ("system", "developer", "user", "assistant", "tool")

# Every parameter the chat-completions API knows; anything else is rejected like OpenAI does.
KNOWN_PARAMS = frozenset(
    {
        "audio", "frequency_penalty", "function_call", "functions", "logit_bias", "logprobs",
        "max_completion_tokens", "max_tokens", "messages", "metadata", "modalities", "model",
        "moderation", "n", "parallel_tool_calls", "prediction", "presence_penalty",
        "prompt_cache_key", "prompt_cache_options", "prompt_cache_retention", "reasoning_effort",
        "response_format", "safety_identifier", "seed", "service_tier", "stop", "store", "stream",
        "stream_options", "temperature", "tool_choice", "tools", "top_logprobs", "top_p", "user",
        "verbosity", "web_search_options",
    }
)  # fmt: skip
_UNSUPPORTED_PARAMS = {
    "functions": "the deprecated 'functions' parameter is not supported by the stub; use 'tools'",
    "function_call": "the deprecated 'function_call' parameter is not supported; use 'tool_choice'",
}
# Top-level parameters whose value is one of a fixed set (openai SDK `CompletionCreateParams`,
# `ReasoningEffort`); null means "the default", as the API reads it.
_ENUM_PARAMS: dict[str, tuple[str, ...]] = {
    "reasoning_effort": ("none", "minimal", "low", "medium", "high", "xhigh", "max"),
    "verbosity": ("low", "medium", "high"),
    "service_tier": ("auto", "default", "flex", "scale", "priority", "fast"),
    "prompt_cache_retention": ("in_memory", "24h"),
}
_TEXT_ROLES_KEYS = frozenset({"role", "content", "name"})
_MESSAGE_KEYS: dict[str, frozenset[str]] = {
    "system": _TEXT_ROLES_KEYS,
    "developer": _TEXT_ROLES_KEYS,
    "user": _TEXT_ROLES_KEYS,
    "assistant": frozenset(
        {
            "role",
            "content",
            "name",
            "tool_calls",
            "refusal",
            "audio",
            "function_call",
            "annotations",
        }
    ),
    "tool": frozenset({"role", "content", "tool_call_id", "name"}),
}
# The content parts each role may carry (openai SDK `ChatCompletion*MessageParam`); a part the
# stub cannot read (an image, audio, a file) is accepted and stands as a placeholder in `text`.
_PARTS_BY_ROLE: dict[str, tuple[str, ...]] = {
    "system": ("text",),
    "developer": ("text",),
    "user": ("text", "image_url", "input_audio", "file"),
    "tool": ("text",),
}
_CACHE_KEY = "prompt_cache_breakpoint"
_IMAGE_DETAIL = ("auto", "low", "high", "original")
_AUDIO_FORMATS = ("wav", "mp3")


@dataclass(frozen=True, slots=True)
class HistoryCall:
    """A tool call an assistant message in the request history made."""

    id: str
    name: str
    arguments: str


@dataclass(frozen=True, slots=True)
class ChatMessage:
    """One validated message; `text` joins its text parts with newlines."""

    role: Role
    text: str
    tool_calls: tuple[HistoryCall, ...] = ()
    tool_call_id: str | None = None


@dataclass(frozen=True, slots=True)
class FunctionTool:
    name: str
    description: str
    parameters: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class ChatRequest:
    """A chat-completions request that passed validation. `digest` hashes the whole body."""

    model: str
    messages: tuple[ChatMessage, ...]
    tools: tuple[FunctionTool, ...]
    tool_choice: ToolChoice
    forced_tool: str | None
    stream: bool
    include_usage: bool
    digest: str


def _json_type(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _invalid_type(param: str, expected: str, value: object) -> NoReturn:
    raise bad_request(
        f"Invalid type for '{param}': expected {expected}, but got {_json_type(value)} instead.",
        param=param,
        code="invalid_type",
    )


def _missing(param: str) -> NoReturn:
    raise bad_request(
        f"Missing required parameter: '{param}'.", param=param, code="missing_required_parameter"
    )


def _empty(param: str) -> NoReturn:
    raise bad_request(
        f"Invalid '{param}': empty array. Expected an array with minimum length 1, "
        "but got an empty array instead.",
        param=param,
        code="empty_array",
    )


def _no_unknown_keys(obj: Mapping[str, Any], allowed: Collection[str], param: str) -> None:
    unknown = sorted(set(obj) - set(allowed))
    if unknown:
        where = f"{param}.{unknown[0]}"
        raise bad_request(f"Unknown parameter: '{where}'.", param=where, code="unknown_parameter")


def _object(value: object, param: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        _invalid_type(param, "an object", value)
    return value


def _string(value: object, param: str, *, non_empty: bool = False) -> str:
    if not isinstance(value, str):
        _invalid_type(param, "a string", value)
    if non_empty and not value:
        raise bad_request(
            f"Invalid '{param}': empty string. Expected a string with minimum length 1.",
            param=param,
            code="empty_string",
        )
    return value


def _tool_name(value: object, param: str) -> str:
    name = _string(value, param)
    if not TOOL_NAME.fullmatch(name):
        raise bad_request(
            f"Invalid '{param}': string does not match pattern. Expected a string that matches "
            f"the pattern '^[a-zA-Z0-9_-]{{1,64}}$', got {name!r}.",
            param=param,
            code="invalid_value",
        )
    return name


def _reject_constant(name: str) -> NoReturn:
    raise ValueError(f"{name} is not valid JSON")


def _parse_body(body: bytes) -> dict[str, Any]:
    try:
        data = json.loads(body, parse_constant=_reject_constant)
    except (ValueError, UnicodeDecodeError):
        raise bad_request(
            "We could not parse the JSON body of your request. The body must be one JSON object.",
            code="invalid_json",
        ) from None
    if not isinstance(data, dict):
        raise bad_request(
            "We could not parse the JSON body of your request: expected a JSON object, got "
            f"{_json_type(data)}.",
            code="invalid_json",
        )
    return data


def parse_request(body: bytes, models: Collection[str]) -> ChatRequest:
    """Validate a chat-completions body against `models` (every servable model id)."""
    data = _parse_body(body)
    if "model" not in data:
        raise bad_request(
            "You must provide a model parameter.", param="model", code="missing_required_parameter"
        )
    model = _string(data["model"], "model", non_empty=True)
    if model not in models:
        raise VendorError(
            404,
            f"The model `{model}` does not exist or you do not have access to it.",
            code="model_not_found",
        )
    for key in sorted(data):
        if key not in KNOWN_PARAMS:
            raise bad_request(
                f"Unrecognized request argument supplied: {key}",
                param=key,
                code="unknown_parameter",
            )
        if key in _UNSUPPORTED_PARAMS and data[key] is not None:
            raise bad_request(_UNSUPPORTED_PARAMS[key], param=key, code="unsupported_parameter")
        if key in _ENUM_PARAMS:
            _one_of(data[key], _ENUM_PARAMS[key], key)
    n = data.get("n")
    if n is not None and (isinstance(n, bool) or n != 1):
        raise bad_request("The stub supports only n=1.", param="n", code="unsupported_value")
    stream, include_usage = _stream_flags(data)
    tools = _tools(data.get("tools"))
    tool_choice, forced = _tool_choice(data.get("tool_choice"), tools)
    if "messages" not in data:
        _missing("messages")
    messages = _messages(data["messages"])
    _check_tool_flow(messages)
    # Streaming is delivery, not content: a streamed reply carries the same ids as a plain one.
    content = {k: v for k, v in data.items() if k not in ("stream", "stream_options")}
    canonical = json.dumps(content, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return ChatRequest(
        model=model,
        messages=messages,
        tools=tools,
        tool_choice=tool_choice,
        forced_tool=forced,
        stream=stream,
        include_usage=include_usage,
        digest=hashlib.sha256(canonical.encode("utf-8")).hexdigest(),
    )


def _stream_flags(data: Mapping[str, Any]) -> tuple[bool, bool]:
    stream = data.get("stream")
    if stream is not None and not isinstance(stream, bool):
        _invalid_type("stream", "a boolean", stream)
    options = data.get("stream_options")
    if options is None:
        return bool(stream), False
    if not stream:
        raise bad_request(
            "The 'stream_options' parameter is only allowed when 'stream' is enabled.",
            param="stream_options",
            code="invalid_value",
        )
    options = _object(options, "stream_options")
    _no_unknown_keys(options, ("include_usage", "include_obfuscation"), "stream_options")
    include_usage = options.get("include_usage")
    if include_usage is not None and not isinstance(include_usage, bool):
        _invalid_type("stream_options.include_usage", "a boolean", include_usage)
    return True, bool(include_usage)


def _tools(raw: object) -> tuple[FunctionTool, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        _invalid_type("tools", "an array", raw)
    if not raw:
        _empty("tools")
    tools: list[FunctionTool] = []
    first_seen: dict[str, int] = {}
    for i, item in enumerate(raw):
        param = f"tools[{i}]"
        spec = _object(item, param)
        _no_unknown_keys(spec, ("type", "function"), param)
        if "type" not in spec:
            _missing(f"{param}.type")
        if spec["type"] != "function":
            raise bad_request(
                f"Invalid value for '{param}.type': {spec['type']!r}. The stub supports only "
                "'function' tools.",
                param=f"{param}.type",
                code="invalid_value",
            )
        if "function" not in spec:
            _missing(f"{param}.function")
        tool = _function_tool(_object(spec["function"], f"{param}.function"), f"{param}.function")
        if tool.name in first_seen:
            raise bad_request(
                f"Duplicate tool name {tool.name!r} in tools[{first_seen[tool.name]}] and "
                f"{param}: tool names must be unique.",
                param=f"{param}.function.name",
                code="duplicate_tool_name",
            )
        first_seen[tool.name] = i
        tools.append(tool)
    return tuple(tools)


def _function_tool(function: Mapping[str, Any], param: str) -> FunctionTool:
    _no_unknown_keys(function, ("name", "description", "parameters", "strict"), param)
    if "name" not in function:
        _missing(f"{param}.name")
    name = _tool_name(function["name"], f"{param}.name")
    description = function.get("description")
    if description is not None:
        _string(description, f"{param}.description")
    strict = function.get("strict")
    if strict is not None and not isinstance(strict, bool):
        _invalid_type(f"{param}.strict", "a boolean", strict)
    parameters = function.get("parameters")
    if parameters is None:
        parameters = {}
    _object(parameters, f"{param}.parameters")
    _check_parameters_schema(name, parameters, f"{param}.parameters")
    return FunctionTool(name=name, description=description or "", parameters=parameters)


def _check_parameters_schema(name: str, schema: Mapping[str, Any], param: str) -> None:
    if not schema:
        return  # `{}`: a function without parameters
    if schema.get("type") != "object":
        raise bad_request(
            f"Invalid schema for function {name!r}: schema must be a JSON Schema of "
            f"'type: \"object\"', got 'type: {json.dumps(schema.get('type'))}'.",
            param=param,
            code="invalid_function_parameters",
        )
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as exc:
        raise bad_request(
            f"Invalid schema for function {name!r}: {exc.message}.",
            param=param,
            code="invalid_function_parameters",
        ) from None


def _tool_choice(raw: object, tools: tuple[FunctionTool, ...]) -> tuple[ToolChoice, str | None]:
    if raw is None:
        return ("auto" if tools else "none"), None
    if raw == "none":
        return "none", None
    if not tools:
        raise bad_request(
            "Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' are "
            "specified.",
            param="tool_choice",
            code="invalid_value",
        )
    if raw in ("auto", "required"):
        return ("auto" if raw == "auto" else "required"), None
    if isinstance(raw, dict) and raw.get("type") == "function":
        _no_unknown_keys(raw, ("type", "function"), "tool_choice")
        function = _object(raw.get("function"), "tool_choice.function")
        _no_unknown_keys(function, ("name",), "tool_choice.function")
        name = _string(function.get("name"), "tool_choice.function.name")
        if name not in {tool.name for tool in tools}:
            raise bad_request(
                f"Invalid value for 'tool_choice': no function named {name!r} was specified in "
                "the 'tools' parameter.",
                param="tool_choice.function.name",
                code="invalid_value",
            )
        return "function", name
    raise bad_request(
        "Invalid value for 'tool_choice': expected 'none', 'auto', 'required' or "
        '{"type": "function", "function": {"name": ...}}.',
        param="tool_choice",
        code="invalid_value",
    )


def _messages(raw: object) -> tuple[ChatMessage, ...]:
    if not isinstance(raw, list):
        _invalid_type("messages", "an array", raw)
    if not raw:
        _empty("messages")
    return tuple(_message(item, f"messages[{i}]") for i, item in enumerate(raw))


def _message(raw: object, param: str) -> ChatMessage:
    message = _object(raw, param)
    if "role" not in message:
        _missing(f"{param}.role")
    role = message["role"]
    if role not in ROLES:
        raise bad_request(
            f"Invalid value: {role!r}. Supported values are: "
            + ", ".join(f"'{r}'" for r in ROLES)
            + ".",
            param=f"{param}.role",
            code="invalid_value",
        )
    _no_unknown_keys(message, _MESSAGE_KEYS[role], param)
    name = message.get("name")
    if name is not None:
        _string(name, f"{param}.name")
    if role == "assistant":
        return _assistant_message(message, param)
    text = _content_text(
        message.get("content"), f"{param}.content", _PARTS_BY_ROLE[role], optional=False
    )
    if role == "tool":
        if "tool_call_id" not in message:
            _missing(f"{param}.tool_call_id")
        call_id = _string(message["tool_call_id"], f"{param}.tool_call_id", non_empty=True)
        return ChatMessage(role="tool", text=text or "", tool_call_id=call_id)
    return ChatMessage(role=role, text=text or "")


def _assistant_message(message: Mapping[str, Any], param: str) -> ChatMessage:
    _assistant_extras(message, param)
    refusal = message.get("refusal")
    if refusal is not None:
        _string(refusal, f"{param}.refusal")
    text = _content_text(
        message.get("content"), f"{param}.content", ("text", "refusal"), optional=True
    )
    calls = _history_calls(message.get("tool_calls"), f"{param}.tool_calls")
    echoed = message.get("audio") is not None or message.get("function_call") is not None
    if text is None and not calls and refusal is None and not echoed:
        raise bad_request(
            f"Missing parameter '{param}.content': an assistant message needs 'content' "
            "unless it has 'tool_calls'.",
            param=f"{param}.content",
            code="missing_required_parameter",
        )
    return ChatMessage(role="assistant", text=text or "", tool_calls=calls)


def _assistant_extras(message: Mapping[str, Any], param: str) -> None:
    """What an SDK echoes back from a response message: `audio` ({id}), the deprecated
    `function_call` ({name, arguments}) and `annotations` (url citations); each may be null."""
    audio = message.get("audio")
    if audio is not None:
        audio = _object(audio, f"{param}.audio")
        _no_unknown_keys(audio, ("id",), f"{param}.audio")
        _string(audio.get("id"), f"{param}.audio.id", non_empty=True)
    function_call = message.get("function_call")
    if function_call is not None:
        function_call = _object(function_call, f"{param}.function_call")
        _no_unknown_keys(function_call, ("name", "arguments"), f"{param}.function_call")
        for key in ("name", "arguments"):
            if key not in function_call:
                _missing(f"{param}.function_call.{key}")
            _string(function_call[key], f"{param}.function_call.{key}")
    annotations = message.get("annotations")
    if annotations is not None:
        if not isinstance(annotations, list):
            _invalid_type(f"{param}.annotations", "an array", annotations)
        for k, item in enumerate(annotations):
            _object(item, f"{param}.annotations[{k}]")
            _string(item.get("type"), f"{param}.annotations[{k}].type", non_empty=True)


def _content_text(
    value: object, param: str, parts: tuple[str, ...], *, optional: bool
) -> str | None:
    if value is None:
        if optional:
            return None
        _missing(param)
    if isinstance(value, str):
        return value
    if not isinstance(value, list):
        _invalid_type(param, "a string or an array of content parts", value)
    if not value:
        _empty(param)
    texts: list[str] = []
    for j, item in enumerate(value):
        part = _object(item, f"{param}[{j}]")
        kind = part.get("type")
        if kind not in parts:
            raise bad_request(
                f"Invalid value for '{param}[{j}].type': {kind!r}. Supported values here are: "
                + ", ".join(f"'{p}'" for p in parts)
                + ".",
                param=f"{param}[{j}].type",
                code="invalid_value",
            )
        texts.append(_part_text(part, kind, f"{param}[{j}]"))
    return "\n".join(texts)


def _part_text(part: Mapping[str, Any], kind: str, param: str) -> str:
    """The text a part contributes: its own text, or a placeholder for media the stub can't
    read. Each part's shape is checked as the real API checks it."""
    _no_unknown_keys(part, ("type", kind, _CACHE_KEY), param)
    cache = part.get(_CACHE_KEY)
    if cache is not None:
        cache = _object(cache, f"{param}.{_CACHE_KEY}")
        _no_unknown_keys(cache, ("mode", "ttl"), f"{param}.{_CACHE_KEY}")
    if kind in ("text", "refusal"):
        return _string(part.get(kind), f"{param}.{kind}")
    if kind not in part:
        _missing(f"{param}.{kind}")
    body = _object(part[kind], f"{param}.{kind}")
    if kind == "image_url":
        _no_unknown_keys(body, ("url", "detail"), f"{param}.image_url")
        if "url" not in body:
            _missing(f"{param}.image_url.url")
        _string(body["url"], f"{param}.image_url.url", non_empty=True)
        _one_of(body.get("detail"), _IMAGE_DETAIL, f"{param}.image_url.detail")
        return "[image]"
    if kind == "input_audio":
        _no_unknown_keys(body, ("data", "format"), f"{param}.input_audio")
        for key in ("data", "format"):
            if key not in body:
                _missing(f"{param}.input_audio.{key}")
        _string(body["data"], f"{param}.input_audio.data")
        _one_of(body["format"], _AUDIO_FORMATS, f"{param}.input_audio.format", required=True)
        return "[audio]"
    _no_unknown_keys(body, ("file_data", "file_id", "filename"), f"{param}.file")
    for key, value in body.items():
        _string(value, f"{param}.file.{key}")
    if "file_data" not in body and "file_id" not in body:
        _missing(f"{param}.file.file_id")
    return f"[file {body.get('filename') or body.get('file_id') or ''}]".replace(" ]", "]")


def _one_of(value: object, allowed: tuple[str, ...], param: str, *, required: bool = False) -> None:
    if value is None and not required:
        return
    if value not in allowed:
        raise bad_request(
            f"Invalid value: {value!r}. Supported values are: "
            + ", ".join(f"'{a}'" for a in allowed)
            + ".",
            param=param,
            code="invalid_value",
        )


def _history_calls(raw: object, param: str) -> tuple[HistoryCall, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        _invalid_type(param, "an array", raw)
    if not raw:
        _empty(param)
    calls: list[HistoryCall] = []
    for k, item in enumerate(raw):
        p = f"{param}[{k}]"
        call = _object(item, p)
        _no_unknown_keys(call, ("id", "type", "function"), p)
        for key in ("id", "type", "function"):
            if key not in call:
                _missing(f"{p}.{key}")
        call_id = _string(call["id"], f"{p}.id", non_empty=True)
        if call["type"] != "function":
            raise bad_request(
                f"Invalid value for '{p}.type': {call['type']!r}. Supported values are: "
                "'function'.",
                param=f"{p}.type",
                code="invalid_value",
            )
        function = _object(call["function"], f"{p}.function")
        _no_unknown_keys(function, ("name", "arguments"), f"{p}.function")
        for key in ("name", "arguments"):
            if key not in function:
                _missing(f"{p}.function.{key}")
        name = _tool_name(function["name"], f"{p}.function.name")
        arguments = function["arguments"]
        if not isinstance(arguments, str):
            _invalid_type(
                f"{p}.function.arguments", "a string (the arguments as JSON text)", arguments
            )
        if any(c.id == call_id for c in calls):
            raise bad_request(
                f"Duplicate tool call id {call_id!r} in {param}: ids must be unique.",
                param=f"{p}.id",
                code="invalid_value",
            )
        calls.append(HistoryCall(id=call_id, name=name, arguments=arguments))
    return tuple(calls)


def _check_tool_flow(messages: tuple[ChatMessage, ...]) -> None:
    """Tool messages answer the calls of the assistant message right before their block."""
    open_index: int | None = None
    open_ids: tuple[str, ...] = ()
    answered: set[str] = set()
    for i, message in enumerate(messages):
        if message.role == "tool":
            _check_tool_answer(messages, i, open_index, open_ids, answered)
            answered.add(message.tool_call_id or "")
            continue
        _check_all_answered(open_index, open_ids, answered)
        open_index, open_ids, answered = None, (), set()
        if message.tool_calls:
            open_index, open_ids = i, tuple(c.id for c in message.tool_calls)
    _check_all_answered(open_index, open_ids, answered)


def _check_tool_answer(
    messages: tuple[ChatMessage, ...],
    i: int,
    open_index: int | None,
    open_ids: tuple[str, ...],
    answered: set[str],
) -> None:
    call_id = messages[i].tool_call_id
    param = f"messages[{i}].tool_call_id"
    if call_id in answered:
        raise bad_request(
            f"Invalid parameter: tool call {call_id!r} is answered twice ({param}).",
            param=param,
            code="invalid_value",
        )
    if open_index is not None and call_id in open_ids:
        return
    earlier = [k for k, m in enumerate(messages[:i]) if any(c.id == call_id for c in m.tool_calls)]
    where = (
        f" It answers a call of messages[{earlier[-1]}], but tool messages must directly follow "
        "the assistant message that made the call."
        if earlier
        else f" No earlier assistant message made a tool call with id {call_id!r}."
    )
    raise bad_request(
        "Invalid parameter: messages with role 'tool' must be a response to a preceding message "
        f"with 'tool_calls'.{where}",
        param=param,
        code="invalid_value",
    )


def _check_all_answered(
    open_index: int | None, open_ids: tuple[str, ...], answered: set[str]
) -> None:
    missing = [call_id for call_id in open_ids if call_id not in answered]
    if open_index is None or not missing:
        return
    raise bad_request(
        "An assistant message with 'tool_calls' must be followed by tool messages responding to "
        "each 'tool_call_id'. The following tool_call_ids did not have response messages: "
        + ", ".join(missing),
        param=f"messages[{open_index}].tool_calls",
        code="invalid_value",
    )
