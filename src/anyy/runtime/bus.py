"""Runtime events to whoever listens (the Gateway's connections), per session or for all sessions.

Publishing never blocks the runtime: each subscriber has its own queue.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from anyy.api.events import RuntimeEvent


class Subscription:
    def __init__(self, bus: EventBus, session_id: str | None) -> None:
        self.session_id = session_id
        self.queue: asyncio.Queue[RuntimeEvent] = asyncio.Queue()
        self._bus = bus

    async def get(self) -> RuntimeEvent:
        return await self.queue.get()

    def close(self) -> None:
        self._bus.unsubscribe(self)

    async def __aiter__(self) -> AsyncIterator[RuntimeEvent]:
        while True:
            yield await self.queue.get()


class EventBus:
    def __init__(self) -> None:
        self._subscriptions: set[Subscription] = set()

    def subscribe(self, session_id: str | None = None) -> Subscription:
        """Events of one session, or of every session with ``None``."""
        subscription = Subscription(self, session_id)
        self._subscriptions.add(subscription)
        return subscription

    def unsubscribe(self, subscription: Subscription) -> None:
        self._subscriptions.discard(subscription)

    def listened(self, session_id: str) -> bool:
        """Whether anyone subscribed to this session's events (or to every session's)."""
        return any(sub.session_id is None or sub.session_id == session_id for sub in self._subscriptions)

    def publish(self, event: RuntimeEvent) -> None:
        for subscription in self._subscriptions:
            if subscription.session_id is None or subscription.session_id == event.session_id:
                subscription.queue.put_nowait(event)
