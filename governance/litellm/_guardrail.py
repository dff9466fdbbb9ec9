"""`ProctorGuardrail`: the LiteLLM `CustomGuardrail` that sends tool calls through Proctor.

Only this module imports LiteLLM (and FastAPI, which the proxy brings); the LiteLLM proxy loads
it from its config (`guardrail: governance.litellm.ProctorGuardrail`). Hooks used (1.110.x):

- `async_pre_call_hook` with `call_type == "call_mcp_tool"` (mode `pre_mcp_call`): LiteLLM
  runs it before it executes an MCP tool, on the MCP endpoint (`/mcp`) and the REST one
  (`/mcp-rest/tools/call`). A refusal raises; the call does not run.
- `async_post_mcp_tool_call_hook`: LiteLLM ran the tool; its result is handed to the firewall.
- `async_log_failure_event`: LiteLLM failed after the call was let through: effect unknown.
- `async_post_call_success_hook` (mode `post_call`): tool calls in a model's response that
  policy would not allow are withheld from the client, in every shape that hook receives
  (chat completion, Responses API, Anthropic message; `_response_sites`); a call-like thing
  in any other shape withholds the whole response (HTTP 502, audited).
- `async_post_call_streaming_iterator_hook`: the same for a streamed response, which the
  post-call hook never sees (`_streamed_calls`, `_sse`).
Key or team metadata never switches these off (`should_run_guardrail`), and LiteLLM settings
that would skip the decision or discard the judged arguments stop the proxy (`_hook_config`).
The client never sees a store's error text: it goes to the server log, password scrubbed.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import secrets
from collections.abc import AsyncIterator, Mapping
from typing import Any

from fastapi import HTTPException
from litellm.integrations.custom_guardrail import CustomGuardrail

from governance.core._contracts import Principal
from governance.core._errors import ConfigError
from governance.litellm._governor import BrokeredCall, Refused, ToolCallGovernor
from governance.litellm._hook_config import POST_CALL, PRE_MCP_CALL, ConfigGuard, hook_names
from governance.litellm._redact import scrubbed
from governance.litellm._response_calls import UnrecognisedToolCall
from governance.litellm._response_sites import withhold_disallowed
from governance.litellm._settings import PREFIX, GuardrailSettings, settings_from
from governance.litellm._streamed_calls import StreamedCalls
from governance.stores._backends import StoreUrlError

logger = logging.getLogger("proctor.litellm")
_RUN_ID = re.compile(r"[A-Za-z0-9_.:-]{1,128}")
MCP_CALL = "call_mcp_tool"
UNAVAILABLE = "Proctor's stores are unavailable; nothing was executed"


class ProctorGuardrail(ConfigGuard, CustomGuardrail):  # type: ignore[misc]  # LiteLLM is untyped
    """Every MCP tool call LiteLLM brokers goes through Proctor's firewall before it runs."""

    def __init__(self, **kwargs: Any) -> None:
        ours = {key: kwargs.pop(key) for key in list(kwargs) if key.startswith(PREFIX)}
        super().__init__(**kwargs)
        # A bad setting stops the proxy here, with the key and the fix in the message: ours,
        # and LiteLLM's that would skip the decision or drop the judged arguments.
        self.check_litellm_settings()
        self.proctor_settings: GuardrailSettings = settings_from(ours, os.environ)
        self._governor: ToolCallGovernor | None = None
        self._opening = asyncio.Lock()
        try:
            self._governor = ToolCallGovernor(self.proctor_settings)
        except (ConfigError, StoreUrlError):
            raise  # a policy or store URL the operator must fix: the proxy does not start
        except Exception as exc:  # the store is unreachable: every call fails closed, retried
            logger.error(
                "Proctor cannot open its stores yet; every tool call is refused: %s",
                scrubbed(str(exc), self.proctor_settings.store_url),
            )

    def should_run_guardrail(self, data: Any, event_type: Any) -> bool:
        """On an MCP tool call, and on a model response when `post_call` is configured, Proctor
        always runs: LiteLLM's own rule would skip it for a key or team whose admin metadata
        sets `disable_global_guardrails` or opts out of it by name, for a request that does
        not name it (`default_on: false`), or by `stream_scope`. Elsewhere LiteLLM's rule holds."""
        event = str(getattr(event_type, "value", event_type))
        if event == PRE_MCP_CALL or (event == POST_CALL and self._filters_responses()):
            return True
        return bool(super().should_run_guardrail(data=data, event_type=event_type))

    async def _governor_or_refuse(self) -> ToolCallGovernor:
        """The governor; opened again when the store was unavailable (HTTP 503 while it is)."""
        if self._governor is not None:
            return self._governor
        async with self._opening:
            if self._governor is None:
                try:
                    self._governor = await asyncio.to_thread(
                        ToolCallGovernor, self.proctor_settings
                    )
                except Exception as exc:
                    # The detail (host, user, and through libpq even a password) is for the
                    # server log only, scrubbed; the client gets an id to quote.
                    incident = f"proctor-{secrets.token_hex(6)}"
                    logger.error(
                        "%s: Proctor's stores are unavailable: %s: %s",
                        incident,
                        type(exc).__name__,
                        scrubbed(str(exc), self.proctor_settings.store_url),
                    )
                    raise HTTPException(
                        status_code=503,
                        detail={
                            "error": UNAVAILABLE,
                            "code": "proctor_unavailable",
                            "status": "blocked",
                            "incident": incident,
                        },
                    ) from None
            return self._governor

    # -- MCP tool calls ---------------------------------------------------------------------

    async def async_pre_call_hook(
        self, user_api_key_dict: Any, cache: Any, data: dict[str, Any], call_type: Any
    ) -> dict[str, Any]:
        if str(getattr(call_type, "value", call_type)) != MCP_CALL:
            return data  # a tool listing or a model call: nothing executes here
        governor = await self._governor_or_refuse()
        raw = data.get("mcp_arguments")
        if raw is not None and not isinstance(raw, Mapping):
            raise HTTPException(status_code=403, detail=_refusal("arguments_not_an_object"))
        call = brokered_call(data, user_api_key_dict, self.proctor_settings.run_header)
        try:
            go = await governor.before(call)
        except Refused as refused:
            raise HTTPException(status_code=403, detail=refused.detail()) from None
        if not go.arguments and raw:
            # LiteLLM reads an empty `modified_arguments` as "unchanged" and would run the raw
            # arguments: the judged `{}` cannot be expressed, so the call does not run (the
            # call is recorded as not dispatched.)
            detail = _refusal("judged_arguments_inexpressible")
            await governor.withdrawn(call.correlation, detail["error"], detail["code"])
            raise HTTPException(status_code=403, detail=detail)
        data["modified_arguments"] = go.arguments  # the judged form is the executed form
        data["mcp_arguments"] = go.arguments
        return data

    async def async_post_mcp_tool_call_hook(
        self, kwargs: dict[str, Any], response_obj: Any, start_time: Any, end_time: Any
    ) -> None:
        correlation = kwargs.get("litellm_call_id")
        if self._governor is None or not isinstance(correlation, str):
            return None
        content = getattr(response_obj, "mcp_tool_call_response", None) or []
        await self._governor.after(
            correlation, _text(content), is_error=_is_error(kwargs.get("original_response"))
        )
        return None

    async def async_log_failure_event(
        self, kwargs: dict[str, Any], response_obj: Any, start_time: Any, end_time: Any
    ) -> None:
        correlation = kwargs.get("litellm_call_id")
        if self._governor is None or not isinstance(correlation, str):
            return
        error = kwargs.get("exception")
        await self._governor.failed(correlation, f"{type(error).__name__}: {error}")

    # -- tool calls in model responses ------------------------------------------------------

    async def async_post_call_success_hook(
        self, data: dict[str, Any], user_api_key_dict: Any, response: Any
    ) -> Any:
        if not self._filters_responses():
            return response
        governor = await self._governor_or_refuse()
        principal = principal_of(user_api_key_dict)
        correlation = _correlation(data)
        run_id = _run_id(data, self.proctor_settings.run_header, correlation)
        try:
            await asyncio.to_thread(withhold_disallowed, governor, response, principal, run_id)
        except UnrecognisedToolCall as unknown:
            raise HTTPException(status_code=502, detail=unknown.detail()) from None
        return response

    async def async_post_call_streaming_iterator_hook(
        self, user_api_key_dict: Any, response: Any, request_data: dict[str, Any]
    ) -> AsyncIterator[Any]:
        """The same for a streamed completion: tool-call chunks wait for the end of the stream,
        then go out without the calls policy does not allow."""
        if not self._filters_responses():
            async for chunk in response:
                yield chunk
            return
        governor = await self._governor_or_refuse()
        principal = principal_of(user_api_key_dict)
        run_id = _run_id(
            request_data, self.proctor_settings.run_header, _correlation(request_data)
        )
        streamed = StreamedCalls()
        try:
            async for chunk in response:
                for piece in streamed.feed(chunk):
                    yield piece
            released = await asyncio.to_thread(streamed.release, governor, principal, run_id)
        except UnrecognisedToolCall as unknown:
            await asyncio.to_thread(unknown.audit, governor, run_id)
            raise HTTPException(status_code=502, detail=unknown.detail()) from None
        for chunk in released:
            yield chunk

    def _filters_responses(self) -> bool:
        return POST_CALL in hook_names(self.event_hook)


