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
from starlette.routing import Route, WebSocketRoute

from anyy.gateway.access import MAX_IN_FLIGHT, Access, InFlight
from anyy.gateway.dispatcher import Dispatcher
from anyy.gateway.hooks import hook_route
from anyy.gateway.http_routes import HttpRoutes
from anyy.gateway.ws_route import WebSocketRoutes


def create_app(dispatcher: Dispatcher, token: str, *, max_in_flight: int = MAX_IN_FLIGHT) -> Starlette:
    access = Access(dispatcher=dispatcher, token=token, in_flight=InFlight(max_in_flight))
    config = dispatcher.gateway.profile.load_config()  # read at start: webhooks' limits, the upload quota
    http = HttpRoutes(access, upload_quota=config.gateway.upload_quota << 20)
    return Starlette(
        routes=[
            Route("/rpc", http.rpc, methods=["POST"]),
            Route("/health", http.health, methods=["GET"]),
            Route("/auth/exchange", http.exchange, methods=["POST"]),
            Route("/auth/refresh", http.refresh, methods=["POST"]),  # U8: a tab back after a restart
            Route("/upload", http.upload, methods=["POST"]),
            Route(
                "/hooks/{name}", hook_route(dispatcher, config.webhooks), methods=["POST"]
            ),  # residents' webhooks (K3)
            Route("/", http.dashboard_index, methods=["GET"]),
            Route("/dashboard/{name}", http.dashboard_asset, methods=["GET"]),
            WebSocketRoute("/ws", WebSocketRoutes(access).serve),
        ]
    )
