"""What every part of the SQLite store shares: the owned connection, transactions, ids and lookups."""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from anyy.domain import entry_ids
from anyy.domain.durability import Durability
from anyy.domain.errors import NotFound, StorageFull, StoreUnavailable
from anyy.storage import rules
from anyy.storage.objects import ObjectFiles
from anyy.storage.rows import HEAD_SQL
from anyy.storage.sqlite import migrate

BUSY_TIMEOUT_MS = 10_000
# About what SQLite's automatic checkpoints (every 1,000 pages) let the WAL grow to; upkeep truncates a
# larger one (see ``UpkeepPart._shrink_wal``).
WAL_KEEP_BYTES = 4 * 1024 * 1024
# The profile setting ``[store] durability`` (D10; see anyy.domain.durability).
SYNCHRONOUS: dict[Durability, str] = {"process": "NORMAL", "power": "FULL"}

PRAGMAS = (
    # Takes effect when the file is created (no effect on an existing one): lets upkeep hand the pages
    # of reclaimed sessions back to the file system, a bounded step at a time.
    "PRAGMA auto_vacuum = INCREMENTAL",
    "PRAGMA journal_mode = WAL",
    "PRAGMA foreign_keys = ON",
    f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}",
    # A checkpoint that empties the WAL also cuts the file back to this size (D9): after a burst, or a
    # full disk that stalled checkpoints, the WAL does not keep its largest size until a restart.
    f"PRAGMA journal_size_limit = {WAL_KEEP_BYTES}",
    "PRAGMA cache_size = -32000",
    "PRAGMA mmap_size = 1073741824",
)

# A session's updated_at (its place in "most recent first") moves on at most once a second while it
# appends, so that a burst of appends does not rewrite the session row and its indexes each time.
ACTIVITY_RESOLUTION = 1.0


def connect(path: Path, *, durability: Durability = "process") -> sqlite3.Connection:
    """A connection with the project's pragmas, in autocommit mode (transactions are explicit)."""
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=True)
    for pragma in PRAGMAS:
        conn.execute(pragma)
    conn.execute(f"PRAGMA synchronous = {SYNCHRONOUS[durability]}")
    return conn


@dataclasses.dataclass(slots=True)
class AppendState:
    """What an append needs to know of a session, kept between appends (see ``StoreCore._append_state``)."""

    kind: str
    stored_head: int | None  # the head column (NULL: the last entry appended)
    updated_at: float
    last_id: int | None  # the last entry this session appended, and the run it is in
    run: int | None


