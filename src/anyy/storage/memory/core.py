"""What every part of the in-memory store shares: the records, lookups, trees and paths."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable

from anyy.domain import entry_ids
from anyy.domain.errors import NotFound
from anyy.storage import rules
from anyy.storage.memory.data import EntryRecord, MemoryData, SessionRecord


class MemoryCore:
    def __init__(
        self,
        data: MemoryData | None = None,
        *,
        profile: str = "default",
        clock: Callable[[], float] = time.time,
        body_threshold: int = rules.BODY_THRESHOLD,
    ) -> None:
        self.data = data if data is not None else MemoryData()
        self.profile = profile
        self.clock = clock
        self.body_threshold = body_threshold
        self._closed = False
        self._words: dict[int, list[str]] = {}  # the words of each message searched so far

    def close(self) -> None:
        self._closed = True

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("the store is closed")

    # -- lookups -----------------------------------------------------------------------------------
    def _record(self, session_id: str) -> SessionRecord:
        self._check_open()
        record = self.data.sessions.get(session_id) if isinstance(session_id, str) else None
        if record is None or not record.active:
            raise rules.missing_session(self.profile, session_id)
        return record

    def _session_of_num(self, num: int) -> SessionRecord | None:
        session_id = self.data.nums.get(num)
        return None if session_id is None else self.data.sessions.get(session_id)

    def _entry(self, entry_id: int) -> EntryRecord:
        found = self.data.entries.get(entry_id)
        if found is None:
            raise NotFound(f"entry {entry_id} does not exist in profile {self.profile!r}")
        return found

    # -- paths and trees ---------------------------------------------------------------------------
    def _path_ids(self, leaf: int | None) -> list[int]:
        """Ids from the root to ``leaf``."""
        ids: list[int] = []
        current = leaf
        while current is not None:
            ids.append(current)
            current = self._entry(current).entry.parent
        ids.reverse()
        return ids

    def _tree_ids(self, record: SessionRecord) -> set[int]:
        """Every entry of a session's tree: its own, and every ancestor of them, of its fork point and of
        its head (history it reaches without having appended it)."""
        tree: set[int] = set()
        starts: Iterable[int | None] = [*record.own, record.fork_point, record.session.head]
        for start in starts:
            current = start
            while current is not None and current not in tree:
                found = self.data.entries.get(current)
                if found is None:
                    break
                tree.add(current)
                current = found.entry.parent
        return tree

    def _in_tree(self, record: SessionRecord, entry_id: object) -> bool:
        if not isinstance(entry_id, int) or entry_id not in self.data.entries:
            return False
        if entry_ids.owner_number(entry_id) == record.num:
            return True
        return entry_id in self._tree_ids(record)

    def _live_holder(self, entry_id: int) -> SessionRecord | None:
        """A live session whose tree holds the entry: its author, else any other that reaches it."""
        author = self._session_of_num(entry_ids.owner_number(entry_id))
        if author is not None and author.active:
            return author
        for record in self.data.sessions.values():
            if record.active and entry_id in self._tree_ids(record):
                return record
        return None
