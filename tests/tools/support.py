"""Helpers for watching the processes a tool starts, without sleeping."""

from __future__ import annotations

import asyncio
import os
import select
from pathlib import Path


def make_fifo(path: Path) -> Path:
    os.mkfifo(path)
    return path


async def read_fifo(path: Path, timeout: float = 20.0) -> str:
    """What a command writes into ``path`` (a FIFO): returns once the writer has written and closed it."""
    try:
        return await asyncio.wait_for(asyncio.to_thread(path.read_text), timeout)
    except TimeoutError:
        # Unblock the reading thread (it waits for a writer to open the FIFO) so the test can end.
        fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
        os.close(fd)
        raise


def process_ended(pid: int, timeout: float = 10.0) -> bool:
    """True once process ``pid`` has terminated (a pidfd turns readable), False if it is still running."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return True
    try:
        ready, _, _ = select.select([fd], [], [], timeout)
        return bool(ready)
    finally:
        os.close(fd)
