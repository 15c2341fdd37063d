"""Process groups: a child started as the leader of a group of its own, so that it and everything it
starts can be ended together, even by a later process that only knows its pid (Linux ``/proc``).

A pid can be reused once its process is reaped: ``start_time`` tells the same process from a newer one
with the same pid, and ``group_alive`` tells whether any member of a group still lives (Linux does not
hand out a pid that is still some group's id).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from collections.abc import Mapping, Sequence
from pathlib import Path


async def spawn_group(
    argv: Sequence[str], *, cwd: Path | None = None, env: Mapping[str, str] | None = None
) -> asyncio.subprocess.Process:
    """Start ``argv`` as the leader of a new process group (its pid is the group id), stdin closed,
    stdout and stderr piped."""
    return await asyncio.create_subprocess_exec(
        *argv,
        cwd=cwd,
        env=dict(env) if env is not None else None,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        start_new_session=True,
    )


def kill_group(pgid: int, sig: int = signal.SIGKILL) -> bool:
    """Send ``sig`` to the whole group; False when no member was left."""
    if pgid <= 1:
        raise ValueError(f"refusing to signal process group {pgid}")
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        return False
    return True


def _stat_fields(pid: int) -> list[str] | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
    except OSError:
        return None
    return stat[stat.rfind(")") + 2 :].split()


def start_time(pid: int) -> int | None:
    """The process's start time in clock ticks since boot (``/proc/PID/stat`` field 22), or None."""
    fields = _stat_fields(pid)
    return int(fields[19]) if fields and len(fields) > 19 and fields[19].isdigit() else None


def exited(pid: int) -> bool:
    """The process has exited (reaped, or a zombie waiting for its parent to reap it)."""
    fields = _stat_fields(pid)
    return fields is None or fields[:1] == ["Z"]


def group_alive(pgid: int) -> bool:
    """Whether any process of the group still lives."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def group_members(pgid: int) -> list[int]:
    """The live pids of a process group (from ``/proc``)."""
    members = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            fields = _stat_fields(int(entry.name))
            if fields and len(fields) > 2 and fields[2] == str(pgid) and fields[0] != "Z":
                members.append(int(entry.name))
    return members


def end_group(pgid: int, *, wait: float = 10.0) -> None:
    """SIGKILL the group and wait (up to ``wait`` seconds) until its leader has exited: a signal takes
    effect soon, not at once."""
    with contextlib.suppress(ProcessLookupError):
        kill_group(pgid)
    deadline = time.monotonic() + wait
    while not exited(pgid) and time.monotonic() < deadline:
        time.sleep(0.01)


PR_SET_CHILD_SUBREAPER = 36


def adopt_orphans() -> bool:
    """Make this process the Linux "child subreaper" of its descendants: a grandchild whose parent exits
    becomes our child (not init's), so that :func:`end_children` can end what a program left behind.
    False where the kernel does not offer it."""
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return bool(libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0)
    except (OSError, AttributeError):
        return False


def children(pid: int | None = None) -> list[int]:
    """The live child processes of ``pid`` (default: this process)."""
    parent = str(pid or os.getpid())
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            fields = _stat_fields(int(entry.name))
            if fields and len(fields) > 1 and fields[1] == parent and fields[0] != "Z":
                found.append(int(entry.name))
    return found


def end_children(grace: float = 2.0, rounds: int = 5) -> list[int]:
    """SIGTERM this process's remaining children, SIGKILL those still there after ``grace`` seconds, and
    reap them; again for the grandchildren that come back to a subreaper meanwhile. The pids ended."""
    ended: list[int] = []
    for _ in range(rounds):
        left = children()
        if not left:
            break
        for pid in left:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline and any(not exited(pid) for pid in left):
            time.sleep(0.02)
        for pid in left:
            if not exited(pid):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, 0)
        ended += left
    return ended
