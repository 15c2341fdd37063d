"""The plain HTTP routes: JSON-RPC over POST (``/rpc``), the one-time code exchange of the Dashboard
(``/auth/exchange``, D5), uploads (``/upload``), ``/health`` and the Dashboard's static files."""

from __future__ import annotations

import re
from importlib import resources

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from anyy.domain.errors import StorageFull
from anyy.gateway.access import Access, foreign, unauthorized_reply
from anyy.gateway.dispatcher import MAX_FRAME_BYTES
from anyy.gateway.markdown_html import warm_up
from commons import jsonrpc

# The Dashboard's files: name -> media type. Nothing else under /dashboard/ is served.
DASHBOARD_FILES = {
    "index.html": "text/html; charset=utf-8",
    "app.js": "text/javascript; charset=utf-8",
    "rpc.js": "text/javascript; charset=utf-8",
    "markdown.js": "text/javascript; charset=utf-8",
    "usage.js": "text/javascript; charset=utf-8",
    "background.js": "text/javascript; charset=utf-8",
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
MAX_UPLOAD_BYTES = 32 * 1024 * 1024
MEDIA_TYPE = re.compile(r"[a-z0-9][a-z0-9.+-]*/[a-z0-9][a-z0-9.+-]*")
MAX_CODE_BYTES = 256


class HttpRoutes:
    def __init__(self, access: Access) -> None:
        self.access = access
        self.dashboard = {
            name: resources.files("anyy.dashboard").joinpath(name).read_bytes() for name in DASHBOARD_FILES
        }

    def _refused(self, request: Request) -> Response | None:
        if self.access.authorized(dict(request.headers), dict(request.query_params)):
            return None
        return Response(unauthorized_reply(), status_code=401, media_type="application/json")

    async def rpc(self, request: Request) -> Response:
        refused = self._refused(request)
        if refused is not None:
            return refused
        body, size = await _read_body(request, MAX_FRAME_BYTES)
        if body is None:
            return _too_large(size, at_least=True)
        dispatcher, in_flight = self.access.dispatcher, self.access.in_flight
        if not in_flight.take():
            busy = dispatcher.busy(body, "too many calls in flight")
            return Response(busy or b"", status_code=503 if busy else 204, media_type="application/json")
        try:
            reply = await dispatcher.handle(body, None)
        finally:
            in_flight.give()
        return Response(reply or b"", status_code=200 if reply else 204, media_type="application/json")

    async def exchange(self, request: Request) -> Response:
        """The Dashboard trades a one-time code (from `anyy dashboard`) for the access token (D5). Only a
        page this Gateway served may ask (a foreign page could not read the answer anyway: no CORS)."""
        if foreign(request.headers.get("origin"), request.scope.get("server")):
            return JSONResponse({"error": "cross-origin request refused"}, status_code=403)
        body = b""
        async for chunk in request.stream():
            body += chunk
            if len(body) > MAX_CODE_BYTES:
                break
        code = body.decode("utf-8", "replace").strip()
        if len(body) > MAX_CODE_BYTES or not self.access.dispatcher.gateway.codes.redeem(code):
            return JSONResponse(
                {"error": "this code is unknown, used or expired: run `anyy dashboard` again"}, status_code=401
            )
        return JSONResponse({"token": self.access.token}, headers={"Cache-Control": "no-store"})

    async def upload(self, request: Request) -> Response:
        """A file for a message (Q2): stored once in the profile's objects by its hash; the reply is the
        attachment to put in session.send. Unused uploads are swept by the store's upkeep after a day."""
        refused = self._refused(request)
        if refused is not None:
            return refused
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
            ref = await self.access.dispatcher.gateway.store(lambda s: s.put_object(data, media_type=media_type))
        except StorageFull as exc:
            return JSONResponse({"error": str(exc)}, status_code=507)
        return JSONResponse({"object": ref.hash, "name": name, "media_type": media_type, "size": ref.size})

    async def health(self, request: Request) -> Response:
        return JSONResponse({"ok": True})

    def _dashboard_file(self, name: str) -> Response:
        return Response(self.dashboard[name], media_type=DASHBOARD_FILES[name], headers=DASHBOARD_HEADERS)

    async def dashboard_index(self, request: Request) -> Response:
        warm_up()  # the page will ask for its Markdown soon
        return self._dashboard_file("index.html")

    async def dashboard_asset(self, request: Request) -> Response:
        name = request.path_params["name"]
        if name not in self.dashboard or name == "index.html":
            return Response("not found", status_code=404, media_type="text/plain")
        return self._dashboard_file(name)


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
