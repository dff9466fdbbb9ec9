"""Tool calls in a streamed response, in the three stream shapes LiteLLM 1.110 hands the
streaming iterator hook: chat completion chunks, Responses API events (objects), and the raw
server-sent-event frames of `/v1/messages` (bytes). From the first piece that starts a tool
call to the end of the stream, everything is held; then it goes out without the calls policy
does not allow (`release`). A piece in no known shape that carries anything call-like raises
UnrecognisedToolCall (the stream stops there: fail closed), and so does a stream whose
pieces a client could assemble into another call than the one judged (chat: `_add`; Responses
API: `_response_events`; `/v1/messages`: `_sse`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from governance.core._contracts import Principal
from governance.litellm._response_calls import UnrecognisedToolCall, verdicts
from governance.litellm._response_events import event_type, release_events
from governance.litellm._response_sites import Judged
from governance.litellm._sse import AnthropicEvents
from governance.litellm._tool_like import first_tool_like, get, is_call_type, put

if TYPE_CHECKING:
    from governance.litellm._governor import ToolCallGovernor

_LEGACY: Final = -1  # the tool-call index of a legacy `function_call` delta


class StreamedCalls:
    """One stream's held pieces and the calls assembled from them."""

    def __init__(self) -> None:
        self.held: list[Any] = []
        self._chat: dict[tuple[int, int], list[str]] = {}  # name, arguments, id
        self._sse = AnthropicEvents()
        self._items_out: list[str] = []  # Responses items already added for the client

    def feed(self, chunk: Any) -> list[Any]:
        """What may go out now of `chunk` (the rest is held here until `release`)."""
        if isinstance(chunk, (bytes, bytearray, str)):
            self._sse.hold(chunk)
            return list(self._sse.take_ready())
        return [] if self._hold(chunk) else [chunk]

    def _hold(self, chunk: Any) -> bool:
        if get(chunk, "choices") is not None:
            return self._hold_chat(chunk)
        kind = get(chunk, "type")
        if isinstance(kind, str) and kind.startswith("response."):
            return self._hold_event(chunk)
        found = first_tool_like(chunk)
        if found is not None:  # a piece in no shape read here, carrying a call: fail closed
            raise UnrecognisedToolCall(found)
        if self.held:
            self.held.append(chunk)
            return True
        return False

    # -- chat completion chunks -------------------------------------------------------------

    def _hold_chat(self, chunk: Any) -> bool:
        choices = get(chunk, "choices") or []
        starts = any(
            get(get(c, "delta"), "tool_calls")
            or get(get(c, "delta"), "function_call")
            or get(c, "finish_reason")
            for c in choices
        )
        if not (starts or self.held or first_tool_like(chunk) is not None):
            return False  # nothing call-like anywhere in it (checked again at release if held)
        self.held.append(chunk)
        for c in choices:
            delta = get(c, "delta")
            index = int(get(c, "index") or 0)
            for call in get(delta, "tool_calls") or []:
                number = get(call, "index")
                if not isinstance(number, int) or isinstance(number, bool):
                    raise UnrecognisedToolCall(f"a streamed tool call with index {number!r}")
                self._add((index, number), get(call, "id"), get(call, "function"))
            legacy = get(delta, "function_call")
            if legacy:
                self._add((index, _LEGACY), None, legacy)
        return True

    def _add(self, key: tuple[int, int], call_id: Any, function: Any) -> None:
        """One piece of a streamed call. Clients assemble the pieces differently (the OpenAI
        SDK joins every string, others keep the first id and name): only arguments may come
        in pieces, and an id, once given, must not change, so every client runs what was
        judged; anything else fails closed."""
        name, arguments = get(function, "name"), get(function, "arguments")
        where = f"streamed tool call {key[1]} of choice {key[0]}"
        if not all(isinstance(v, str) or v is None for v in (call_id, name, arguments)):
            raise UnrecognisedToolCall(f"{where}: an id, name or arguments that is not text")
        parts = self._chat.get(key)
        if parts is None:
            self._chat[key] = [name or "", arguments or "", call_id or ""]
            return
        if name:
            raise UnrecognisedToolCall(f"{where}: a name given again ({name!r})")
        if call_id and parts[2] and call_id != parts[2]:
            raise UnrecognisedToolCall(f"{where}: another id ({call_id!r}) at the same index")
        parts[2] = parts[2] or call_id or ""
        parts[1] += arguments or ""

    # -- Responses API events ---------------------------------------------------------------

    def _hold_event(self, event: Any) -> bool:
        item = get(event, "item")
        kind = event_type(event)
        starts = (
            is_call_type(get(item, "type"))
            or "function_call" in kind
            or kind in ("response.completed", "response.incomplete")
        )
        if not (starts or self.held or first_tool_like(event) is not None):
            if kind == "response.output_item.added":  # the client's items, in its order
                self._items_out.append(str(get(item, "id") or ""))
            return False
        self.held.append(event)
        return True

    # -- release ----------------------------------------------------------------------------

    def release(self, governor: ToolCallGovernor, principal: Principal, run_id: str) -> list[Any]:
        """The held pieces, with every disallowed call taken out and the notes added."""
        judged = Judged(governor, principal, run_id)
        if self._sse.held or self._sse.pending:
            return self._sse.release(judged)
        if self._chat or any(get(c, "choices") is not None for c in self.held):
            self._release_chat(judged)
        elif self.held:
            self._release_events(judged)
        return self.held

    def _release_chat(self, judged: Judged) -> None:
        keys = sorted(self._chat)
        notes = verdicts(
            judged.governor,
            [(self._chat[k][0], self._chat[k][1]) for k in keys],
            judged.principal,
            judged.run_id,
        )
        withheld = {key for key, note in zip(keys, notes, strict=True) if note}
        said: set[int] = set()
        for chunk in self.held:
            for c in get(chunk, "choices") or []:
                index = int(get(c, "index") or 0)
                delta = get(c, "delta")
                if delta is None:
                    continue
                deltas = get(delta, "tool_calls")
                if deltas:
                    left = [d for d in deltas if (index, int(get(d, "index") or 0)) not in withheld]
                    put(delta, "tool_calls", left or None)
                if get(delta, "function_call") and (index, _LEGACY) in withheld:
                    put(delta, "function_call", None)
                mine = [n for k, n in zip(keys, notes, strict=True) if n and k[0] == index]
                if mine and index not in said:
                    put(delta, "content", "\n".join([get(delta, "content") or "", *mine]).strip())
                    said.add(index)
                kept_any = any(k[0] == index and k not in withheld for k in keys)
                finish = get(c, "finish_reason")
                if finish in ("tool_calls", "function_call") and not kept_any:
                    put(c, "finish_reason", "stop")
            vetted = frozenset(
                id(d)
                for c in get(chunk, "choices") or []
                for field in ("tool_calls",)
                for d in (get(get(c, "delta"), field) or [])
            ) | frozenset(
                id(get(get(c, "delta"), "function_call"))
                for c in get(chunk, "choices") or []
                if get(get(c, "delta"), "function_call")
            )
            found = first_tool_like(chunk, vetted)
            if found is not None:
                raise UnrecognisedToolCall(found)

    def _release_events(self, judged: Judged) -> None:
        self.held = release_events(judged, self.held, self._items_out)
