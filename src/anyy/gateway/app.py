"""The transports: JSON-RPC over HTTP POST (``/rpc``) and over a WebSocket (``/ws``, with events), one
ASGI app. Both need the profile's access token: ``Authorization: Bearer TOKEN`` (or ``?token=`` on the
WebSocket, for clients that cannot set headers).

The same app serves the Dashboard's static files at ``/`` (package ``anyy.dashboard``; they hold no
secret: the page reads the token from its URL fragment). A browser's WebSocket always carries an
``Origin``: one that is not this Gateway's own address is refused (close code 4403), so no other site
the user visits can drive the Gateway; clients that are not browsers send no Origin and are let in.
"""

from __future__ import annotations

import asyncio
import collections
import hmac
import ipaddress
import logging
from importlib import resources

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route, WebSocketRoute
from starlette.websockets import WebSocket, WebSocketDisconnect

from anyy.api.events import RuntimeEvent
from anyy.gateway.dispatcher import MAX_FRAME_BYTES, Dispatcher
from anyy.gateway.state import Connection
from commons import jsonrpc

log = logging.getLogger("anyy.gateway")

UNAUTHORIZED_MESSAGE = (
    "unauthorized: this Gateway needs its profile's access token (Authorization: Bearer TOKEN); clients "
    "read it from the profile's gateway.json"
)


FORBIDDEN_ORIGIN = 4403
# The Dashboard's files: name -> media type. Nothing else under /dashboard/ is served.
DASHBOARD_FILES = {
    "index.html": "text/html; charset=utf-8",
    "app.js": "text/javascript; charset=utf-8",
    "rpc.js": "text/javascript; charset=utf-8",
    "markdown.js": "text/javascript; charset=utf-8",
    "usage.js": "text/javascript; charset=utf-8",
    "style.css": "text/css; charset=utf-8",
}
DASHBOARD_HEADERS = {
    # Only this Gateway's own scripts, styles and WebSocket; no frames, no referrer (the token lives in
    # the fragment, which browsers never send, but nothing else should leak either).
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; "
        "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    ),
    "Referrer-Policy": "no-referrer",
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Cache-Control": "no-cache",
}


def _load_dashboard() -> dict[str, bytes]:
    folder = resources.files("anyy.dashboard")
    return {name: folder.joinpath(name).read_bytes() for name in DASHBOARD_FILES}


def _own_origins(server: tuple[str, int] | None) -> set[str]:
    """The origins of pages this Gateway served: its own address, and ``localhost`` on loopback."""
    if server is None:
        return set()
    host, port = server[0], server[1]
    shown = f"[{host}]" if ":" in host else host
    origins = {f"http://{shown}:{port}"}
    try:
        loopback = ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = host == "localhost"
    if loopback:
        origins |= {f"http://localhost:{port}", f"http://127.0.0.1:{port}", f"http://[::1]:{port}"}
    return origins


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

    dashboard = _load_dashboard()

    def dashboard_file(name: str) -> Response:
        return Response(dashboard[name], media_type=DASHBOARD_FILES[name], headers=DASHBOARD_HEADERS)

    async def dashboard_index(request: Request) -> Response:
        return dashboard_file("index.html")

    async def dashboard_asset(request: Request) -> Response:
        name = request.path_params["name"]
        if name not in dashboard or name == "index.html":
            return Response("not found", status_code=404, media_type="text/plain")
        return dashboard_file(name)

    async def websocket(ws: WebSocket) -> None:
        origin = ws.headers.get("origin")
        if origin is not None and origin.lower() not in _own_origins(ws.scope.get("server")):
            # A page of another site (or a rebound DNS name) tries to use the user's Gateway.
            await ws.accept()
            await ws.close(code=FORBIDDEN_ORIGIN, reason="cross-origin WebSocket refused")
            return
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
            Route("/", dashboard_index, methods=["GET"]),
            Route("/dashboard/{name}", dashboard_asset, methods=["GET"]),
            WebSocketRoute("/ws", websocket),
        ]
    )
