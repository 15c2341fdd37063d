"""What every part of the PostgreSQL store shares: the connection, transactions, lookups and tree walks.

The model is the SQLite store's (see its first migration): entry ids carry their session's number, a
linear run is one id interval, the head is stored. Walks up the tree (a path's runs) are one recursive
query each, so a path costs one round trip to the server whatever its number of runs.
"""

from __future__ import annotations

import contextlib
import hashlib
import re
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple, TypeVar

import psycopg
from psycopg import errors as pg_errors

from anyy.domain import entry_ids
from anyy.domain.durability import Durability
from anyy.domain.errors import InvalidInput, NotFound, StorageFull, StoreUnavailable
from anyy.storage import rules
from anyy.storage.ownership import Hint, HintKind, LeaseLost, OwnedElsewhere
from anyy.storage.postgres import migrate
from anyy.storage.postgres.outage import Outages
from anyy.storage.postgres.settings import DEFAULT_SETTING, connect
from anyy.storage.rows import HEAD_SQL
from anyy.storage.store_urls import StoreSettingError, redact

ACTIVITY_RESOLUTION = 1.0
LOST_EPOCH = -1  # in PgCore.leases: a lease this Gateway held and lost (its writes stay refused)

# The runs of the path root → an entry, leaf first: (run start, last entry of the run on the path, the
# run start's parent). One query, however many runs.
PATH_RUNS_SQL = (
    "WITH RECURSIVE walk(run, upto, parent) AS ("
    " SELECT e.run, e.id, s.parent FROM entries e JOIN entries s ON s.id = e.run WHERE e.id = %s"
    " UNION ALL"
    " SELECT e.run, e.id, s.parent FROM walk w JOIN entries e ON e.id = w.parent JOIN entries s ON s.id = e.run"
    ") SELECT run, upto, parent FROM walk"
)
_HASH = re.compile(r"^[0-9a-f]{64}$")
T = TypeVar("T")


class Member(NamedTuple):
    """This Gateway, as one of the service's."""

    id: str
    lease: float  # seconds
    recovery_note: str


def hash_of(data: bytes) -> str:
    """Objects are named by the SHA-256 of their bytes, as in the SQLite store."""
    return hashlib.sha256(data).hexdigest()


def check_hash(object_hash: str) -> str:
    if not isinstance(object_hash, str) or not _HASH.match(object_hash):
        raise InvalidInput(f"{object_hash!r} is not an object hash (64 lower-case hex characters)")
    return object_hash


