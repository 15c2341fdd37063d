"""Flags and gates that work across threads and event loops, for scripting the offline provider.

A test often runs the Gateway's event loop in one thread and drives it from another (or from its own
loop). ``asyncio.Event`` belongs to one loop, so a scripted stream waits on a :class:`Gate` instead: the
stream awaits it on whatever loop runs the stream; the test opens it from anywhere, and can wait until
the stream has reached it, without sleeping.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading


class Flag:
    """Set once, awaited from any event loop, or waited on from any thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._set = threading.Event()
        self._waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Event]] = []

    def set(self) -> None:
        with self._lock:
            self._set.set()
            waiters, self._waiters = self._waiters, []
        for loop, event in waiters:
            # A loop that has closed has nobody waiting any more.
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(event.set)

    def is_set(self) -> bool:
        return self._set.is_set()

    async def wait(self) -> None:
        event = asyncio.Event()
        with self._lock:
            if self._set.is_set():
                return
            entry = (asyncio.get_running_loop(), event)
            self._waiters.append(entry)
        try:
            await event.wait()
        finally:
            with self._lock:
                if entry in self._waiters:
                    self._waiters.remove(entry)

    def wait_blocking(self, timeout: float | None = None) -> bool:
        """From a thread that runs no event loop; True once set, False on timeout."""
        return self._set.wait(timeout)


class Gate:
    """A point in a scripted response where the stream stops until the gate is opened.

    ``reached`` is set when a stream arrives at the gate, so a test knows the model is "in the middle of
    its answer" before it acts (sends steering, stops the session, …).
    """

    def __init__(self, name: str = "gate") -> None:
        self.name = name
        self.reached = Flag()
        self.opened = Flag()

    def open(self) -> None:
        self.opened.set()

    async def pass_through(self) -> None:
        self.reached.set()
        await self.opened.wait()

    def __repr__(self) -> str:
        state = "open" if self.opened.is_set() else "reached" if self.reached.is_set() else "closed"
        return f"Gate({self.name!r}, {state})"
