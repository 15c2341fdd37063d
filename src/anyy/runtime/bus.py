"""Runtime events to whoever listens (the Gateway's connections), per session or for all sessions.

Publishing never blocks the runtime: each subscriber has its own queue.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from anyy.api.events import ExecutionStateChanged, RuntimeEvent


class Subscription:
    def __init__(self, bus: EventBus, session_id: str | None, *, states_only: bool = False) -> None:
        self.session_id = session_id
        self.states_only = states_only  # only executions' state changes (they are published anyway)
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

    def subscribe(self, session_id: str | None = None, *, states_only: bool = False) -> Subscription:
        """Events of one session, or of every session with ``None``; ``states_only``: executions' state
        changes alone (a runtime watcher's: it does not make the other events be built)."""
        subscription = Subscription(self, session_id, states_only=states_only)
        self._subscriptions.add(subscription)
        return subscription

    def unsubscribe(self, subscription: Subscription) -> None:
        self._subscriptions.discard(subscription)

    def count(self) -> int:
        """Subscriptions open now."""
        return len(self._subscriptions)

    def listened(self, session_id: str) -> bool:
        """Whether anyone subscribed to this session's events (or to every session's)."""
        return any(
            not sub.states_only and (sub.session_id is None or sub.session_id == session_id)
            for sub in self._subscriptions
        )

    def publish(self, event: RuntimeEvent) -> None:
        for subscription in self._subscriptions:
            if subscription.states_only and not isinstance(event, ExecutionStateChanged):
                continue
            if subscription.session_id is None or subscription.session_id == event.session_id:
                subscription.queue.put_nowait(event)
