"""A streamed Responses API answer, held whole, judged on its final `output`, released as
the client will read it. A client builds each item from its per-item events
(`response.output_item.added/done`, `response.function_call_arguments.delta/done`, ...), not
from the final response alone, so every event of a kept call must say exactly what was judged:
the same type, name and call id, arguments that are empty (an item just added) or the judged
ones, and deltas that add up to them. Events of a withheld item are dropped; the others get
the output index their item has for the client (which finds items by it). Two items with one
id, an event for an item the final output does not have or not yet added, or one output index
given to two items fail closed (UnrecognisedToolCall): the client could run something never
judged.
"""

from __future__ import annotations

from enum import Enum
from typing import TYPE_CHECKING, Any, Final

from governance.litellm._response_calls import UnrecognisedToolCall
from governance.litellm._response_sites import JUDGED_ITEMS, PROVIDER_RUN, withhold_in_output
from governance.litellm._tool_like import first_tool_like, get, put

if TYPE_CHECKING:
    from governance.litellm._response_sites import Judged

_FINAL: Final = ("response.completed", "response.incomplete")
_PAYLOAD: Final = {"function_call": "arguments", "custom_tool_call": "input"}


def event_type(event: Any) -> str:
    kind = get(event, "type")
    return str(kind.value if isinstance(kind, Enum) else kind)  # LiteLLM's are enums


def _id(item: Any) -> str:
    return str(get(item, "id") or "")


class _Kept:
    """What the client must end up with for one kept call, and what its events added up to."""

    def __init__(self, item: Any) -> None:
        self.kind = str(get(item, "type"))
        self.field = _PAYLOAD[self.kind]
        self.name, self.call_id = get(item, "name"), get(item, "call_id")
        self.payload = get(item, self.field)
        self.streamed: str | None = None

    def check_item(self, item: Any, where: str, just_added: bool) -> None:
        same = (
            get(item, "type") == self.kind
            and get(item, "name") == self.name
            and get(item, "call_id") == self.call_id
        )
        given = get(item, self.field)
        if not same or not (given == self.payload or (just_added and given in (None, ""))):
            raise UnrecognisedToolCall(f"{where}: an item other than the one judged")
        if just_added and isinstance(given, str):
            self.streamed = given

    def check_piece(self, event: Any, where: str) -> None:
        delta = get(event, "delta")
        if delta is not None:
            if not isinstance(delta, str):
                raise UnrecognisedToolCall(f"{where}: a delta that is not text")
            self.streamed = (self.streamed or "") + delta
        for field in (self.field, "name"):
            given = get(event, field)
            expected = self.payload if field == self.field else self.name
            if given is not None and given != expected:
                raise UnrecognisedToolCall(f"{where}: {field} other than the one judged")

    def check_end(self, where: str) -> None:
        if self.streamed not in (None, "") and self.streamed != self.payload:
            raise UnrecognisedToolCall(f"{where}: deltas adding up to another call")


def release_events(judged: Judged, held: list[Any], items_out: list[str]) -> list[Any]:
    """The held events without the withheld calls; raises UnrecognisedToolCall on any event
    that does not match the call judged. `items_out`: the ids of the items already added for
    the client, in order (a client finds an item by its output index: each event going out
    gets the index its item has on the client's side, withheld items taken out)."""
    final = next((get(e, "response") for e in reversed(held) if get(e, "type") in _FINAL), None)
    if final is not None and isinstance(get(final, "output"), list):
        holder: Any = final
    else:  # no final response (the stream broke off): judge the finished items
        done = [get(e, "item") for e in held if get(e, "type") == "response.output_item.done"]
        holder = {"output": [item for item in done if item is not None]}
    output: list[Any] = get(holder, "output")
    ids = [_id(item) for item in output]
    twice = sorted({i for i in ids if ids.count(i) > 1})
    if twice:
        raise UnrecognisedToolCall(f"two output items with the id {twice[0]!r}")
    kinds = {_id(item): get(item, "type") for item in output}
    withhold_in_output(judged, holder)
    kept_ids = {_id(item) for item in output}
    withheld = set(ids) - kept_ids
    calls = {_id(i): _Kept(i) for i in output if get(i, "type") in JUDGED_ITEMS}
    owner: dict[int, str] = {}
    left: list[Any] = []
    for event in held:
        kind = event_type(event)
        item = get(event, "item")
        item_id = str(get(event, "item_id") or _id(item))
        where = f"a stream event ({kind})"
        if item_id and item_id not in kinds:
            raise UnrecognisedToolCall(f"{where} for an item the final output does not have")
        index = get(event, "output_index")
        if isinstance(index, int) and item_id and owner.setdefault(index, item_id) != item_id:
            raise UnrecognisedToolCall(f"{where}: output index {index} given to two items")
        if item_id in withheld:
            continue
        vetted: set[int] = set(judged.vetted)
        if final is not None:
            vetted.add(id(final))
        call = calls.get(item_id)
        if call is not None:
            if item is not None:
                call.check_item(item, where, kind == "response.output_item.added")
                vetted.add(id(item))
            else:
                call.check_piece(event, where)
        elif item is not None and get(item, "type") in PROVIDER_RUN & {kinds.get(item_id)}:
            vetted.add(id(item))
        found = first_tool_like(event, frozenset(vetted))
        if found is not None:
            raise UnrecognisedToolCall(found)
        left.append(event)
    _renumber(left, items_out)
    for item_id, call in calls.items():
        call.check_end(f"the events of {item_id!r}")
    return left


def _renumber(events: list[Any], items_out: list[str]) -> None:
    place = {item_id: n for n, item_id in enumerate(items_out)}
    for event in events:
        index = get(event, "output_index")
        item_id = str(get(event, "item_id") or _id(get(event, "item")))
        if index is None or not item_id:
            continue
        if event_type(event) == "response.output_item.added" and item_id not in place:
            place[item_id] = len(place)
        if item_id not in place:
            raise UnrecognisedToolCall(f"an event for {item_id!r} before the item was added")
        if index != place[item_id]:
            put(event, "output_index", place[item_id])
