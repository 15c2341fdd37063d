"""JSON-RPC over a WebSocket (``/ws``), with the events of the sessions the connection subscribed to.

A browser's WebSocket always carries an ``Origin``: one that is not this Gateway's own address is refused
(close code 4403). Each connection, and the Gateway as a whole, runs a bounded number of calls at once;
past that a call is answered "busy" at once instead of held in memory (D7).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging

from starlette.websockets import WebSocket, WebSocketDisconnect

from anyy.api.events import RuntimeEvent
from anyy.gateway.access import (
    FORBIDDEN_ORIGIN,
    MAX_PENDING_PER_CONNECTION,
    Access,
    foreign,
    too_many_failures_reply,
    unauthorized_reply,
)
from anyy.gateway.remote import Caller
from anyy.gateway.state import Connection
from commons import jsonrpc

log = logging.getLogger("anyy.gateway")
UNAUTHORIZED_CLOSE = 4401

_recent: collections.OrderedDict[int, tuple[RuntimeEvent, bytes]] = collections.OrderedDict()


def _encoded_event(event: RuntimeEvent) -> bytes:
    """An event's notification, encoded once however many connections subscribe to it."""
    found = _recent.get(id(event))
    if found is not None and found[0] is event:
        return found[1]
    data = jsonrpc.encode(jsonrpc.Notification(method="event", params=event))
    _recent[id(event)] = (event, data)
    if len(_recent) > 1024:
        _recent.popitem(last=False)
    return data


async def _admitted(access: Access, ws: WebSocket) -> Caller | None:
    """Accept the connection; a foreign page or a missing token (or device cookie) is told why and closed."""
    await ws.accept()
    scope, headers = ws.scope, ws.headers
    if foreign(headers.get("origin"), scope.get("server"), scope.get("scheme", "http"), headers.get("host", "")):
        # A page of another site (or a rebound DNS name) tries to use the user's Gateway.
        await ws.close(code=FORBIDDEN_ORIGIN, reason="cross-origin WebSocket refused")
        return None
    peer = ws.client.host if ws.client else ""
    limited = access.limited(peer)
    caller = None if limited else access.identify(dict(ws.headers), dict(ws.query_params), ws.cookies, peer)
    if caller is None:
        await ws.send_bytes(too_many_failures_reply() if limited else unauthorized_reply())
        await ws.close(code=UNAUTHORIZED_CLOSE)
        return None
    if caller.device is not None:
        log.info("device %r (%s) connected", caller.device.name, caller.device.id)
    return caller


class _Socket:
    """One admitted connection: its replies and events go out one at a time; its calls run as tasks."""

    def __init__(self, access: Access, ws: WebSocket, caller: Caller) -> None:
        self.access = access
        self.ws = ws
        self.caller = caller
        self.lock = asyncio.Lock()
        self.conn = Connection(send_event=self.send_event)
        self.tasks: set[asyncio.Task[None]] = set()

    async def send(self, data: bytes) -> None:
        async with self.lock:
            await self.ws.send_text(data.decode())

    async def send_event(self, event: RuntimeEvent) -> None:
        await self.send(_encoded_event(event))

    async def answer(self, frame: str | bytes) -> None:
        try:
            reply = await self.access.dispatcher.handle(frame, self.conn)
            if reply is not None:
                await self.send(reply)
        except Exception:  # a connection that went away mid-reply: nothing else to do
            log.debug("could not answer on a closed WebSocket", exc_info=True)
        finally:
            self.access.in_flight.give()

    async def refuse(self, frame: str | bytes, why: str) -> None:
        try:
            reply = self.access.dispatcher.busy(frame, why)
            if reply is not None:
                await self.send(reply)
        except Exception:
            log.debug("could not answer on a closed WebSocket", exc_info=True)

    async def close_revoked(self) -> None:
        """The device was revoked: its socket closes now, whatever it was doing (O2)."""
        with contextlib.suppress(Exception):
            await self.ws.close(code=UNAUTHORIZED_CLOSE, reason="this device was revoked")

    def start(self, frame: str | bytes) -> None:
        remote, device = self.access.remote, self.caller.device
        refused = remote.refusal(self.caller, frame) if remote is not None and device is not None else None
        if refused is not None:
            task = asyncio.create_task(self.send(refused))
        elif len(self.tasks) >= MAX_PENDING_PER_CONNECTION:
            task = asyncio.create_task(self.refuse(frame, "too many calls pending on this connection"))
        elif not self.access.in_flight.take():
            task = asyncio.create_task(self.refuse(frame, "too many calls in flight"))
        else:
            task = asyncio.create_task(self.answer(frame))
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def run(self) -> None:
        try:
            while True:
                message = await self.ws.receive()
                if message["type"] == "websocket.disconnect":
                    break
                text = message.get("text")
                self.start(text if isinstance(text, str) else (message.get("bytes") or b""))
        except WebSocketDisconnect:
            pass
        finally:
            self.conn.close()
            for task in self.tasks:
                task.cancel()


class WebSocketRoutes:
    def __init__(self, access: Access) -> None:
        self.access = access

    async def serve(self, ws: WebSocket) -> None:
        caller = await _admitted(self.access, ws)
        if caller is None:
            return
        socket = _Socket(self.access, ws, caller)
        remote, device = self.access.remote, caller.device
        if remote is None or device is None:
            await socket.run()
            return
        closers = remote.sockets.setdefault(device.id, set())
        closers.add(socket.close_revoked)
        try:
            await socket.run()
        finally:
            remote.sockets.get(device.id, set()).discard(socket.close_revoked)
