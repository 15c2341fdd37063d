"""The stores a run measures: their directories, opening one, setup helpers, and which code is measured."""

from __future__ import annotations

import shutil
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from anyy.domain.entries import NewEntry
from anyy.storage.sqlite import SqliteStore


class Workdir:
    """Fresh directories for the stores of one run, removed at the end unless kept."""

    def __init__(self, root: Path | None, keep: bool) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="anyy-bench-", dir=root))
        self.keep = keep
        self.counter = 0

    def fresh(self, name: str) -> Path:
        self.counter += 1
        path = self.root / f"{self.counter:02d}-{name}"
        path.mkdir()
        return path

    def remove(self, path: Path) -> None:
        if not self.keep:
            shutil.rmtree(path, ignore_errors=True)

    def close(self) -> None:
        if not self.keep:
            shutil.rmtree(self.root, ignore_errors=True)


def open_store(directory: Path) -> SqliteStore:
    return SqliteStore(directory / "state.db", objects_dir=directory / "objects", profile="bench")


def maintain_until_done(store: SqliteStore) -> tuple[float, int, int, int]:
    """(seconds, steps, indexed, collected) of ``maintain()`` with its default budget until ``more`` is False."""
    steps = indexed = collected = 0
    start = time.perf_counter()
    while True:
        step = store.maintain()
        steps += 1
        indexed += step.indexed
        collected += step.collected
        if not step.more:
            break
    return time.perf_counter() - start, steps, indexed, collected


def append_batched(store: SqliteStore, session_id: str, entries: Sequence[NewEntry], batch: int = 1_000) -> list[int]:
    """Setup only (not a measured figure): append in batches, return the ids."""
    ids: list[int] = []
    for start in range(0, len(entries), batch):
        ids.extend(e.id for e in store.append_entries(session_id, entries[start : start + batch]))
    return ids


def source_state() -> dict[str, str]:
    """Which code was measured: the commit, and a digest of the storage and domain sources as they are."""
    import hashlib
    import subprocess

    root = Path(__file__).resolve().parents[2]
    digest = hashlib.sha256()
    for path in sorted((root / "src" / "anyy").glob("**/*")):
        if path.is_file() and path.suffix in (".py", ".sql") and path.parts[-2] in ("domain", "sqlite", "migrations"):
            digest.update(path.read_bytes())
    try:
        commit = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(root), "status", "--porcelain", "--", "src"], capture_output=True, text=True, check=False
        ).stdout.strip()
    except OSError:
        commit, dirty = "?", ""
    return {"commit": commit, "src_modified": "yes" if dirty else "no", "src_digest": digest.hexdigest()[:12]}
