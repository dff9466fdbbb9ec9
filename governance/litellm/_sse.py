"""`/v1/messages` streams reach the streaming hook as raw server-sent-event frames (bytes,
possibly cut anywhere). They are split into whole events here: text goes on as it comes; from
the first block that is not text or thinking (a `tool_use` or any other call-like block) to
the end, events are held, then released without the withheld blocks (the blocks after them
renumbered, the notes added as a text block, `stop_reason: tool_use` turned into `end_turn`
when no call is left). A frame that cannot be read while holding fails closed, and so does
a stream whose blocks a client could assemble into another call than the one judged: an index
started twice, a delta or stop for a block not open, a tool_use input given both in its start
and in pieces (a start's input with no pieces is what is judged)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Final

from governance.litellm._response_calls import UnrecognisedToolCall
from governance.litellm._tool_like import first_tool_like, is_call_type

if TYPE_CHECKING:
    from governance.litellm._response_sites import Judged

_PLAIN: Final = frozenset({"text", "thinking", "redacted_thinking"})


class _Event:
    """One event; `suspect` when it carries something call-like or cannot be read."""

    def __init__(self, raw: bytes) -> None:
        self.raw = raw
        self.name = ""
        data: list[str] = []
        other: list[str] = []
        for line in raw.decode("utf-8", errors="replace").splitlines():
            if line.startswith("event:"):
                self.name = line[6:].strip()
            elif line.startswith("data:"):
                data.append(line[5:].strip())
            elif line.strip() and not line.startswith((":", "id:", "retry:")):
                other.append(line)
        self.data: Any = None
        unreadable = False
        if data:
            try:
                self.data = json.loads("\n".join(data))
            except ValueError:
                unreadable = True
        # not SSE at all (another provider's raw stream): its text is searched instead
        odd = bool(other) and first_tool_like(raw) is not None
        self.suspect = unreadable or odd or first_tool_like(self.data) is not None

    def field(self, key: str) -> Any:
        return self.data.get(key) if isinstance(self.data, dict) else None


def _frame(name: str, data: Any) -> bytes:
    return f"event: {name}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n".encode()


class AnthropicEvents:
    """The held events of one `/v1/messages` stream."""

    def __init__(self) -> None:
        self._buffer = b""
        self.held: list[_Event] = []
        self._holding = False
        self._sent_blocks = 0  # blocks already out: the held ones are numbered after them
        self._sent_indexes: set[int] = set()  # their indexes: none may be started again
        self.ready: list[bytes] = []

    def hold(self, chunk: bytes | bytearray | str) -> bool:
        """Always True: the chunk's whole events that may go out now are in `ready`."""
        raw = chunk.encode() if isinstance(chunk, str) else bytes(chunk)
        self._buffer += raw.replace(b"\r\n", b"\n")
        *complete, self._buffer = self._buffer.split(b"\n\n")
        for piece in complete:
            if not piece.strip():
                continue
            event = _Event(piece + b"\n\n")
            block = event.field("content_block")
            if event.name == "content_block_start" and isinstance(block, dict):
                if block.get("type") not in _PLAIN:
                    self._holding = True
            if event.suspect:
                self._holding = True  # call-like or unreadable: judged at the end
            if self._holding:
                self.held.append(event)
            else:
                if event.name == "content_block_start":
                    self._sent_blocks += 1
                    index = event.field("index")
                    if isinstance(index, int):
                        self._sent_indexes.add(index)
                self.ready.append(event.raw)
        return True

    @property
    def pending(self) -> bool:
        return bool(self._buffer.strip())

    def take_ready(self) -> list[bytes]:
        ready, self.ready = self.ready, []
        return ready

    def release(self, judged: Judged) -> list[Any]:
        if self._buffer.strip():
            self.held.append(_Event(self._buffer))
            self._buffer = b""
        blocks, inputs = _blocks(self.held, self._sent_indexes)
        uses = [i for i in sorted(blocks) if blocks[i].get("type") == "tool_use"]
        notes = judged.keep([(str(blocks[i].get("name") or ""), inputs[i]) for i in uses])
        withheld = {i for i, note in zip(uses, notes, strict=True) if note}
        said = [note for note in notes if note]
        for i in sorted(blocks):
            kind = blocks[i].get("type")
            if kind != "tool_use" and is_call_type(kind):
                withheld.add(i)
                said.append(judged.unjudgeable(str(kind)))
        for event in self.held:  # anything call-like outside the blocks judged: fail closed
            index = event.field("index")
            if event.suspect and not (isinstance(index, int) and index in blocks):
                raise UnrecognisedToolCall(f"a stream event ({event.name or 'raw'})")
        if not withheld:
            return [event.raw for event in self.held]
        return self._rebuilt(blocks, withheld, said)

    def _rebuilt(
        self, blocks: dict[int, dict[str, Any]], withheld: set[int], said: list[str]
    ) -> list[bytes]:
        left = [i for i in sorted(blocks) if i not in withheld]
        renumbered = {old: self._sent_blocks + new for new, old in enumerate(left)}
        calls_left = any(blocks[i].get("type") == "tool_use" for i in renumbered)
        note_index = self._sent_blocks + len(renumbered)
        out: list[bytes] = []
        for event in self.held:
            index = event.field("index")
            if isinstance(index, int):
                if index in withheld:
                    continue
                data = dict(event.data)
                data["index"] = renumbered.get(index, index)
                out.append(_frame(event.name, data))
                continue
            if event.name in ("message_delta", "message_stop") and note_index >= 0:
                out.extend(_note_block(note_index, "\n".join(said)))
                note_index = -1
            if event.name == "message_delta" and not calls_left:
                data = json.loads(json.dumps(event.data))
                if (data.get("delta") or {}).get("stop_reason") == "tool_use":
                    data["delta"]["stop_reason"] = "end_turn"
                out.append(_frame(event.name, data))
                continue
            out.append(event.raw)
        if note_index >= 0:
            out.extend(_note_block(note_index, "\n".join(said)))
        return out


