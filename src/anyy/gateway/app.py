"""The transports: JSON-RPC over HTTP POST (``/rpc``) and over a WebSocket (``/ws``, with events), one
ASGI app. Both need the profile's access token: ``Authorization: Bearer TOKEN`` (or ``?token=`` on the
WebSocket, for clients that cannot set headers)."""

from __future__ import annotations

import asyncio
import collections
import hmac
import logging

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route, WebSocketRoute
from starlette.websockets import WebSocket, WebSocketDisconnect

from anyy.domain.events import RuntimeEvent
from anyy.gateway.dispatcher import MAX_FRAME_BYTES, Dispatcher
from anyy.gateway.state import Connection
from commons import jsonrpc

log = logging.getLogger("anyy.gateway")

UNAUTHORIZED_MESSAGE = (
    "unauthorized: this Gateway needs its profile's access token (Authorization: Bearer TOKEN); clients "
    "read it from the profile's gateway.json"
)


def _token_of(headers: dict[str, str], query: dict[str, str]) -> str:
    header = headers.get("authorization", "")
    if header.lower().startswith("bearer "):
        return header[7:].strip()
    return query.get("token", "")


def _unauthorized_reply() -> bytes:
    return jsonrpc.encode(
        jsonrpc.Response(id=None, error=jsonrpc.ErrorObject(code=jsonrpc.UNAUTHORIZED, message=UNAUTHORIZED_MESSAGE))
    )


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


def create_app(dispatcher: Dispatcher, token: str) -> Starlette:
    def authorized(presented: str) -> bool:
        return bool(presented) and hmac.compare_digest(presented.encode(), token.encode())

    async def rpc(request: Request) -> Response:
        if not authorized(_token_of(dict(request.headers), dict(request.query_params))):
            return Response(_unauthorized_reply(), status_code=401, media_type="application/json")
        length = int(request.headers.get("content-length") or 0)
        if length > MAX_FRAME_BYTES:
            reply = await dispatcher.handle(b" " * (MAX_FRAME_BYTES + 1), None)
            return Response(reply, status_code=413, media_type="application/json")
        body = await request.body()
        reply = await dispatcher.handle(body, None)
        return Response(reply or b"", status_code=200 if reply else 204, media_type="application/json")

    async def health(request: Request) -> Response:
        return JSONResponse({"ok": True})

    async def websocket(ws: WebSocket) -> None:
        if not authorized(_token_of(dict(ws.headers), dict(ws.query_params))):
            await ws.accept()
            await ws.send_bytes(_unauthorized_reply())
            await ws.close(code=4401)
            return
        await ws.accept()
        send_lock = asyncio.Lock()

        async def send(data: bytes) -> None:
            async with send_lock:
                await ws.send_text(data.decode())

        async def send_event(event: RuntimeEvent) -> None:
            await send(_encoded_event(event))

        conn = Connection(send_event=send_event)
        tasks: set[asyncio.Task[None]] = set()

        async def answer(frame: str | bytes) -> None:
            try:
                reply = await dispatcher.handle(frame, conn)
                if reply is not None:
                    await send(reply)
            except Exception:  # a connection that went away mid-reply: nothing else to do
                log.debug("could not answer on a closed WebSocket", exc_info=True)

        try:
            while True:
                message = await ws.receive()
                if message["type"] == "websocket.disconnect":
                    break
                text = message.get("text")
                frame: str | bytes = text if isinstance(text, str) else (message.get("bytes") or b"")
                task = asyncio.create_task(answer(frame))
                tasks.add(task)
                task.add_done_callback(tasks.discard)
        except WebSocketDisconnect:
            pass
        finally:
            conn.close()
            for task in tasks:
                task.cancel()

    return Starlette(
        routes=[
            Route("/rpc", rpc, methods=["POST"]),
            Route("/health", health, methods=["GET"]),
            WebSocketRoute("/ws", websocket),
        ]
    )
