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
    """Subscriptions are indexed by the session they follow (``None``: every session), so publishing
    costs the number of this session's subscribers, not the number of all of them."""

    def __init__(self) -> None:
        self._subscriptions: set[Subscription] = set()
        self._full: dict[str | None, set[Subscription]] = {}  # every event of the session
        self._states: dict[str | None, set[Subscription]] = {}  # executions' state changes only

    def subscribe(self, session_id: str | None = None, *, states_only: bool = False) -> Subscription:
        """Events of one session, or of every session with ``None``; ``states_only``: executions' state
        changes alone (a runtime watcher's: it does not make the other events be built)."""
        subscription = Subscription(self, session_id, states_only=states_only)
        self._subscriptions.add(subscription)
        index = self._states if states_only else self._full
        index.setdefault(session_id, set()).add(subscription)
        return subscription

    def unsubscribe(self, subscription: Subscription) -> None:
        self._subscriptions.discard(subscription)
        index = self._states if subscription.states_only else self._full
        subscribers = index.get(subscription.session_id)
        if subscribers is not None:
            subscribers.discard(subscription)
            if not subscribers:
                del index[subscription.session_id]

    def count(self) -> int:
        """Subscriptions open now."""
        return len(self._subscriptions)

    def listened(self, session_id: str) -> bool:
        """Whether anyone subscribed to this session's events (or to every session's)."""
        return session_id in self._full or None in self._full

    def publish(self, event: RuntimeEvent) -> None:
        # Called for every streamed delta: the common case (no state change, few subscribers) stays short.
        _deliver(self._full, event)
        if isinstance(event, ExecutionStateChanged):
            _deliver(self._states, event)


def _deliver(index: dict[str | None, set[Subscription]], event: RuntimeEvent) -> None:
    """To the session's subscribers, then to those of every session."""
    mine = index.get(event.session_id)
    if mine:
        for subscription in mine:
            subscription.queue.put_nowait(event)
    everyone = index.get(None)
    if everyone:
        for subscription in everyone:
            subscription.queue.put_nowait(event)