# -- what LiteLLM hands the hooks ---------------------------------------------------------


def principal_of(user_api_key_dict: Any) -> Principal:
    """Who acts, from LiteLLM's authenticated key (never from the request body or headers)."""
    user_id = getattr(user_api_key_dict, "user_id", None)
    key_hash = getattr(user_api_key_dict, "api_key", None) or getattr(
        user_api_key_dict, "token", None
    )
    key = f"key-{str(key_hash)[:12]}" if key_hash else "key-unknown"
    alias = getattr(user_api_key_dict, "key_alias", None)
    team = getattr(user_api_key_dict, "team_id", None)
    return Principal(
        actor=str(user_id) if user_id else key,
        agent=str(alias) if alias else key,
        team=str(team) if team else "litellm",
    )


def _correlation(data: Mapping[str, Any]) -> str:
    logging_obj = data.get("litellm_logging_obj")
    found = getattr(logging_obj, "litellm_call_id", None) or data.get("litellm_call_id")
    return found if isinstance(found, str) and found else f"proctor-{secrets.token_hex(8)}"


def _run_id(data: Mapping[str, Any], header: str, correlation: str) -> str:
    """The client's run id header when it is well formed, else one run per LiteLLM request."""
    metadata = data.get("metadata")
    headers = metadata.get("headers") if isinstance(metadata, Mapping) else None
    if isinstance(headers, Mapping):
        for name, value in headers.items():
            if str(name).lower() == header and isinstance(value, str):
                if _RUN_ID.fullmatch(value):
                    return value
    return f"litellm-{correlation}"


