"""The TUI's JSON-RPC client: one asyncio WebSocket to the Gateway, inside Textual's event loop.

Requests are matched to their replies by id (each :meth:`GatewayClient.call` awaits a future); the
Gateway's ``event`` notifications are handed, in arrival order, to the callback given at connection.
One reader task owns the socket's receiving side, so a reply never waits behind an event handler.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import Any

import msgspec
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake

from anyy.domain.errors import AnyyError
from anyy.profiles.gateway_address import Address
from commons.jsonrpc import INTERNAL_ERROR, RpcError, request

MAX_FRAME = 16 * 1024 * 1024
CONNECT_TIMEOUT = 5.0
CALL_TIMEOUT = 30.0

EventHandler = Callable[[dict[str, Any]], None]

_decoder = msgspec.json.Decoder()


class GatewayGone(AnyyError):
    """The Gateway cannot be reached, or closed the connection."""


class GatewayClient:
    def __init__(self, ws: ClientConnection, address: Address, on_event: EventHandler) -> None:
        self.ws = ws
        self.address = address
        self._on_event = on_event
        self._next_id = 0
        self._waiting: dict[int, asyncio.Future[Any]] = {}
        self._closed: str | None = None
        self._reader = asyncio.create_task(self._read(), name="anyy-tui-gateway-reader")

    @classmethod
    async def connect(cls, address: Address, on_event: EventHandler) -> GatewayClient:
        try:
            ws = await connect(
                address.ws_url,
                additional_headers={"Authorization": f"Bearer {address.token}"},
                open_timeout=CONNECT_TIMEOUT,
                max_size=MAX_FRAME,
                compression=None,  # loopback: deflate would only cost time
                proxy=None,  # loopback only: never through a proxy from the environment
                ping_interval=None,
                user_agent_header="anyy-tui",
            )
        except (OSError, TimeoutError, InvalidHandshake) as exc:
            raise GatewayGone(
                f"cannot reach the Gateway of profile {address.profile} at {address.url}: {exc}"
            ) from None
        return cls(ws, address, on_event)

    async def call(self, method: str, params: dict[str, Any] | None = None, *, timeout: float = CALL_TIMEOUT) -> Any:
        """The call's result, or the RpcError its reply carries; GatewayGone when the connection is lost."""
        if self._closed is not None:
            raise GatewayGone(self._closed)
        self._next_id += 1
        wanted = self._next_id
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._waiting[wanted] = future
        try:
            await self.ws.send(request(method, params, wanted).decode())
            return await asyncio.wait_for(future, timeout)
        except ConnectionClosed:
            raise GatewayGone(self._closed or "the Gateway closed the connection") from None
        finally:
            self._waiting.pop(wanted, None)

    async def close(self) -> None:
        self._reader.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._reader
        # A call still waiting (a handler of the closing app) ends now rather than at its timeout.
        self._fail_waiting(self._closed or "the connection to the Gateway was closed by the client")
        await self.ws.close()

    async def _read(self) -> None:
        try:
            async for frame in self.ws:
                self._dispatch(_decoder.decode(frame))
        except ConnectionClosed:
            pass
        self._fail_waiting(f"the Gateway of profile {self.address.profile} closed the connection")
        self._on_event({"type": "connection_lost", "text": self._closed})

    def _fail_waiting(self, why: str) -> None:
        self._closed = why
        for future in self._waiting.values():
            if not future.done():
                future.set_exception(GatewayGone(why))

    def _dispatch(self, data: Any) -> None:
        if not isinstance(data, dict):
            return
        if "id" not in data and data.get("method") == "event":
            params = data.get("params")
            if isinstance(params, dict):
                self._on_event(params)
            return
        future = self._waiting.get(data.get("id"))  # type: ignore[arg-type]
        if future is None or future.done():
            return
        error = data.get("error")
        if error is not None:
            code = int(error.get("code", INTERNAL_ERROR))
            future.set_exception(RpcError(code, str(error.get("message", "")), error.get("data")))
        else:
            future.set_result(data.get("result"))
