"""Who may use the Gateway and how much at once: the access token, the origins of its own pages, and the
bound on calls in flight (D7), shared by the HTTP routes and the WebSocket."""

from __future__ import annotations

import hmac
import ipaddress
from dataclasses import dataclass

from anyy.gateway.dispatcher import Dispatcher
from anyy.gateway.remote import Caller, RemoteAccess
from commons import jsonrpc

UNAUTHORIZED_MESSAGE = (
    "unauthorized: this Gateway needs its profile's access token (Authorization: Bearer TOKEN); clients "
    "read it from the profile's gateway.json"
)
FORBIDDEN_ORIGIN = 4403
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


@dataclass
class Access:
    """What every route needs: the dispatcher, the token it checks, the calls in flight."""

    dispatcher: Dispatcher
    token: str
    in_flight: InFlight
    remote: RemoteAccess | None = None  # paired devices (O2); None: the profile's token only

    def authorized(self, headers: dict[str, str], query: dict[str, str]) -> bool:
        presented = token_of(headers, query)
        return bool(presented) and hmac.compare_digest(presented.encode(), self.token.encode())

    def identify(
        self, headers: dict[str, str], query: dict[str, str], cookies: dict[str, str], peer: str = ""
    ) -> Caller | None:
        """The owner (the profile's token), a live paired device (its cookie), or None; None too for an
        address refused for its authentication failures (:meth:`limited` says so)."""
        if self.limited(peer):
            return None
        if self.authorized(headers, query):
            return Caller()
        device = self.remote.device_of(cookies) if self.remote is not None else None
        if device is not None:
            return Caller(device=device)
        if self.remote is not None and self.remote.limit_failures and peer:
            self.remote.failures.failed(peer)
        return None

    def limited(self, peer: str) -> bool:
        return bool(peer) and self.remote is not None and self.remote.failures.blocked(peer)


def own_origins(server: tuple[str, int] | None, *, secure: bool = False) -> set[str]:
    """The origins of pages this Gateway served: its own address, and ``localhost`` on loopback; over TLS
    (O1) ``https`` ones only."""
    if server is None:
        return set()
    host, port = server[0], server[1]
    shown = f"[{host}]" if ":" in host else host
    scheme = "https" if secure else "http"
    origins = {f"{scheme}://{shown}:{port}"}
    try:
        loopback = ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = host == "localhost"
    if loopback:
        origins |= {f"{scheme}://localhost:{port}", f"{scheme}://127.0.0.1:{port}", f"{scheme}://[::1]:{port}"}
    return origins


def foreign(origin: str | None, server: tuple[str, int] | None, scheme: str = "http", host: str = "") -> bool:
    """A browser page of another site (a client that is not a browser sends no Origin).

    Over TLS the page may also have been opened by a name of the Gateway's certificate (``https://box.lan``):
    an Origin equal to ``https://`` + the request's Host is its own, as the browser checked that name against
    the certificate (a rebound DNS name fails that check, which is why plain HTTP does not allow it)."""
    if origin is None:
        return False
    secure = scheme in ("https", "wss")
    if secure and host and origin.lower() == f"https://{host.lower()}":
        return False
    return origin.lower() not in own_origins(server, secure=secure)


def token_of(headers: dict[str, str], query: dict[str, str]) -> str:
    header = headers.get("authorization", "")
    if header.lower().startswith("bearer "):
        return header[7:].strip()
    return query.get("token", "")


def too_many_failures_reply() -> bytes:
    message = "too many authentication failures from this address: wait ten minutes, then use a valid credential"
    return jsonrpc.encode(
        jsonrpc.Response(id=None, error=jsonrpc.ErrorObject(code=jsonrpc.UNAUTHORIZED, message=message))
    )


def unauthorized_reply() -> bytes:
    return jsonrpc.encode(
        jsonrpc.Response(id=None, error=jsonrpc.ErrorObject(code=jsonrpc.UNAUTHORIZED, message=UNAUTHORIZED_MESSAGE))
    )
