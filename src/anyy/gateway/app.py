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
import re
from importlib import resources

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route, WebSocketRoute
from starlette.websockets import WebSocket, WebSocketDisconnect

from anyy.api.events import RuntimeEvent
from anyy.domain.errors import StorageFull
from anyy.gateway.dispatcher import MAX_FRAME_BYTES, Dispatcher
from anyy.gateway.hooks import hook_route
from anyy.gateway.markdown_html import warm_up
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


MAX_PENDING_PER_CONNECTION = 256  # calls one WebSocket may have running at once (session.wait included)
MAX_IN_FLIGHT = 4096  # calls the Gateway runs at once, every connection together


class InFlight:
    """A count of the calls running now, bounded."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.now = 0

    def take(self) -> bool:
        if self.now >= self.limit:
            return False
        self.now += 1
        return True

    def give(self) -> None:
        self.now -= 1


async def _read_body(request: Request, limit: int) -> tuple[bytes | None, int]:
    """The body, read as it comes and counted: ``(None, size)`` as soon as it passes ``limit`` (a declared
    Content-Length at once; a chunked body when it gets there), never read whole into memory first (D7)."""
    declared = int(request.headers.get("content-length") or 0)
    if declared > limit:
        return None, declared
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            return None, size
        chunks.append(chunk)
    return b"".join(chunks), size


MAX_UPLOAD_BYTES = 32 * 1024 * 1024
MEDIA_TYPE = re.compile(r"[a-z0-9][a-z0-9.+-]*/[a-z0-9][a-z0-9.+-]*")


def _upload_too_large(size: int) -> Response:
    limit = f"at most {MAX_UPLOAD_BYTES >> 20} MiB"
    return JSONResponse({"error": f"the file is too large ({size} bytes or more): {limit}"}, status_code=413)


def _too_large(size: int, *, at_least: bool = False) -> Response:
    more = "more than " if at_least else ""
    reply = jsonrpc.encode(
        jsonrpc.Response(
            id=None,
            error=jsonrpc.ErrorObject(
                code=jsonrpc.INVALID_REQUEST,
                message=f"frame too large: {more}{size} bytes, at most {MAX_FRAME_BYTES}",
            ),
        )
    )
    return Response(reply, status_code=413, media_type="application/json")


def create_app(dispatcher: Dispatcher, token: str, *, max_in_flight: int = MAX_IN_FLIGHT) -> Starlette:
    in_flight = InFlight(max_in_flight)

    def authorized(presented: str) -> bool:
        return bool(presented) and hmac.compare_digest(presented.encode(), token.encode())

    async def rpc(request: Request) -> Response:
        if not authorized(_token_of(dict(request.headers), dict(request.query_params))):
            return Response(_unauthorized_reply(), status_code=401, media_type="application/json")
        body, size = await _read_body(request, MAX_FRAME_BYTES)
        if body is None:
            return _too_large(size, at_least=True)
        if not in_flight.take():
            busy = dispatcher.busy(body, "too many calls in flight")
            return Response(busy or b"", status_code=503 if busy else 204, media_type="application/json")
        try:
            reply = await dispatcher.handle(body, None)
        finally:
            in_flight.give()
        return Response(reply or b"", status_code=200 if reply else 204, media_type="application/json")

    async def exchange(request: Request) -> Response:
        # The Dashboard trades a one-time code (from `anyy dashboard`) for the access token (D5). Only a
        # page this Gateway served may ask (a foreign page could not read the answer anyway: no CORS).
        origin = request.headers.get("origin")
        if origin is not None and origin.lower() not in _own_origins(request.scope.get("server")):
            return JSONResponse({"error": "cross-origin request refused"}, status_code=403)
        body = b""
        async for chunk in request.stream():
            body += chunk
            if len(body) > 256:
                break
        code = body.decode("utf-8", "replace").strip()
        if len(body) > 256 or not dispatcher.gateway.codes.redeem(code):
            return JSONResponse(
                {"error": "this code is unknown, used or expired: run `anyy dashboard` again"}, status_code=401
            )
        return JSONResponse({"token": token}, headers={"Cache-Control": "no-store"})

    async def upload(request: Request) -> Response:
        # A file for a message (Q2): stored once in the profile's objects by its hash; the reply is the
        # attachment to put in session.send. Unused uploads are swept by the store's upkeep after a day.
        if not authorized(_token_of(dict(request.headers), dict(request.query_params))):
            return Response(_unauthorized_reply(), status_code=401, media_type="application/json")
        name = (request.query_params.get("name") or "").strip()
        if not name or len(name) > 255 or any(c in name for c in "/\\\0"):
            return JSONResponse({"error": "name: give the file's name (?name=FILE, no slashes)"}, status_code=400)
        media_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
        if not MEDIA_TYPE.fullmatch(media_type):
            media_type = "application/octet-stream"
        data, size = await _read_body(request, MAX_UPLOAD_BYTES)
        if data is None:
            return _upload_too_large(size)
        try:
            ref = await dispatcher.gateway.store(lambda s: s.put_object(data, media_type=media_type))
        except StorageFull as exc:
            return JSONResponse({"error": str(exc)}, status_code=507)
        return JSONResponse({"object": ref.hash, "name": name, "media_type": media_type, "size": ref.size})

    async def health(request: Request) -> Response:
        return JSONResponse({"ok": True})

    dashboard = _load_dashboard()

    def dashboard_file(name: str) -> Response:
        return Response(dashboard[name], media_type=DASHBOARD_FILES[name], headers=DASHBOARD_HEADERS)

    async def dashboard_index(request: Request) -> Response:
        warm_up()  # the page will ask for its Markdown soon
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
            finally:
                in_flight.give()

        async def refuse(frame: str | bytes, why: str) -> None:
            try:
                reply = dispatcher.busy(frame, why)
                if reply is not None:
                    await send(reply)
            except Exception:
                log.debug("could not answer on a closed WebSocket", exc_info=True)

        try:
            while True:
                message = await ws.receive()
                if message["type"] == "websocket.disconnect":
                    break
                text = message.get("text")
                frame: str | bytes = text if isinstance(text, str) else (message.get("bytes") or b"")
                # Each connection, and the Gateway as a whole, runs a bounded number of calls at once; past
                # that a call is answered "busy" at once instead of held in memory (D7).
                if len(tasks) >= MAX_PENDING_PER_CONNECTION:
                    task = asyncio.create_task(refuse(frame, "too many calls pending on this connection"))
                elif not in_flight.take():
                    task = asyncio.create_task(refuse(frame, "too many calls in flight"))
                else:
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
            Route("/auth/exchange", exchange, methods=["POST"]),
            Route("/upload", upload, methods=["POST"]),
            Route("/hooks/{name}", hook_route(dispatcher), methods=["POST"]),  # residents' webhooks (K3)
            Route("/", dashboard_index, methods=["GET"]),
            Route("/dashboard/{name}", dashboard_asset, methods=["GET"]),
            WebSocketRoute("/ws", websocket),
        ]
    )
