"""`GET /live`: the journal as Server-Sent Events, from the id a page was rendered at.

EventSource reconnects by itself and sends `Last-Event-ID`, so a dropped connection resumes
where it stopped; an id the journal no longer holds (or one from before a restart) gets a
`reset` event and the page re-renders. A comment every few seconds keeps proxies from closing
an idle stream and lets a closed tab be noticed.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator

from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from harness.console._live import EventHub, LiveEvent
from harness.console._state import ConsoleState

POLL_SECONDS = 0.1
KEEPALIVE_SECONDS = 5.0
RETRY_MS = 1000


def frame(event: LiveEvent) -> str:
    data = json.dumps(event.data, separators=(",", ":"), sort_keys=True)
    return f"id: {event.id}\nevent: {event.topic}\ndata: {data}\n\n"


def start_id(request: Request) -> int:
    raw = request.headers.get("last-event-id") or request.query_params.get("after") or "0"
    try:
        value = int(raw)
    except ValueError:
        return -1  # unreadable: treated as unknown, so the page re-renders
    return value if value >= 0 else -1


async def stream(request: Request, hub: EventHub, last: int) -> AsyncIterator[str]:
    yield f"retry: {RETRY_MS}\n\n"
    idle = 0.0
    while not await request.is_disconnected():
        since = hub.after(last)
        if since.gap:
            yield f"id: {hub.last_id}\nevent: reset\ndata: {{}}\n\n"
            return
        for event in since.events:
            yield frame(event)
            last = event.id
        if since.events:
            idle = 0.0
        else:
            idle += POLL_SECONDS
            if idle >= KEEPALIVE_SECONDS:
                idle = 0.0
                yield ": keepalive\n\n"
        await asyncio.sleep(POLL_SECONDS)


def routes(state: ConsoleState) -> list[Route]:
    async def live(request: Request) -> Response:
        return StreamingResponse(
            stream(request, state.hub, start_id(request)),
            media_type="text/event-stream",
            headers={"x-accel-buffering": "no"},
        )

    return [Route("/live", live, methods=["GET"])]
