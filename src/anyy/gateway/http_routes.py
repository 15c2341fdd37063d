"""The plain HTTP routes: JSON-RPC over POST (``/rpc``), the one-time code exchange of the Dashboard
(``/auth/exchange``, D5), uploads (``/upload``), ``/health`` and the Dashboard's static files."""

from __future__ import annotations

import json
import logging
import re
from importlib import resources

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from anyy.domain.errors import StorageFull
from anyy.gateway.access import Access, foreign, too_many_failures_reply, unauthorized_reply
from anyy.gateway.browser_routes import give_key, refresh
from anyy.gateway.dispatcher import MAX_FRAME_BYTES
from anyy.gateway.markdown_html import warm_up
from anyy.gateway.remote import COOKIE, Caller, PairingRefused
from anyy.storage.protocol import ObjectRef, SessionStore
from commons import jsonrpc

# The Dashboard's files: name -> media type. Nothing else under /dashboard/ is served.
DASHBOARD_FILES = {
    "index.html": "text/html; charset=utf-8",
    "app.js": "text/javascript; charset=utf-8",
    "rpc.js": "text/javascript; charset=utf-8",
    "markdown.js": "text/javascript; charset=utf-8",
    "usage.js": "text/javascript; charset=utf-8",
    "background.js": "text/javascript; charset=utf-8",
    "channels.js": "text/javascript; charset=utf-8",
    "rewind.js": "text/javascript; charset=utf-8",
    "style.css": "text/css; charset=utf-8",
    "sw.js": "text/javascript; charset=utf-8",  # served at /sw.js: Web Push on a paired device (O3)
    "manifest.webmanifest": "application/manifest+json",  # served at /manifest.webmanifest
}
DASHBOARD_HEADERS = {
    # Only this Gateway's own scripts, styles and WebSocket; no frames, no referrer (the token lives in
    # the fragment, which browsers never send, but nothing else should leak either).
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; "
        "base-uri 'none'; form-action 'none'; frame-ancestors 'none'; manifest-src 'self'; worker-src 'self'"
    ),
    "Referrer-Policy": "no-referrer",
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Cache-Control": "no-cache",
}
MAX_UPLOAD_BYTES = 32 * 1024 * 1024
MEDIA_TYPE = re.compile(r"[a-z0-9][a-z0-9.+-]*/[a-z0-9][a-z0-9.+-]*")
MAX_CODE_BYTES = 256
log = logging.getLogger("anyy.gateway")


