"""A calendar clock the test sets by hand, usable from another thread than the loop that sleeps on it
(a LiveGateway runs its own loop). Nothing sleeps for real: a wait ends when the test moves the time
past it."""

from __future__ import annotations

import asyncio
import threading


class ManualWallClock:
    def __init__(self, now: float) -> None:
        self._now = now
        self._lock = threading.Lock()
        self._sleepers: list[tuple[float, asyncio.AbstractEventLoop, asyncio.Future[None]]] = []
        self.targets: list[float] = []  # every moment something asked to sleep until, in order

    def now(self) -> float:
        return self._now

    async def sleep(self, seconds: float) -> None:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[None] = loop.create_future()
        with self._lock:
            target = self._now + seconds
            self.targets.append(target)
            if target <= self._now:
                return
            entry = (target, loop, future)
            self._sleepers.append(entry)
        try:
            await future
        finally:
            with self._lock:
                if entry in self._sleepers:
                    self._sleepers.remove(entry)

    def set(self, moment: float) -> None:
        """Move the time to ``moment``; every wait that ends by then ends."""
        with self._lock:
            self._now = moment
            due = [s for s in self._sleepers if s[0] <= moment]
        for _, loop, future in due:
            loop.call_soon_threadsafe(_finish, future)


def _finish(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)