class PgCore:
    """State and helpers of :class:`PostgresStore`, shared by its parts (sessions, queue, upkeep)."""

    def __init__(
        self,
        url: str,
        *,
        profile: str = "default",
        schema: str | None = None,
        setting: str = DEFAULT_SETTING,
        clock: Callable[[], float] = time.time,
        body_threshold: int = rules.BODY_THRESHOLD,
        durability: Durability = "process",
    ) -> None:
        self.url = url
        self.durability = durability
        self.schema = schema
        self.profile = profile
        self.clock = clock
        self.body_threshold = body_threshold
        self.owner_thread = threading.get_ident()
        self._setting = setting
        self.member: Member | None = None  # set once a Gateway joined the service (see the leases part)
        self.conn = connect(url, setting=setting, schema=schema)
        self.outages = Outages(url)
        self.outages.connected(self.conn)
        try:
            self._configure()
            if schema is not None:
                self.conn.execute(f'CREATE SCHEMA IF NOT EXISTS "{schema}"')
            self.applied_migrations = migrate.apply(self.conn, where=redact(url))
        except BaseException:
            self.conn.close()
            raise
        self._nums: dict[str, int] = {}
        self._depth = 0  # transactions open (nested ones are savepoints)
        self._last_sweep = float("-inf")
        # The leases this Gateway holds, once it joined the service (see the leases part).
        self.leases: dict[int, tuple[str, int]] = {}  # session num -> (session id, epoch)

    def _configure(self) -> None:
        # Every query of the store reads a few rows through an index: starting parallel workers costs
        # more than it saves (tens of milliseconds on a busy machine, e.g. for a rare word's search).
        self.conn.execute("SET max_parallel_workers_per_gather = 0")
        if self.durability == "power":
            # D10: a commit is acknowledged once the server flushed it to its disk, whatever the server's
            # default; "process" leaves the server's setting (any commit survives the Gateway's crash).
            self.conn.execute("SET synchronous_commit = on")
        if self.member is not None:
            timeout_ms = max(int(self.member.lease * 1000), 100)
            self.conn.execute(f"SET idle_in_transaction_session_timeout = {timeout_ms}")

    def _reconnect_if_lost(self) -> None:
        """A connection the server ended (a database restart, a proxy's idle timeout, a Gateway frozen
        inside a transaction that outlived idle_in_transaction_session_timeout) is replaced before the next
        call; if no server answers, the call is refused with :class:`StoreUnavailable` (P7)."""
        if not (self.conn.closed or self.conn.broken):
            return
        with contextlib.suppress(Exception):
            self.conn.close()
        try:
            conn = connect(self.url, setting=self._setting, schema=self.schema, timeout=self.outages.connect_timeout)
        except StoreSettingError:
            raise self.outages.unavailable("no server answers") from None
        self.conn = conn
        self.outages.connected(conn)
        try:
            self._configure()
        except psycopg.Error as exc:
            raise self.outages.unavailable(str(exc)) from None

    def close(self) -> None:
        self.conn.close()

    def run_unit(self, fn: Callable[[Any], T]) -> T:
        """One unit of work handed to the store's thread (``anyy.storage.owner``): a unit the connection's
        loss cut short before anything of it was committed is run once more on a new connection; any other
        loss is :class:`StoreUnavailable`, never a driver's error (P7)."""
        before = self.outages.commits
        try:
            self._reconnect_if_lost()
            return fn(self)
        except Exception as exc:
            outage = self._outage(exc)
            if outage is None:
                raise
            if outage.applied is not False or self.outages.commits != before:
                raise outage from None
        try:
            self._reconnect_if_lost()
            return fn(self)
        except Exception as exc:
            outage = self._outage(exc)
            if outage is None:
                raise
            raise outage from None

    def _outage(self, exc: BaseException) -> StoreUnavailable | None:
        """``exc`` as the store's unavailability, or None when it is something else."""
        if isinstance(exc, StoreUnavailable):
            return exc
        if self.outages.lost(exc, self.conn):
            return self.outages.unavailable(str(exc).strip() or type(exc).__name__)
        return None

    @contextlib.contextmanager
    def _tx(self) -> Iterator[psycopg.Connection[Any]]:
        """One transaction; whatever it raises is translated for people (a full disk, invalid text). A
        connection lost while it commits is checked on a new one: committed, the transaction stands (the
        caller goes on); aborted, nothing of it was written; unknown, :class:`StoreUnavailable` says so."""
        if self._depth:  # a savepoint inside the caller's transaction: the outer one decides
            self._depth += 1
            try:
                with self.conn.transaction():
                    yield self.conn
            finally:
                self._depth -= 1
            return
        self._reconnect_if_lost()
        self._depth = 1
        xid: int | None = None
        try:
            with self.conn.transaction():
                yield self.conn
                xid = self.outages.xid(self.conn)
        except BaseException as exc:
            if not self.outages.lost(exc, self.conn):
                raise self._translate(exc) from exc
            applied = False if xid is None else self._committed(xid)
            if applied is not True:
                raise self.outages.unavailable(str(exc).strip() or type(exc).__name__, applied=applied) from None
        finally:
            self._depth = 0
        self.outages.commits += 1

    def _committed(self, xid: int) -> bool | None:
        """Whether the transaction ``xid``, whose commit the lost connection cut off, was committed: read on a
        new connection once the old one's backend is gone; None when no server answers."""
        try:
            self._reconnect_if_lost()
        except StoreUnavailable:
            return None
        return self.outages.status(self.conn, xid)

    def _translate(self, exc: BaseException) -> BaseException:
        if isinstance(exc, pg_errors.DiskFull | pg_errors.ProgramLimitExceeded):
            return StorageFull(
                f"the database is full for profile {self.profile!r} ({redact(self.url)}): nothing of this "
                f"request was written ({exc}). Free some space on the server, then try again."
            )
        if isinstance(exc, UnicodeEncodeError):
            return rules.invalid_text(exc)
        if isinstance(exc, pg_errors.UntranslatableCharacter | pg_errors.CharacterNotInRepertoire):
            return InvalidInput(f"the text cannot be stored ({exc}); nothing was written")
        if isinstance(exc, psycopg.DataError) and "0x00" in str(exc):
            return InvalidInput("a name or setting holds a NUL character, which cannot be stored; nothing was written")
        return exc

    def _one(self, sql: str, params: tuple[Any, ...] = ()) -> tuple[Any, ...] | None:
        row: tuple[Any, ...] | None = self._read(sql, params).fetchone()
        return row

    def _all(self, sql: str, params: tuple[Any, ...] | list[Any] = ()) -> list[tuple[Any, ...]]:
        return self._read(sql, params).fetchall()

    def _read(self, sql: str, params: Any) -> psycopg.Cursor[Any]:
        """A statement; a read outside a transaction whose connection broke is read again on a new one
        (the read that follows a write's commit, above all: the write stands, its caller must hear so)."""
        try:
            return self.conn.execute(sql, params)
        except psycopg.Error as exc:
            if self._depth or not self.outages.lost(exc, self.conn) or not sql.lstrip()[:6].upper() == "SELECT":
                raise
        self._reconnect_if_lost()
        return self.conn.execute(sql, params)

    # -- lookups that raise the errors people read ------------------------------------------------
    def _missing_session(self, session_id: str) -> NotFound:
        return rules.missing_session(self.profile, session_id)

    def _session_num(self, session_id: str, *, lock: bool = False) -> int:
        """The number of an active session, or NotFound naming the profile (X1). ``lock``: inside a
        transaction, hold the session row until it ends (writers of one session take turns)."""
        num = self._nums.get(session_id)
        suffix = " FOR UPDATE" if lock else ""
        row = self._one(
            ("SELECT num FROM sessions WHERE num = %s AND status = 'active'" + suffix)
            if num is not None
            else ("SELECT num FROM sessions WHERE id = %s AND status = 'active'" + suffix),
            (num if num is not None else session_id,),
        )
        if row is None:
            self._nums.pop(session_id, None)
            raise self._missing_session(session_id)
        self._nums[session_id] = row[0]
        return int(row[0])

    # -- fencing (several Gateways; see the leases part) -------------------------------------------
    def _fence(self, num: int, session_id: str) -> None:
        """Inside a write's transaction: go on only if this Gateway may write the session now. The lease
        it holds must still be its own at the same epoch; without one, no live Gateway may hold it. The
        entries written get the session's epoch; other Gateways get a hint to re-read."""
        member = self.member
        if member is None:
            return
        row = self._one(
            "SELECT owner, epoch, coalesce(lease_until > clock_timestamp(), false) FROM sessions WHERE num = %s "
            "FOR UPDATE",
            (num,),
        )
        if row is None:
            raise self._missing_session(session_id)
        owner, epoch, live = row
        held = self.leases.get(num)
        # The epoch is the fencing token: a lease that ran out but was not taken over (a late heartbeat on a
        # busy machine) still holds; any claim since bumped the epoch.
        if held is not None and not (owner == member.id and epoch == held[1]):
            # Marked lost (not forgotten): every later write of this work is refused too, until a new claim.
            self.leases[num] = (session_id, LOST_EPOCH)
            raise LeaseLost(
                f"session {session_id} was taken over by another Gateway (epoch {epoch}, this one held "
                f"{held[1]}): its lease here is lost, and nothing of this write was kept"
            )
        if held is None and owner is not None and owner != member.id and live:
            raise OwnedElsewhere(
                f"session {session_id} is run by another Gateway ({owner}) right now: retry once it is idle, "
                "or send this through that Gateway"
            )
        self.conn.execute(
            "SELECT set_config('anyy.epoch', %s, true), pg_notify('anyy', %s)",
            (str(epoch), Hint(kind="change", session_id=session_id, sender=member.id).encode()),
        )

    def _notify(self, session_id: str, kind: HintKind) -> None:
        """Inside a transaction: a hint other Gateways get once it commits (PostgreSQL merges repeats)."""
        if self.member is not None:
            hint = Hint(kind=kind, session_id=session_id, sender=self.member.id)
            self.conn.execute("SELECT pg_notify('anyy', %s)", (hint.encode(),))

    def _head_of(self, num: int) -> int | None:
        row = self._one(f"SELECT {HEAD_SQL} FROM sessions WHERE num = %s", (num,))
        return None if row is None else row[0]

    def _object_bytes(self, object_hash: str) -> bytes:
        row = self._one("SELECT body FROM objects WHERE hash = %s", (object_hash,))
        if row is None:
            raise NotFound(f"object {object_hash} is not in the store of profile {self.profile!r}")
        return bytes(row[0])

    def _object_text(self, obj: str) -> str:
        """The text of a body that was stored as an object."""
        return self._object_bytes(obj).decode("utf-8")

    def _entry_exists(self, entry_id: int) -> bool:
        return self._one("SELECT 1 FROM entries WHERE id = %s", (entry_id,)) is not None

    def _missing_entry(self, session_id: str, entry_id: int) -> NotFound:
        return rules.missing_entry(self.profile, session_id, entry_id)

    # -- the path: runs from the root to an entry ------------------------------------------------
    def _path_runs(self, leaf: int | None) -> list[tuple[int, int]]:
        """The path root → ``leaf`` as contiguous id intervals (one recursive query)."""
        if leaf is None:
            return []
        rows = self._all(PATH_RUNS_SQL, (leaf,))
        if not rows:
            raise NotFound(f"entry {leaf} does not exist in profile {self.profile!r}")
        if rows[-1][2] is not None:
            raise NotFound(f"entry {rows[-1][2]} does not exist in profile {self.profile!r}")
        return [(run, upto) for run, upto, _parent in reversed(rows)]

    def _tree_roots(self, num: int, head: int | None) -> list[int]:
        """Entries outside the session's own range that its tree hangs from (fork points, its head)."""
        lo, hi = entry_ids.session_range(num)
        roots = [row[0] for row in self._all("SELECT parent FROM cross_links WHERE child BETWEEN %s AND %s", (lo, hi))]
        fork = self._one("SELECT fork_point FROM sessions WHERE num = %s", (num,))
        if fork is not None and fork[0] is not None:
            roots.append(fork[0])
        if head is not None and not lo <= head <= hi:
            roots.append(head)
        return roots

    def _tree_intervals(self, num: int, head: int | None) -> list[tuple[int, int]]:
        intervals = [entry_ids.session_range(num)]
        for root in self._tree_roots(num, head):
            intervals += self._path_runs(root)
        return intervals

    def _live_holder(self, entry_id: int) -> int | None:
        """A live session whose tree holds the entry: its author, or one downstream of a deleted author."""
        owner = entry_ids.owner_number(entry_id)
        queue, seen = [owner], {owner}
        while queue:
            num = queue.pop()
            status = self._one("SELECT status FROM sessions WHERE num = %s", (num,))
            if status is None:
                continue
            if status[0] == "active":
                if self._in_tree(num, self._head_of(num), entry_id):
                    return num
                continue
            lo, hi = entry_ids.session_range(num)
            downstream = [
                row[0]
                for row in self._all(
                    "SELECT num FROM sessions WHERE head BETWEEN %s AND %s AND status = 'active'", (lo, hi)
                )
            ]
            downstream += [
                entry_ids.owner_number(row[0])
                for row in self._all(
                    "SELECT child FROM cross_links WHERE parent BETWEEN %s AND %s AND child NOT BETWEEN %s AND %s",
                    (lo, hi, lo, hi),
                )
            ]
            for other in downstream:
                if other not in seen:
                    seen.add(other)
                    queue.append(other)
        return None

    def _in_tree(self, num: int, head: int | None, entry_id: int) -> bool:
        lo, hi = entry_ids.session_range(num)
        if lo <= entry_id <= hi:
            return self._entry_exists(entry_id)
        for root in self._tree_roots(num, head):
            for run_lo, run_hi in self._path_runs(root):
                if run_lo <= entry_id <= run_hi:
                    return True
        return False