class HttpRoutes:
    def __init__(self, access: Access, *, upload_quota: int = 0) -> None:
        self.access = access
        self.upload_quota = upload_quota  # bytes of objects past which uploads are refused; 0: none
        self.dashboard = {
            name: resources.files("anyy.dashboard").joinpath(name).read_bytes() for name in DASHBOARD_FILES
        }

    def _caller(self, request: Request) -> Caller | Response:
        peer = _peer(request)
        if self.access.limited(peer):
            return Response(too_many_failures_reply(), status_code=429, media_type="application/json")
        caller = self.access.identify(dict(request.headers), dict(request.query_params), request.cookies, peer)
        if caller is not None and caller.device is not None and _foreign_page(request):
            caller = None  # a device's cookie sent by another site's page (cross-site request forgery)
        if caller is not None:
            return caller
        return Response(unauthorized_reply(), status_code=401, media_type="application/json")

    async def rpc(self, request: Request) -> Response:
        caller = self._caller(request)
        if isinstance(caller, Response):
            return caller
        body, size = await _read_body(request, MAX_FRAME_BYTES)
        if body is None:
            return _too_large(size, at_least=True)
        if self.access.remote is not None and (no := self.access.remote.refusal(caller, body)) is not None:
            return Response(no, status_code=403, media_type="application/json")
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
        page this Gateway served may ask: a browser always sends its Origin, so a request without one (a
        local program that read the code from a command line) is refused like a foreign page (G5)."""
        origin = request.headers.get("origin")
        scope = request.scope
        if origin is None or foreign(
            origin, scope.get("server"), scope.get("scheme", "http"), request.headers.get("host", "")
        ):
            log.warning("code exchange refused: origin %r is not this Gateway's", (origin or "none")[:100])
            return JSONResponse(
                {"error": "refused: only the Dashboard page this Gateway served may trade a code (Origin)"},
                status_code=403,
            )
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
        reply = JSONResponse({"token": self.access.token}, headers={"Cache-Control": "no-store"})
        return await give_key(self.access, request, reply)  # U8: the tab comes back after a restart

    async def refresh(self, request: Request) -> Response:
        return await refresh(self.access, request)

    async def pair(self, request: Request) -> Response:
        """A device trades a pairing secret (the QR code's link) or short code for its own credential (O2),
        set as an HttpOnly cookie: ``{"code": "...", "name": "Ada's phone"}``. Not from another site's page."""
        if _foreign_page(request):
            return JSONResponse({"error": "refused: pair from the page this Gateway served (Origin)"}, 403)
        body, _ = await _read_body(request, 4 * MAX_CODE_BYTES)
        try:
            asked = json.loads(body or b"")
            code, name = str(asked.get("code", "")), str(asked.get("name", ""))
        except (ValueError, AttributeError):
            return JSONResponse({"error": 'give {"code": "THE-CODE", "name": "a name for this device"}'}, 400)
        remote = self.access.remote
        if remote is None or not code or len(code) > MAX_CODE_BYTES:
            return JSONResponse({"error": "give the pairing code `anyy devices pair` shows"}, 400)
        try:
            device, credential = remote.pair(code, name)
        except PairingRefused as exc:
            log.warning("pairing refused from %s: %s", _peer(request), exc)
            return JSONResponse({"error": str(exc)}, status_code=exc.status)
        reply = JSONResponse(
            {"device": {"id": device.id, "name": device.name, "scope": device.scope}},
            headers={"Cache-Control": "no-store"},
        )
        reply.set_cookie(
            COOKIE,
            credential,
            max_age=400 * 86400,
            httponly=True,
            secure=request.url.scheme == "https",
            samesite="strict",
        )
        return reply

    async def upload(self, request: Request) -> Response:
        """A file for a message (Q2): stored once in the profile's objects by its hash; the reply is the
        attachment to put in session.send. Unused uploads are swept by the store's upkeep after a day.
        The profile's objects stay within ``[gateway] upload_quota``, and a size the client claims (the
        Content-Length, ``?size=N``) must be the bytes received, else nothing is stored (G5)."""
        caller = self._caller(request)
        if isinstance(caller, Response):
            return caller
        if caller.device is not None and caller.device.scope == "reader":
            return JSONResponse({"error": "this device's scope (reader) does not send files"}, status_code=403)
        name = (request.query_params.get("name") or "").strip()
        if not name or len(name) > 255 or any(c in name for c in "/\\\0"):
            return JSONResponse({"error": "name: give the file's name (?name=FILE, no slashes)"}, status_code=400)
        media_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
        if not MEDIA_TYPE.fullmatch(media_type):
            media_type = "application/octet-stream"
        store = self.access.dispatcher.gateway.store
        quota = self.upload_quota
        used = await store(lambda s: s.object_bytes()) if quota else 0
        claimed = (request.query_params.get("size") or "").strip()
        if claimed and not claimed.isdigit():
            return JSONResponse({"error": f"size: the file's size in bytes (?size=N), not {claimed[:40]!r}"}, 400)
        declared = _declared_size(request)
        room = quota - used if quota else MAX_UPLOAD_BYTES
        if quota and max(declared or 0, int(claimed or 0), 1) > room:
            return _over_quota(used, quota)
        # A body without Content-Length (chunked) is cut off at the same bounds as it is read.
        data, size = await _read_body(request, min(MAX_UPLOAD_BYTES, room))
        if data is None:
            return _upload_too_large(size) if size > MAX_UPLOAD_BYTES or not quota else _over_quota(used, quota)
        body: bytes = data
        for said, source in ((declared, "Content-Length"), (int(claimed) if claimed else None, "?size=")):
            if said is not None and said != len(body):
                return JSONResponse(
                    {
                        "error": f"the body has {len(body)} bytes where {source} said {said}: nothing was stored, "
                        "send the file again"
                    },
                    status_code=400,
                )

        def put(s: SessionStore) -> ObjectRef | int:
            # Counted again with the bytes in hand, in the store's one thread: uploads side by side add up.
            now = s.object_bytes() if quota else 0
            return now if quota and now + len(body) > quota else s.put_object(body, media_type=media_type)

        try:
            ref = await store(put)
        except StorageFull as exc:
            return JSONResponse({"error": str(exc)}, status_code=507)
        if isinstance(ref, int):
            return _over_quota(ref, quota)
        return JSONResponse({"object": ref.hash, "name": name, "media_type": media_type, "size": ref.size})

    async def health(self, request: Request) -> Response:
        return JSONResponse({"ok": True})

    def _dashboard_file(self, name: str) -> Response:
        return Response(self.dashboard[name], media_type=DASHBOARD_FILES[name], headers=DASHBOARD_HEADERS)

    async def dashboard_index(self, request: Request) -> Response:
        warm_up()  # the page will ask for its Markdown soon
        return self._dashboard_file("index.html")

    async def service_worker(self, request: Request) -> Response:
        return self._dashboard_file("sw.js")

    async def manifest(self, request: Request) -> Response:
        return self._dashboard_file("manifest.webmanifest")

    async def dashboard_asset(self, request: Request) -> Response:
        name = request.path_params["name"]
        if name not in self.dashboard or name == "index.html":
            return Response("not found", status_code=404, media_type="text/plain")
        return self._dashboard_file(name)


def _foreign_page(request: Request) -> bool:
    scope = request.scope
    return foreign(
        request.headers.get("origin"), scope.get("server"), scope.get("scheme", "http"), request.headers.get("host", "")
    )


def _peer(request: Request) -> str:
    return request.client.host if request.client else "?"


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


def _declared_size(request: Request) -> int | None:
    """The Content-Length a request claims (None for a chunked body, bounded as it is read)."""
    value = request.headers.get("content-length")
    return int(value) if value is not None and value.strip().isdigit() else None


def _over_quota(used: int, quota: int) -> Response:
    return JSONResponse(
        {
            "error": f"the profile's objects hold {used >> 20} MiB of its {quota >> 20} MiB upload quota: delete "
            "sessions you no longer need, or raise [gateway] upload_quota in config.toml"
        },
        status_code=413,
    )


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
