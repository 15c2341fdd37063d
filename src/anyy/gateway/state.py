"""What every method handler reaches: the profile, the runtime and its store, and the connection."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TypeVar

from anyy.api.events import RuntimeEvent
from anyy.channels.service import Channels
from anyy.gateway.codes import CodeBook
from anyy.gateway.remote import RemoteAccess
from anyy.profiles.profile import Profile
from anyy.runtime.bus import Subscription
from anyy.runtime.deps import Deps
from anyy.runtime.runtime import Runtime
from anyy.runtime.schedule_admin import ScheduleAdmin
from anyy.storage.protocol import SessionStore

T = TypeVar("T")


@dataclass
class Gateway:
    profile: Profile
    deps: Deps
    runtime: Runtime
    token: str
    started_at: float = field(default_factory=time.time)
    codes: CodeBook = field(default_factory=CodeBook)  # one-time codes that open the Dashboard (D5)
    schedules: ScheduleAdmin | None = None  # the scheduler and the schedule.* methods (K1), once started
    channels: Channels | None = None  # the profile's channels (L1), once started
    remote: RemoteAccess | None = None  # paired devices and pairing offers (O2), set when the app is made

    async def store(self, fn: Callable[[SessionStore], T]) -> T:
        """A read of the store (one unit of work). Writes are the runtime's: it writes and announces them."""
        return await self.deps.owner.call(fn)


@dataclass
class Connection:
    """One client connection (a WebSocket); HTTP requests have none."""

    send_event: Callable[[RuntimeEvent], Awaitable[None]]
    subscriptions: dict[str, tuple[Subscription, asyncio.Task[None]]] = field(default_factory=dict)
    next_id: int = 0

    def close(self) -> None:
        for subscription, task in self.subscriptions.values():
            subscription.close()
            task.cancel()
        self.subscriptions.clear()
