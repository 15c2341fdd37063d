"""The CLI's JSON-RPC client: one WebSocket to the profile's Gateway (found through its ``gateway.json``),
calls matched to their replies by id, and the Gateway's ``event`` notifications kept in arrival order.

The client is synchronous (``websockets.sync.client``) and single-threaded: :meth:`RpcClient.call` reads
the socket until its own reply arrives and keeps whatever else it reads (events, replies to requests
sent with :meth:`RpcClient.request`) for :meth:`RpcClient.receive`, in order. Nothing is lost between
the two. Imported by the commands that talk to a Gateway only, so that ``anyy --help`` stays fast.
"""

from __future__ import annotations

import contextlib
import time
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import msgspec
from websockets.exceptions import ConnectionClosed, InvalidHandshake
from websockets.sync.client import connect

from anyy.domain.errors import AnyyError
from anyy.profiles.gateway_address import Address, read_address
from commons.jsonrpc import INTERNAL_ERROR, RpcError, request

if TYPE_CHECKING:
    from websockets.sync.client import ClientConnection

    from anyy.profiles import Profile

# Events and replies may be large (a whole session's history page); the Gateway accepts 16 MiB frames.
MAX_FRAME = 16 * 1024 * 1024
CONNECT_TIMEOUT = 5.0


class GatewayUnavailable(AnyyError):
    """No Gateway answers for the profile (never started, stopped, or gone without cleaning up)."""


def no_gateway_message(profile_name: str) -> str:
    return (
        f"no Gateway is running for profile {profile_name}: start one with "
        f"`anyy gateway start --profile {profile_name}`"
    )


@dataclass(frozen=True)
class Reply:
    """The answer to one request: ``result`` raises the error it carries."""

    id: int | str | None
    message: dict[str, Any]

    def result(self) -> Any:
        error = self.message.get("error")
        if error is not None:
            raise RpcError(int(error.get("code", INTERNAL_ERROR)), str(error.get("message", "")), error.get("data"))
        return self.message.get("result")


@dataclass(frozen=True)
class Event:
    """One ``event`` notification: its params, with ``type`` (text_delta, execution_state, …)."""

    params: dict[str, Any]

    @property
    def type(self) -> str:
        return str(self.params.get("type", ""))


Message = Reply | Event

_decoder = msgspec.json.Decoder()


class RpcClient:
    def __init__(self, ws: ClientConnection, address: Address) -> None:
        self.ws = ws
        self.address = address
        self._next_id = 0
        self._kept: deque[Message] = deque()

    def request(self, method: str, params: dict[str, Any] | None = None) -> int:
        """Send a request without waiting; its reply comes back through :meth:`receive`."""
        self._next_id += 1
        self.ws.send(request(method, params, self._next_id).decode())
        return self._next_id

    def call(self, method: str, params: dict[str, Any] | None = None, *, timeout: float | None = None) -> Any:
        """Send a request and return its result (or raise its RpcError); TimeoutError after ``timeout``."""
        wanted = self.request(method, params)
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            left = None if deadline is None else max(deadline - time.monotonic(), 0.0)
            message = self._read(left)
            if isinstance(message, Reply) and message.id == wanted:
                return message.result()
            if isinstance(message, Reply) and message.id is None:
                message.result()  # an error not tied to a request (unauthorized): raise it
            self._kept.append(message)

    def receive(self, timeout: float | None = None) -> Message:
        """The next event or reply (to a :meth:`request`), in arrival order; TimeoutError after ``timeout``."""
        if self._kept:
            return self._kept.popleft()
        message = self._read(timeout)
        if isinstance(message, Reply) and message.id is None:
            message.result()
        return message

    def _read(self, timeout: float | None) -> Message:
        try:
            frame = self.ws.recv(timeout)
        except ConnectionClosed as exc:
            raise GatewayUnavailable(
                f"the Gateway of profile {self.address.profile} closed the connection ({exc}); "
                f"check it with `anyy gateway status --profile {self.address.profile}`"
            ) from None
        data = _decoder.decode(frame)
        if not isinstance(data, dict):
            raise RpcError(INTERNAL_ERROR, f"the Gateway sent something that is not a JSON-RPC message: {data!r}")
        if "id" not in data and data.get("method") == "event":
            params = data.get("params")
            return Event(params if isinstance(params, dict) else {})
        return Reply(data.get("id"), data)


def gateway_address(profile: Profile) -> Address:
    """The address the profile's Gateway published, or GatewayUnavailable saying how to start one."""
    profile.require()
    address = read_address(profile)
    if address is None:
        raise GatewayUnavailable(no_gateway_message(profile.name))
    return address


@contextlib.contextmanager
def open_client(address: Address, *, timeout: float = CONNECT_TIMEOUT) -> Iterator[RpcClient]:
    """A client connected to the Gateway at ``address`` with its token; closed on exit.

    A Gateway that does not answer (its gateway.json outlived it) is GatewayUnavailable, at once."""
    try:
        ws_context = connect(
            address.ws_url,
            additional_headers={"Authorization": f"Bearer {address.token}"},
            open_timeout=timeout,
            max_size=MAX_FRAME,
            compression=None,  # loopback: deflate would only cost time
            proxy=None,  # loopback only: never through a proxy from the environment
            ping_interval=None,  # a long session.wait must not be cut by a missed ping
            user_agent_header="anyy-cli",
        )
    except (OSError, TimeoutError, InvalidHandshake):
        raise GatewayUnavailable(no_gateway_message(address.profile)) from None
    with ws_context as ws:
        yield RpcClient(ws, address)


@contextlib.contextmanager
def profile_client(profile: Profile, *, timeout: float = CONNECT_TIMEOUT) -> Iterator[RpcClient]:
    """A client connected to the profile's Gateway, or GatewayUnavailable (SPEC C2, X3)."""
    with open_client(gateway_address(profile), timeout=timeout) as client:
        yield client
