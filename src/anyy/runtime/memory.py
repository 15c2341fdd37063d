"""The process's own memory (D13): how much is resident, and giving freed heap pages back to the system.

CPython frees small objects into its own arenas and larger ones with ``free``; glibc keeps freed pages
of its heaps for later use unless asked to return them (``malloc_trim``), and objects in reference
cycles wait for a full collection. After a burst of work (a hundred sessions streaming at once) those
were what stayed resident once the work was gone.
"""

from __future__ import annotations

import asyncio
import ctypes
import ctypes.util
import gc
import logging
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

log = logging.getLogger("anyy.runtime")


def resident_bytes() -> int:
    """The process's resident memory (``VmRSS``), 0 where ``/proc`` does not say."""
    try:
        lines = Path("/proc/self/status").read_text().splitlines()
    except OSError:
        return 0
    for line in lines:
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


@cache
def _libc() -> Any:
    """glibc, when this process runs on it (``malloc_trim`` is glibc's); None elsewhere (musl, macOS)."""
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    try:
        libc = ctypes.CDLL(name)
        trim = libc.malloc_trim
    except (OSError, AttributeError):
        return None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    return libc


def trim_available() -> bool:
    """Whether :func:`trim` can hand memory back here (glibc)."""
    return _libc() is not None


def trim() -> bool:
    """Hand the heap's free pages back to the system (glibc's ``malloc_trim``); False where unavailable."""
    libc = _libc()
    if libc is None:
        return False
    return bool(libc.malloc_trim(0))


TRIM_AFTER = 1.0  # seconds of the runtime idle before the heap is trimmed (a burst's ends coalesce)


class Trimmer:
    """Once the runtime has had no session work for ``TRIM_AFTER`` seconds (``idle`` says so), collects
    Python's garbage cycles and trims the heap, on a worker thread: tens of milliseconds after a burst,
    when nothing runs (the collection holds the interpreter's lock meanwhile)."""

    def __init__(self, idle: Callable[[], bool], after: float = TRIM_AFTER) -> None:
        self.idle = idle
        self.after = after
        self.trims = 0  # trims done (for tests and benchmarks)
        self._timer: asyncio.TimerHandle | None = None

    def soon(self) -> None:
        """The runtime became idle: trim after a moment, unless work starts and ends again meanwhile."""
        if _libc() is None:
            return
        if self._timer is not None:
            self._timer.cancel()
        loop = asyncio.get_running_loop()
        self._timer = loop.call_later(self.after, self._trim, loop)

    def cancel(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _trim(self, loop: asyncio.AbstractEventLoop) -> None:
        self._timer = None
        if not self.idle():
            return  # work started meanwhile: its end asks again
        self.trims += 1
        loop.run_in_executor(None, _collect_and_trim)


def _collect_and_trim() -> None:
    """Cycles the work left behind are collected first (their memory is then free to give back)."""
    gc.collect()
    trim()
