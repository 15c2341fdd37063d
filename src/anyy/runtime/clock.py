"""Time, injected: real waits in the Gateway, controlled waits in tests (no sleeps for synchronisation)."""

from __future__ import annotations

import asyncio
import time
from typing import Protocol

MAX_RETRY_DELAY = 60.0


class Clock(Protocol):
    def now(self) -> float: ...

    async def sleep(self, seconds: float) -> None: ...


class SystemClock:
    def now(self) -> float:
        return time.monotonic()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


class WallClock:
    """Wall-clock time, for what outlives the process (a resident's next heartbeat)."""

    def now(self) -> float:
        return time.time()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


def retry_delay(attempt: int, retry_after: float | None = None) -> float:
    """Seconds before retry number ``attempt`` (1-based): 2, 4, 8… capped at 60 s (R3). A server's
    Retry-After is honoured when it asks for longer, within the same cap."""
    delay = min(2.0 * 2.0 ** (attempt - 1), MAX_RETRY_DELAY)
    if retry_after is not None:
        delay = max(delay, min(retry_after, MAX_RETRY_DELAY))
    return delay