class StoreCore:
    """State and helpers of :class:`SqliteStore`, shared by its parts (sessions, queue, upkeep)."""

    def __init__(
        self,
        path: Path,
        *,
        objects_dir: Path | None = None,
        profile: str = "default",
        clock: Callable[[], float] = time.time,
        body_threshold: int = rules.BODY_THRESHOLD,
        durability: Durability = "process",
    ) -> None:
        self.db_path = Path(path)
        self.durability = durability
        self.profile = profile
        self.clock = clock
        self.body_threshold = body_threshold
        self.objects = ObjectFiles(objects_dir if objects_dir is not None else self.db_path.parent / "objects")
        self.owner_thread = threading.get_ident()
        self.conn = connect(self.db_path, durability=durability)
        self.applied_migrations = migrate.apply(self.conn)
        self._nums: dict[str, int] = {}
        # Sessions that may have messages not yet in the search index; None: not looked up yet.
        self._unindexed: set[int] | None = None
        self._last_sweep = float("-inf")  # when upkeep last looked for unused uploads
        self._index_has_deletes = False  # reclaimed messages left delete markers in the search index
        self._index_merge_starting = True
        # Append state per session and the most recent session of each kind, valid while no other
        # connection has committed (PRAGMA data_version) and this one wrote nothing else (tx()).
        self._append_states: dict[int, AppendState] = {}
        self._top_of_kind: dict[str, int] = {}
        self._seen_version: int | None = None

    def close(self) -> None:
        self.conn.close()

    @contextlib.contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        """One write transaction, taken at once (IMMEDIATE) so it never fails half-way on a lock."""
        conn = self.conn
        try:
            conn.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as exc:  # locked by another program for longer than busy_timeout
            raise self._translate(exc) from exc
        self._forget_append_states()
        try:
            yield conn
            conn.execute("COMMIT")
        except BaseException as exc:
            self._rollback()
            raise self._translate(exc) from exc

    def _rollback(self) -> None:
        self._forget_append_states()
        if self.conn.in_transaction:
            self.conn.execute("ROLLBACK")

    def _forget_append_states(self) -> None:
        self._append_states.clear()
        self._top_of_kind.clear()

    def _append_state(self, session_id: str, num: int) -> AppendState:
        """Inside a write transaction: the session's append state, from memory when nothing changed it
        since this connection last wrote, else from one statement (the session row, its last entry one
        step down the primary key, and the most recent session of its kind one step down that index)."""
        conn = self.conn
        (version,) = conn.execute("PRAGMA data_version").fetchone()
        if version != self._seen_version:
            self._forget_append_states()
            self._seen_version = version
        state = self._append_states.get(num)
        if state is not None:
            return state
        lo, hi = entry_ids.session_range(num)
        row = conn.execute(
            "SELECT s.kind, s.head, s.updated_at, e.id, e.run, (SELECT o.num FROM sessions o WHERE o.status = 'active' "
            "AND o.kind = s.kind ORDER BY o.updated_at DESC, o.num DESC LIMIT 1) FROM sessions s LEFT JOIN entries e "
            "ON e.id = (SELECT max(id) FROM entries WHERE id BETWEEN ? AND ?) WHERE s.num = ? AND s.status = 'active'",
            (lo, hi, num),
        ).fetchone()
        if row is None:
            self._nums.pop(session_id, None)
            raise self._missing_session(session_id)
        kind, stored_head, updated_at, last_id, run, most_recent = row
        state = AppendState(kind, stored_head, updated_at, last_id, run)
        self._append_states[num] = state
        self._top_of_kind[kind] = most_recent
        return state

    def _translate(self, exc: BaseException) -> BaseException:
        """A full disk or invalid text becomes an error a person can act on; anything else passes as it is."""
        if isinstance(exc, UnicodeEncodeError):
            return rules.invalid_text(exc)
        full = (isinstance(exc, sqlite3.OperationalError) and "full" in str(exc)) or (
            isinstance(exc, OSError) and exc.errno == errno.ENOSPC
        )
        if isinstance(exc, sqlite3.OperationalError) and "locked" in str(exc):
            # Another program holds the database's write lock (a backup tool, a second process): P7's
            # retryable refusal, as for a PostgreSQL server that does not answer.
            return StoreUnavailable(
                f"the database of profile {self.profile!r} ({self.db_path}) is locked by another program ({exc}): "
                "nothing of this request was written; send it again in a moment"
            )
        if not full:
            return exc
        return StorageFull(
            f"no space left for profile {self.profile!r} ({self.db_path.parent}): nothing of this request was "
            "written. Free some disk space, then try again."
        )

    def _one(self, sql: str, params: tuple[Any, ...] = ()) -> tuple[Any, ...] | None:
        row: tuple[Any, ...] | None = self.conn.execute(sql, params).fetchone()
        return row

    # -- lookups that raise the errors people read ------------------------------------------------
    def _missing_session(self, session_id: str) -> NotFound:
        return rules.missing_session(self.profile, session_id)

    def _session_num(self, session_id: str) -> int:
        """The number of an active session, or NotFound naming the profile (X1)."""
        num = self._nums.get(session_id)
        row = self._one(
            "SELECT num FROM sessions WHERE num = ? AND status = 'active'"
            if num is not None
            else "SELECT num FROM sessions WHERE id = ? AND status = 'active'",
            (num if num is not None else session_id,),
        )
        if row is None:
            self._nums.pop(session_id, None)
            raise self._missing_session(session_id)
        self._nums[session_id] = row[0]
        return int(row[0])

    def _head_of(self, num: int) -> int | None:
        """The resolved head of a session (see ``HEAD_SQL``)."""
        row = self._one(f"SELECT {HEAD_SQL} FROM sessions WHERE num = ?", (num,))
        return None if row is None else row[0]

    def _last_entry(self, num: int) -> tuple[int, int] | None:
        """``(id, run)`` of the last entry a session appended."""
        lo, hi = entry_ids.session_range(num)
        row = self._one("SELECT id, run FROM entries WHERE id BETWEEN ? AND ? ORDER BY id DESC LIMIT 1", (lo, hi))
        return None if row is None else (row[0], row[1])

    def _object_text(self, obj: str) -> str:
        """The text of a body that was stored in objects/."""
        return self.objects.get(obj).decode("utf-8")

    def _entry_exists(self, entry_id: int) -> bool:
        return self._one("SELECT 1 FROM entries WHERE id = ?", (entry_id,)) is not None

    def _missing_entry(self, session_id: str, entry_id: int) -> NotFound:
        return rules.missing_entry(self.profile, session_id, entry_id)

    # -- the path: runs from the root to an entry ------------------------------------------------
    def _path_runs(self, leaf: int | None) -> list[tuple[int, int]]:
        """The path root → ``leaf`` as contiguous id intervals, one query per run (not per entry)."""
        runs: list[tuple[int, int]] = []
        current = leaf
        conn = self.conn
        while current is not None:
            row = conn.execute(
                "SELECT e.run, s.parent FROM entries e JOIN entries s ON s.id = e.run WHERE e.id = ?",
                (current,),
            ).fetchone()
            if row is None:
                raise NotFound(f"entry {current} does not exist in profile {self.profile!r}")
            run_start, parent = row
            runs.append((run_start, current))
            current = parent
        runs.reverse()
        return runs

    def _tree_roots(self, num: int, head: int | None) -> list[int]:
        """Entries outside the session's own range that its tree hangs from (fork points, its head)."""
        lo, hi = entry_ids.session_range(num)
        roots = [
            row[0] for row in self.conn.execute("SELECT parent FROM cross_links WHERE child BETWEEN ? AND ?", (lo, hi))
        ]
        fork = self._one("SELECT fork_point FROM sessions WHERE num = ?", (num,))
        if fork is not None and fork[0] is not None:
            roots.append(fork[0])  # the path it was forked with stays its own, wherever its head goes
        if head is not None and not lo <= head <= hi:
            roots.append(head)
        return roots

    def _tree_intervals(self, num: int, head: int | None) -> list[tuple[int, int]]:
        """Id intervals covering the session's tree: its own range and the paths it hangs from."""
        intervals = [entry_ids.session_range(num)]
        for root in self._tree_roots(num, head):
            intervals += self._path_runs(root)
        return intervals

    def _live_holder(self, entry_id: int) -> int | None:
        """A live session whose tree holds the entry: its author, or, when the author was deleted,
        a session downstream of it (a fork, a fork of a fork) that still reaches it."""
        owner = entry_ids.owner_number(entry_id)
        queue, seen = [owner], {owner}
        while queue:
            num = queue.pop()
            status = self._one("SELECT status FROM sessions WHERE num = ?", (num,))
            if status is None:
                continue
            if status[0] == "active":
                if self._in_tree(num, self._head_of(num), entry_id):
                    return num
                continue
            lo, hi = entry_ids.session_range(num)
            downstream = [
                row[0]
                for row in self.conn.execute(
                    "SELECT num FROM sessions WHERE head BETWEEN ? AND ? AND status = 'active'", (lo, hi)
                )
            ]
            downstream += [
                entry_ids.owner_number(row[0])
                for row in self.conn.execute(
                    "SELECT child FROM cross_links WHERE parent BETWEEN ? AND ? AND child NOT BETWEEN ? AND ?",
                    (lo, hi, lo, hi),
                )
            ]
            for other in downstream:
                if other not in seen:
                    seen.add(other)
                    queue.append(other)
        return None

    def _in_tree(self, num: int, head: int | None, entry_id: int) -> bool:
        """Whether an entry belongs to this session's tree (its own entries, or their ancestors)."""
        lo, hi = entry_ids.session_range(num)
        if lo <= entry_id <= hi:
            return self._entry_exists(entry_id)
        for root in self._tree_roots(num, head):
            for run_lo, run_hi in self._path_runs(root):
                if run_lo <= entry_id <= run_hi:
                    return True
        return False
