"""The live feed, `/api/live`: server-sent events of the sightings and alerts as they are stored.
It polls the tables for `seq` above the last one sent every POLL_S (works with several store
replicas on one PostgreSQL): first the newest few of each, then whatever comes after them. A feed
of a cookie session ends within SESSION_CHECK_S of the session's end (sign-out, revocation,
expiry): an open page does not outlive it."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Annotated, Any

import orjson
from fastapi import APIRouter, Depends, Request
from fastapi.responses import StreamingResponse
from starlette.concurrency import run_in_threadpool

from stream_worker.store import queries
from stream_worker.store.web.auth import current_user
from stream_worker.store.web.backend import Backend, backend
from stream_worker.store.web.paths import sighting_page, sighting_picture
from stream_worker.store.web.users import User

router = APIRouter(prefix="/api", tags=["api"])
POLL_S = 0.5
FIRST = 20
BATCH = 200
KEEPALIVE_S = 15.0
SESSION_CHECK_S = 5.0


def sighting_event(row: Any) -> dict[str, Any]:
    data = row.model_dump(mode="json")
    data["url"] = sighting_page(row.sighting_id)
    data["picture"] = sighting_picture(row.sighting_id) if row.has_picture else None
    return data


def alert_event(row: Any) -> dict[str, Any]:
    data = row.model_dump(mode="json")
    data["url"] = sighting_page(row.sighting_id) if row.sighting_id else None
    data["picture"] = sighting_picture(row.sighting_id) if row.sighting_id else None
    return data


def _message(kind: str, data: dict[str, Any]) -> bytes:
    return b"event: " + kind.encode() + b"\ndata: " + orjson.dumps(data) + b"\n\n"


def _poll(store: Backend, after: dict[str, int | None]) -> list[bytes]:
    messages = []
    with store.database.connect() as connection:
        limit = FIRST if after["sighting"] is None else BATCH
        sightings = queries.recent_sightings(connection, after["sighting"], limit)
        limit = FIRST if after["alert"] is None else BATCH
        alerts = queries.recent_alerts(connection, after["alert"], limit)
        if after["sighting"] is None and not sightings:
            after["sighting"] = 0
        if after["alert"] is None and not alerts:
            after["alert"] = 0
    for row in sightings:
        after["sighting"] = row.seq
        messages.append(_message("sighting", sighting_event(row)))
    for row in alerts:
        after["alert"] = row.seq
        messages.append(_message("alert", alert_event(row)))
    return messages


async def events(request: Request, store: Backend) -> AsyncIterator[bytes]:
    after: dict[str, int | None] = {"sighting": None, "alert": None}
    yield b"retry: 2000\n\n"
    idle = 0.0
    checked = time.monotonic()
    via_token = getattr(request.state, "via_token", False)
    while not await request.is_disconnected() and not store.extra.get("closing"):
        if not via_token and time.monotonic() - checked >= SESSION_CHECK_S:
            checked = time.monotonic()
            if await run_in_threadpool(store.sessions.user, request.session, False) is None:
                return  # the session has ended: so does its feed
        messages = await run_in_threadpool(_poll, store, after)
        for message in messages:
            yield message
        idle = 0.0 if messages else idle + POLL_S
        if idle >= KEEPALIVE_S:
            idle = 0.0
            yield b": keep-alive\n\n"
        await asyncio.sleep(POLL_S)


@router.get(
    "/live", response_class=StreamingResponse, responses={200: {"content": {"text/event-stream": {}}}}
)
async def live(
    request: Request,
    user: Annotated[User, Depends(current_user)],
    store: Annotated[Backend, Depends(backend)],
) -> StreamingResponse:
    """Server-sent events: `sighting` and `alert`, each a JSON object with its page and picture URLs."""
    return StreamingResponse(
        events(request, store),
        media_type="text/event-stream",
        headers={"cache-control": "no-store", "x-accel-buffering": "no"},
    )
