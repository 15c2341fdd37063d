"""The TUI's connection to its Gateway: one :class:`AsyncClient` at a time, whose events and loss come to
the app as Textual messages; after a loss, new connections with a growing delay, the profile's
``gateway.json`` read again before each try (a restarted Gateway has a new port and token)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import Any

from textual.message import Message

from anyy.client.aio import AsyncClient
from anyy.client.errors import CallFailed, GatewayUnavailable
from anyy.client.gateway import Locator
from anyy.client.protocol import Event, Method
from anyy.profiles.gateway_address import Address

FIRST_DELAY = 0.1
MAX_DELAY = 5.0


class GatewayEvent(Message):
    def __init__(self, event: Event) -> None:
        super().__init__()
        self.event = event


class ConnectionLost(Message):
    def __init__(self, why: str) -> None:
        super().__init__()
        self.why = why


class GatewayLink:
    def __init__(self, address: Address, locate: Locator, post: Callable[[Message], object]) -> None:
        self.address = address
        self.locate = locate
        self._post = post
        self.client: AsyncClient | None = None
        self._generation = 0  # which connection messages belong to: a replaced one's are dropped
        self.attempts = 0  # tries to reconnect, since the app opened
        self.reconnections = 0

    async def connect(self, address: Address) -> None:
        """A new connection in place of the current one (closed), or GatewayUnavailable."""
        self._generation += 1
        generation = self._generation

        def post(message: Message) -> None:
            if generation == self._generation:
                self._post(message)

        client = await AsyncClient.connect(
            address, lambda event: post(GatewayEvent(event)), lambda why: post(ConnectionLost(why))
        )
        old, self.client, self.address = self.client, client, address
        if old is not None:
            with contextlib.suppress(Exception):
                await old.close()

    async def call(self, method: Method, params: Any = None) -> Any:
        if self.client is None:
            raise GatewayUnavailable("not connected to the Gateway")
        return await self.client.call(method, params)

    async def reconnect(self, reopen: Callable[[], Awaitable[None]], waiting: Callable[[float], None]) -> str | None:
        """Connect again and ``reopen`` what was shown, trying until it works; None then, or why the Gateway
        refused to reopen it (connected, but that is where it stops). ``waiting`` says each pause."""
        delay = FIRST_DELAY
        while True:
            self.attempts += 1
            address = self.locate()
            if address is not None:
                try:
                    await self.connect(address)
                    await reopen()
                except GatewayUnavailable:
                    pass
                except CallFailed as exc:
                    return str(exc)
                else:
                    self.reconnections += 1
                    return None
            waiting(delay)
            await asyncio.sleep(delay)  # backoff between tries
            delay = min(delay * 2, MAX_DELAY)

    async def close(self) -> None:
        if self.client is not None:
            await self.client.close()