def _blocks(held: list[_Event], sent: set[int]) -> tuple[dict[int, dict[str, Any]], dict[int, str]]:
    """The held blocks by index and each tool_use's input as its client assembles it. Every
    start, delta and stop is checked against the blocks open: a reused index, a piece for a
    block not open, or an input given both whole and in pieces would let the client run
    another call than the one judged, so it fails closed."""
    blocks: dict[int, dict[str, Any]] = {}
    pieces: dict[int, list[str]] = {}
    open_: set[int] = set()
    for event in held:
        index = event.field("index")
        if event.name == "content_block_start":
            block = event.field("content_block")
            if not isinstance(index, int) or not isinstance(block, dict):
                raise UnrecognisedToolCall("a content_block_start without index or block")
            if index in sent or index in blocks:
                raise UnrecognisedToolCall(f"a second content block at index {index}")
            blocks[index] = dict(block)
            pieces[index] = []
            open_.add(index)
        elif event.name in ("content_block_delta", "content_block_stop"):
            if isinstance(index, int) and index in sent:
                continue  # a text block already out, started before anything was held
            if not isinstance(index, int) or index not in open_:
                raise UnrecognisedToolCall(f"a {event.name or 'piece'} for block {index}, not open")
            if event.name == "content_block_stop":
                open_.discard(index)
                continue
            delta = event.field("delta")  # a content_block_delta
            if blocks[index].get("type") == "tool_use":
                if not isinstance(delta, dict) or delta.get("type") != "input_json_delta":
                    raise UnrecognisedToolCall(f"a tool_use delta of another kind at {index}")
                part = delta.get("partial_json")
                if not isinstance(part, str):
                    raise UnrecognisedToolCall(f"a tool_use delta without partial_json at {index}")
                pieces[index].append(part)
    inputs: dict[int, str] = {}
    for index, block in blocks.items():
        if block.get("type") != "tool_use":
            continue
        given = block.get("input")
        streamed = "".join(pieces[index])
        if given not in (None, {}) and (streamed or not isinstance(given, dict)):
            raise UnrecognisedToolCall(f"a tool_use input given whole and in pieces at {index}")
        inputs[index] = streamed or json.dumps(given or {})
    return blocks, inputs


def _note_block(index: int, text: str) -> list[bytes]:
    return [
        _frame(
            "content_block_start",
            {
                "type": "content_block_start",
                "index": index,
                "content_block": {"type": "text", "text": ""},
            },
        ),
        _frame(
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": index,
                "delta": {"type": "text_delta", "text": text},
            },
        ),
        _frame("content_block_stop", {"type": "content_block_stop", "index": index}),
    ]
