"""The transports: JSON-RPC over HTTP POST (``/rpc``) and over a WebSocket (``/ws``, with events), one
ASGI app. Both need the profile's access token: ``Authorization: Bearer TOKEN`` (or ``?token=`` on the
WebSocket, for clients that cannot set headers).

The same app serves the Dashboard's static files at ``/`` (package ``anyy.dashboard``; they hold no
secret: the page reads the token from its URL fragment). A browser's WebSocket always carries an
``Origin``: one that is not this Gateway's own address is refused (close code 4403), so no other site
the user visits can drive the Gateway; clients that are not browsers send no Origin and are let in.
"""

from __future__ import annotations

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.routing import Route, WebSocketRoute
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from anyy.gateway.access import MAX_IN_FLIGHT, Access, InFlight
from anyy.gateway.dispatcher import Dispatcher
from anyy.gateway.hooks import hook_route
from anyy.gateway.http_routes import HttpRoutes
from anyy.gateway.push_routes import PushRoutes
from anyy.gateway.remote import RemoteAccess
from anyy.gateway.ws_route import WebSocketRoutes
from anyy.profiles.devices import DeviceBook
from anyy.profiles.tls import HSTS as HSTS_VALUE

HSTS = HSTS_VALUE.encode()


class StrictTransport:
    """Over TLS (O1), every HTTP answer tells the browser to come back over HTTPS only (HSTS)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("scheme") != "https":
            await self.app(scope, receive, send)
            return

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", []), (b"strict-transport-security", HSTS)]}
            await send(message)

        await self.app(scope, receive, sending)


def create_app(
    dispatcher: Dispatcher, token: str, *, max_in_flight: int = MAX_IN_FLIGHT, tls: bool = False
) -> Starlette:
    gateway = dispatcher.gateway
    if gateway.remote is None:
        gateway.remote = RemoteAccess(book=DeviceBook.of(gateway.profile))
    access = Access(dispatcher=dispatcher, token=token, in_flight=InFlight(max_in_flight), remote=gateway.remote)
    config = dispatcher.gateway.profile.load_config()  # read at start: webhooks' limits, the upload quota
    http = HttpRoutes(access, upload_quota=config.gateway.upload_quota << 20)
    push = PushRoutes(access, http._caller, push_hosts=config.gateway.push_hosts)
    return Starlette(
        routes=[
            Route("/rpc", http.rpc, methods=["POST"]),
            Route("/health", http.health, methods=["GET"]),
            Route("/auth/exchange", http.exchange, methods=["POST"]),
            Route("/auth/pair", http.pair, methods=["POST"]),  # a device trades a pairing code (O2)
            Route("/push/key", push.key, methods=["GET"]),  # Web Push to paired devices (O3)
            Route("/push/subscribe", push.subscribe, methods=["POST"]),
            Route("/auth/refresh", http.refresh, methods=["POST"]),  # U8: a tab back after a restart
            Route("/upload", http.upload, methods=["POST"]),
            Route(
                "/hooks/{name}", hook_route(dispatcher, config.webhooks), methods=["POST"]
            ),  # residents' webhooks (K3)
            Route("/", http.dashboard_index, methods=["GET"]),
            Route("/sw.js", http.service_worker, methods=["GET"]),  # the installable Dashboard (O3)
            Route("/manifest.webmanifest", http.manifest, methods=["GET"]),
            Route("/dashboard/{name}", http.dashboard_asset, methods=["GET"]),
            WebSocketRoute("/ws", WebSocketRoutes(access).serve),
        ],
        middleware=[Middleware(StrictTransport)] if tls else [],
    )