def brokered_call(data: Mapping[str, Any], user_api_key_dict: Any, header: str) -> BrokeredCall:
    """The MCP call in the synthetic request LiteLLM builds for its pre-MCP-call guardrails."""
    correlation = _correlation(data)
    arguments = data.get("mcp_arguments")
    schema = data.get("mcp_input_schema")
    return BrokeredCall(
        server=str(data.get("mcp_server_name") or ""),
        tool=str(data.get("mcp_tool_name") or ""),
        arguments=arguments if isinstance(arguments, Mapping) else {},
        principal=principal_of(user_api_key_dict),
        run_id=_run_id(data, header, correlation),
        call_id=f"c-{correlation}",
        correlation=correlation,
        description=str(data.get("mcp_tool_description") or ""),
        input_schema=schema if isinstance(schema, Mapping) else None,
    )


def _refusal(code: str) -> dict[str, str]:
    why = {
        "arguments_not_an_object": "the tool call's arguments are not a JSON object",
        "judged_arguments_inexpressible": "LiteLLM cannot run the arguments Proctor judged "
        "(an empty object) instead of the ones sent",
    }[code]
    return {"error": f"{why}; nothing was executed", "code": code, "status": "blocked"}


def _text(content: Any) -> str:
    parts = []
    for item in content:
        text = getattr(item, "text", None)
        parts.append(text if isinstance(text, str) else json.dumps({"type": str(item)}))
    return "\n".join(parts)


def _is_error(original: Any) -> bool:
    flag = getattr(original, "is_error", None)
    if flag is None and isinstance(original, Mapping):
        flag = original.get("isError", original.get("is_error"))
    return flag is True
