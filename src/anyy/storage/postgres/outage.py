"""A store connection that breaks (P7): which errors mean the server cannot be reached, and what became of
a transaction whose commit the break cut off.

A transaction asks the server for its id just before it commits (one round trip more per write); when the
connection is lost during the commit, the id is looked up on a new connection with ``txid_status``, after
the old backend was ended if it still held the transaction: committed, the write stands and the caller
goes on as if nothing happened; aborted, nothing of it was written and the unit of work may run again;
unknowable (no server answers), the caller is told so with :class:`StoreUnavailable` (``applied=None``).
"""

from __future__ import annotations

import contextlib
import time
from typing import Any

import psycopg

from anyy.domain.errors import StoreUnavailable
from anyy.storage.store_urls import redact

RECONNECT_TIMEOUT = 5  # seconds a new connection may take once one broke (a request waits on it)
STATUS_WAIT = 5.0  # seconds to wait for the old backend to let go of a transaction it holds
# SQLSTATEs that mean the connection, not the request, failed: class 08 (connection exception), the
# server shutting down or crashing, or not accepting connections yet (starting up, recovering).
_OUTAGE_STATES = ("57P01", "57P02", "57P03")


class Outages:
    """What a PostgreSQL store keeps to tell a lost connection from a failed request."""

    def __init__(self, url: str) -> None:
        self.where = redact(url)
        self.commits = 0  # transactions committed on this store: a unit that committed one is not run again
        self.connect_timeout = RECONNECT_TIMEOUT
        self.backend_pid: int | None = None
        self.previous_pid: int | None = None  # the backend of the connection that broke

    def connected(self, conn: psycopg.Connection[Any]) -> None:
        self.previous_pid, self.backend_pid = self.backend_pid, conn.info.backend_pid

    def lost(self, exc: BaseException, conn: psycopg.Connection[Any]) -> bool:
        """Whether ``exc`` says the server cannot be reached (not that it refused the request: a lock
        timeout or a cancelled statement are errors of the request, on a connection that still works)."""
        if not isinstance(exc, psycopg.Error):
            return False
        state = exc.sqlstate or ""
        if state.startswith("08") or state in _OUTAGE_STATES:
            return True
        return isinstance(exc, psycopg.OperationalError | psycopg.InterfaceError) and (conn.closed or conn.broken)

    def unavailable(self, detail: str, *, applied: bool | None = False) -> StoreUnavailable:
        detail = detail.strip().splitlines()[-1] if detail.strip() else "the connection was lost"
        if applied is None:
            return StoreUnavailable(
                f"the session store ({self.where}) could not be reached ({detail}) while a write was being "
                "committed, and whether it was kept could not be checked: send the request again with the same "
                "idempotency key (a send finds what the first one made), or look before repeating it",
                applied=None,
            )
        return StoreUnavailable(
            f"the session store ({self.where}) cannot be reached now ({detail}): nothing of this request was "
            "written; send it again in a moment",
        )

    def xid(self, conn: psycopg.Connection[Any]) -> int:
        """Inside a transaction about to commit: its id (assigned now if it wrote nothing)."""
        row = conn.execute("SELECT txid_current()").fetchone()
        assert row is not None
        return int(row[0])

    def status(self, conn: psycopg.Connection[Any], xid: int) -> bool | None:
        """On a new connection: whether transaction ``xid`` committed (None: still unknown after waiting)."""
        deadline = time.monotonic() + STATUS_WAIT
        ended = False
        while True:
            try:
                row = conn.execute("SELECT txid_status(%s)", (xid,)).fetchone()
            except psycopg.Error:
                return None
            status = None if row is None else row[0]
            if status == "committed":
                return True
            if status == "aborted":
                return False
            if status != "in progress" or time.monotonic() > deadline:
                return None
            if not ended and self.previous_pid is not None:
                # The old backend has not noticed its client is gone: end it, its transaction with it.
                ended = True
                with contextlib.suppress(psycopg.Error):
                    conn.execute("SELECT pg_terminate_backend(%s)", (self.previous_pid,))
            time.sleep(0.05)
