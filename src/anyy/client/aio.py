"""The asynchronous front end (the TUI's): one WebSocket on the caller's event loop.

Each :meth:`AsyncClient.call` awaits a future matched to its reply by id; the Gateway's events are handed,
in arrival order, to the ``on_event`` callback, and the loss of the connection to ``on_closed``. One
reader task owns the socket's receiving side, so a reply never waits behind an event handler."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import Any, TypeVar, overload

from websockets.asyncio.client import ClientConnection
from websockets.asyncio.client import connect as ws_connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake

from anyy.api.methods import MethodSpec
from anyy.api.params import Params
from anyy.client.errors import GatewayUnavailable, ProtocolError, connect_failed
from anyy.client.protocol import CONNECT_TIMEOUT, Event, Method, Protocol, Reply, connection_options, result_type
from anyy.profiles.gateway_address import Address

P = TypeVar("P", bound=Params)
R = TypeVar("R")
CALL_TIMEOUT = 30.0

EventHandler = Callable[[Event], None]
ClosedHandler = Callable[[str], None]


class AsyncClient:
    def __init__(
        self, ws: ClientConnection, address: Address, on_event: EventHandler, on_closed: ClosedHandler
    ) -> None:
        self.ws = ws
        self.address = address
        self._on_event = on_event
        self._on_closed = on_closed
        self._protocol = Protocol()
        self._waiting: dict[int, asyncio.Future[Reply]] = {}
        self._closed: str | None = None
        self._refused: str | None = None  # what the Gateway said in an error tied to no request (unauthorized)
        self._reader = asyncio.create_task(self._read(), name="anyy-client-reader")

    @classmethod
    async def connect(
        cls,
        address: Address,
        on_event: EventHandler,
        on_closed: ClosedHandler,
        *,
        timeout: float = CONNECT_TIMEOUT,
        agent: str = "anyy-tui",
    ) -> AsyncClient:
        """Connected with the address's token, or GatewayUnavailable."""
        try:
            ws = await ws_connect(
                address.ws_url,
                **connection_options(address.token, timeout=timeout, agent=agent, ssl=address.ssl_context()),
            )
        except (OSError, TimeoutError, InvalidHandshake) as exc:
            raise connect_failed(address.profile, address.pid, address.url, exc) from None
        return cls(ws, address, on_event, on_closed)

    @overload
    async def call(self, method: MethodSpec[P, R], params: P, *, timeout: float = CALL_TIMEOUT) -> R: ...
    @overload
    async def call(self, method: str, params: Any = None, *, timeout: float = CALL_TIMEOUT) -> Any: ...
    async def call(self, method: Method, params: Any = None, *, timeout: float = CALL_TIMEOUT) -> Any:
        """The call's result (read as the anyy.api method's result type; a bare name's: plain JSON), or the
        error its reply carries; GatewayUnavailable when the connection is lost, TimeoutError after
        ``timeout`` seconds."""
        if self._closed is not None:
            raise GatewayUnavailable(self._closed)
        wanted, frame = self._protocol.request(method, params)
        future: asyncio.Future[Reply] = asyncio.get_running_loop().create_future()
        self._waiting[wanted] = future
        try:
            await self.ws.send(frame.decode())
            reply = await asyncio.wait_for(future, timeout)
        except ConnectionClosed:
            raise GatewayUnavailable(self._closed or "the Gateway closed the connection") from None
        finally:
            self._waiting.pop(wanted, None)
        return reply.result(result_type(method))

    async def close(self) -> None:
        self._reader.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._reader
        # A call still waiting (a handler of the closing app) ends now rather than at its timeout.
        self._fail_waiting(self._closed or "the connection to the Gateway was closed by the client")
        await self.ws.close()

    async def _read(self) -> None:
        why = f"the Gateway of profile {self.address.profile} closed the connection"
        try:
            async for frame in self.ws:
                self._dispatch(frame)
        except ConnectionClosed:
            why = self._refused or why
        except ProtocolError as exc:
            why = str(exc)
            await self.ws.close()
        self._fail_waiting(why)
        self._on_closed(why)

    def _fail_waiting(self, why: str) -> None:
        self._closed = why
        for future in self._waiting.values():
            if not future.done():
                future.set_exception(GatewayUnavailable(why))

    def _dispatch(self, frame: bytes | str) -> None:
        message = self._protocol.read(frame)
        if message is None:
            return
        if not isinstance(message, Reply):
            self._on_event(message)
            return
        if message.id is None and message.error is not None:
            self._refused = message.error.message
        future = self._waiting.get(message.id) if isinstance(message.id, int) else None
        if future is not None and not future.done():
            future.set_result(message)
