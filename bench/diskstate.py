"""The file side of the benchmark: evicting a database from the OS page cache, checking that it worked
(``mincore``), checkpointing through a separate connection, and measuring sizes on disk."""

from __future__ import annotations

import ctypes
import ctypes.util
import mmap
import os
import sqlite3
from pathlib import Path
from typing import Any

_PROT_READ = 1
_MAP_SHARED = 1
_MAP_FAILED = ctypes.c_void_p(-1).value

_libc: Any = None


def _load_libc() -> Any:
    global _libc  # noqa: PLW0603 - loaded once, on first use
    if _libc is None:
        libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
        libc.mmap.restype = ctypes.c_void_p
        libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
        libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
        libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.POINTER(ctypes.c_ubyte)]
        _libc = libc
    return _libc


def resident_fraction(path: Path) -> float | None:
    """The fraction of the file's pages in the OS page cache (``mincore``), or None if unknown."""
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        return None
    if size == 0:
        return 0.0
    try:
        libc = _load_libc()
    except OSError:
        return None
    fd = os.open(path, os.O_RDONLY)
    try:
        addr = libc.mmap(None, size, _PROT_READ, _MAP_SHARED, fd, 0)
        if addr in (None, _MAP_FAILED):
            return None
        try:
            pages = (size + mmap.PAGESIZE - 1) // mmap.PAGESIZE
            vec = (ctypes.c_ubyte * pages)()
            if libc.mincore(addr, size, vec) != 0:
                return None
            return sum(v & 1 for v in vec) / pages
        finally:
            libc.munmap(addr, size)
    finally:
        os.close(fd)


def evict(db_path: Path) -> dict[str, Any]:
    """Drop state.db and its WAL from the page cache (fsync first: dirty pages cannot be dropped).

    Returns, per file, the resident fraction before and after, so the report can say whether it worked.
    """
    report: dict[str, Any] = {}
    for path in (db_path, db_path.with_name(db_path.name + "-wal")):
        if not path.exists():
            report[path.name] = "absent"
            continue
        before = resident_fraction(path)
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)
        after = resident_fraction(path)
        report[path.name] = {"resident_before": before, "resident_after": after}
    return report


def eviction_worked(report: dict[str, Any]) -> bool:
    """True when every present file ended with (almost) no page resident."""
    fractions = [v["resident_after"] for v in report.values() if isinstance(v, dict)]
    return bool(fractions) and all(f is not None and f < 0.01 for f in fractions)


def checkpoint_and_measure(db_path: Path) -> dict[str, Any]:
    """Checkpoint (TRUNCATE) through a separate stdlib connection, then the sizes and the freelist."""
    conn = sqlite3.connect(db_path, isolation_level=None)
    try:
        busy, log_frames, done_frames = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        page_size = conn.execute("PRAGMA page_size").fetchone()[0]
        page_count = conn.execute("PRAGMA page_count").fetchone()[0]
        freelist = conn.execute("PRAGMA freelist_count").fetchone()[0]
    finally:
        conn.close()
    wal = db_path.with_name(db_path.name + "-wal")
    db_bytes = db_path.stat().st_size
    wal_bytes = wal.stat().st_size if wal.exists() else 0
    return {
        "checkpoint_busy": busy,
        "checkpoint_frames": [log_frames, done_frames],
        "db_bytes": db_bytes,
        "wal_bytes": wal_bytes,
        "total_bytes": db_bytes + wal_bytes,
        "page_size": page_size,
        "page_count": page_count,
        "freelist_pages": freelist,
        "freelist_bytes": freelist * page_size,
    }


def space_by_table(db_path: Path) -> dict[str, int]:
    """Bytes per table and index (``dbstat``), largest first; empty if dbstat is not compiled in."""
    conn = sqlite3.connect(db_path, isolation_level=None)
    try:
        rows = conn.execute("SELECT name, sum(pgsize) FROM dbstat GROUP BY name ORDER BY 2 DESC").fetchall()
    except sqlite3.OperationalError:
        rows = []
    finally:
        conn.close()
    return {name: int(size) for name, size in rows}


def read_ahead_kb(path: Path) -> int | None:
    """The read-ahead of the block device holding ``path`` (it decides what a cold page fault reads)."""
    dev = os.stat(path).st_dev
    base = Path(f"/sys/dev/block/{os.major(dev)}:{os.minor(dev)}")
    for candidate in (base / "queue" / "read_ahead_kb", base.parent / "queue" / "read_ahead_kb"):
        try:
            return int(candidate.read_text().strip())
        except (OSError, ValueError):
            continue
    return None
