"""The synchronous front end (the CLI's): one WebSocket to a Gateway, read by the calling thread.

:meth:`Client.call` reads the socket until its own reply arrives and keeps whatever else it read (events,
replies to requests sent with :meth:`Client.request`) for :meth:`Client.receive`, in arrival order:
nothing is lost between the two."""

from __future__ import annotations

import contextlib
import time
from collections import deque
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, TypeVar, overload

from websockets.exceptions import ConnectionClosed, InvalidHandshake
from websockets.sync.client import connect as ws_connect

from anyy.api.methods import MethodSpec
from anyy.api.params import Params
from anyy.client.errors import GatewayUnavailable, connect_failed
from anyy.client.gateway import gateway_address
from anyy.client.protocol import CONNECT_TIMEOUT, Message, Method, Protocol, Reply, connection_options, result_type
from anyy.profiles.gateway_address import Address

if TYPE_CHECKING:
    from websockets.sync.client import ClientConnection

    from anyy.profiles import Profile

P = TypeVar("P", bound=Params)
R = TypeVar("R")


class Client:
    def __init__(self, ws: ClientConnection, address: Address) -> None:
        self.ws = ws
        self.address = address
        self._protocol = Protocol()
        self._kept: deque[Message] = deque()

    def request(self, method: Method, params: Any = None) -> int:
        """Send a request without waiting; its reply comes back through :meth:`receive`."""
        wanted, frame = self._protocol.request(method, params)
        try:
            self.ws.send(frame.decode())
        except ConnectionClosed:
            # What the Gateway said before closing (unauthorized) is raised; else that it closed.
            while True:
                self._kept.append(self._read(None))
        return wanted

    @overload
    def call(self, method: MethodSpec[P, R], params: P, *, timeout: float | None = None) -> R: ...
    @overload
    def call(self, method: str, params: Any = None, *, timeout: float | None = None) -> Any: ...
    def call(self, method: Method, params: Any = None, *, timeout: float | None = None) -> Any:
        """Send a request and return its result (an anyy.api method's: read as its result type; a bare
        name's: plain JSON), or raise its error; TimeoutError after ``timeout`` seconds."""
        wanted = self.request(method, params)
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            left = None if deadline is None else max(deadline - time.monotonic(), 0.0)
            message = self._read(left)
            if isinstance(message, Reply) and message.id == wanted:
                return message.result(result_type(method))
            self._kept.append(message)

    def receive(self, timeout: float | None = None) -> Message:
        """The next event or reply (to a :meth:`request`), in arrival order; TimeoutError after ``timeout``."""
        if self._kept:
            return self._kept.popleft()
        return self._read(timeout)

    def _read(self, timeout: float | None) -> Message:
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            left = None if deadline is None else max(deadline - time.monotonic(), 0.0)
            try:
                frame = self.ws.recv(left)
            except ConnectionClosed as exc:
                raise GatewayUnavailable(
                    f"the Gateway of profile {self.address.profile} closed the connection ({exc}); "
                    f"check it with `anyy gateway status --profile {self.address.profile}`"
                ) from None
            message = self._protocol.read(frame)
            if isinstance(message, Reply) and message.id is None:
                message.result()  # an error tied to no request (unauthorized): raise it
            if message is not None:
                return message


@contextlib.contextmanager
def connect(address: Address, *, timeout: float = CONNECT_TIMEOUT, agent: str = "anyy-cli") -> Iterator[Client]:
    """A client connected to the Gateway at ``address`` with its token; closed on exit.

    A Gateway that does not answer (its gateway.json outlived it) is GatewayUnavailable, at once."""
    try:
        ws_context = ws_connect(
            address.ws_url, **connection_options(address.token, timeout=timeout, agent=agent, ssl=address.ssl_context())
        )
    except (OSError, TimeoutError, InvalidHandshake) as exc:
        raise connect_failed(address.profile, address.pid, address.url, exc) from None
    with ws_context as ws:
        yield Client(ws, address)


@contextlib.contextmanager
def profile_client(profile: Profile, *, timeout: float = CONNECT_TIMEOUT) -> Iterator[Client]:
    """A client connected to the profile's Gateway, or GatewayUnavailable saying how to start one (SPEC C2)."""
    with connect(gateway_address(profile), timeout=timeout) as client:
        yield client
