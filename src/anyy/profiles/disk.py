"""Whether the disk holding a profile is full, in words a person can act on (D9).

A Gateway that starts on a full disk fails wherever it first writes (SQLite's shared memory file, its log,
its output file), often before it can say anything: its output goes to a file on that same disk. Both the
Gateway and the client that started it ask this instead of passing on "disk I/O error" or nothing."""

from __future__ import annotations

import os
from pathlib import Path

# Less than this free for the profile's user counts as full: a start writes its WAL, log and lock files.
MIN_FREE = 1024 * 1024


def free_bytes(path: Path) -> int | None:
    """Bytes free for an unprivileged writer on the file system holding ``path`` (None: unknown)."""
    for candidate in (path, *path.parents):
        try:
            found = os.statvfs(candidate)
        except OSError:
            continue
        return found.f_bavail * found.f_frsize
    return None


def full_disk_message(profile_name: str, path: Path) -> str | None:
    """What to tell the user when the disk holding the profile at ``path`` is (nearly) full, else None."""
    free = free_bytes(path)
    if free is None or free >= MIN_FREE:
        return None
    return (
        f"the disk holding profile {profile_name} ({path}) is full ({free} bytes free): the Gateway cannot write "
        "its database and log there. Free some disk space, then start it again"
    )
