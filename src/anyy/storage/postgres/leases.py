"""Several Gateways on one database: who runs a session's work, and the relay between them (P3-P6).

Each Gateway process registers a row in ``gateways`` and renews it with its leases. A session's work runs
where its lease is: the session row holds ``owner``, ``epoch`` (incremented on every claim) and
``lease_until`` (the server's clock). Every write of that work is fenced on owner + epoch in its own
transaction (``PgCore._fence``): a Gateway that lost its lease writes nothing more. Sessions whose owner
died are found with ``FOR UPDATE SKIP LOCKED`` (several Gateways scan at once without waiting on each
other) and recovered as a restarted single Gateway would (G3), then left unowned: nothing restarts by
itself (S7). Hints between Gateways go by LISTEN/NOTIFY and carry only a session id; what changed is read
from the tables.
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import threading
import time
from collections.abc import Callable
from typing import Any

import psycopg

from anyy.domain.queue import Execution
from anyy.storage.ownership import (
    Claim,
    Control,
    ControlKind,
    GatewayInfo,
    Heartbeat,
    Hint,
    HintKind,
    ToolProcess,
)
from anyy.storage.postgres.core import LOST_EPOCH, Member
from anyy.storage.postgres.outage import RECONNECT_TIMEOUT
from anyy.storage.postgres.queue import QueuePart
from anyy.storage.postgres.settings import connect

CHANNEL = "anyy"
RELISTEN_DELAY = 0.5  # seconds between attempts to listen again once the hints' connection broke
PROBE_AFTER = 1.0  # seconds without a hint after which the hints' connection is checked (one round trip)
log = logging.getLogger(__name__)
DEAD_AFTER = 20  # leases after which a silent Gateway's row is removed, once it owns no session
ORPHAN_BATCH = 20  # sessions recovered per heartbeat: several Gateways share the rest
# Read through the partial indexes (the sessions someone owns, the executions running) rather than over
# every session: the check costs what the service is doing, not how many sessions it keeps (P9).
_ORPHANS = (
    "SELECT x.num, x.id FROM sessions x WHERE x.num IN ("
    " SELECT s.num FROM sessions s WHERE s.owner IS NOT NULL AND s.owner <> %(me)s"
    " AND s.lease_until < clock_timestamp()"
    " UNION SELECT e.session_num FROM executions e WHERE e.state IN ('running', 'retry_wait'))"
    " AND x.status = 'active' AND ("
    " (x.owner IS NOT NULL AND x.owner <> %(me)s AND x.lease_until < clock_timestamp())"
    " OR (x.owner IS NULL AND NOT x.wake AND EXISTS (SELECT 1 FROM executions e WHERE e.session_num = x.num"
    "  AND e.state IN ('running', 'retry_wait'))))"
    " ORDER BY x.lease_until NULLS FIRST LIMIT %(limit)s FOR UPDATE OF x SKIP LOCKED"
)
# Sessions with an item queued that no live Gateway started or acknowledged (its owner died first, or the
# Gateway that took it lost the store before it could start it), or with unattended work started that had
# not begun when its Gateway died (and an unowned running execution: a woken session's claim recovers it),
# free to claim now. On a session nobody
# holds, ``lease_until`` is the grace the Gateway that took the item has to claim it itself.
_WOKEN = (
    "SELECT num, id FROM sessions WHERE wake AND status = 'active' AND (owner IS NULL OR owner <> %(me)s)"
    " AND coalesce(lease_until < clock_timestamp(), true) LIMIT %(limit)s FOR UPDATE SKIP LOCKED"
)


class LeasesPart(QueuePart):
    leftovers: list[ToolProcess]
    _beat_ok: float  # time.monotonic() of the last heartbeat that reached the store
    _takeovers_after: float  # no dead owner's session is taken over before (time.monotonic())

    def join_service(self, gateway_id: str, *, lease: float, address: str, recovery_note: str) -> bool:
        self.leftovers = []
        self._beat_ok = time.monotonic()
        self._takeovers_after = 0.0
        self.member = Member(id=gateway_id, lease=lease, recovery_note=recovery_note)
        self._configure()  # idle_in_transaction_session_timeout: one lease
        with self._tx() as conn:
            conn.execute(
                "INSERT INTO gateways (id, address, pid, host, lease_seconds) VALUES (%s, %s, %s, %s, %s) "
                "ON CONFLICT (id) DO UPDATE SET address = excluded.address, last_seen = clock_timestamp()",
                (gateway_id, address, os.getpid(), socket.gethostname(), lease),
            )
        return True

    def set_gateway_address(self, address: str) -> None:
        if self.member is not None:
            self.conn.execute("UPDATE gateways SET address = %s WHERE id = %s", (address, self.member.id))

    def leave_service(self) -> None:
        member = self.member
        if member is None:
            return
        with self._tx() as conn:
            conn.execute("UPDATE sessions SET owner = NULL, lease_until = NULL WHERE owner = %s", (member.id,))
            conn.execute("DELETE FROM gateways WHERE id = %s", (member.id,))
        self.leases.clear()
        self.member = None

    # -- leases ----------------------------------------------------------------------------------
    def claim_session(self, session_id: str) -> Claim:
        member = self.member
        if member is None:
            return Claim(owned=True)
        with self._tx() as conn:
            # Waits for a writer of the row (never long: transactions are short, and a stopped Gateway's
            # is ended by idle_in_transaction_session_timeout), but no longer than a lease.
            conn.execute(f"SET LOCAL lock_timeout = {int(member.lease * 1000)}")
            row = self._one(
                "SELECT x.num, x.owner, x.epoch, coalesce(x.lease_until > clock_timestamp(), false), "
                "coalesce(g.address, '') FROM sessions x LEFT JOIN gateways g ON g.id = x.owner "
                "WHERE x.id = %s AND x.status = 'active' FOR UPDATE OF x",
                (session_id,),
            )
            if row is None:
                raise self._missing_session(session_id)
            num, owner, epoch, live, address = row
            if owner == member.id and self.leases.get(num) == (session_id, epoch):
                self._renew(num)  # still this Gateway's (a late renewal is no takeover): no new epoch
                return Claim(owned=True)
            if owner is not None and owner != member.id and live:
                return Claim(owned=False, owner=owner, address=address)
            recovered = self._take_lease(num, session_id)
        return Claim(owned=True, recovered=[self.get_execution(e) for e in recovered], leftovers=self._take_leftovers())

    def _renew(self, num: int) -> None:
        """A wake-up left for the session stays until the claimer started its queue (or found nothing to
        start): a claimer whose start fails leaves it for any Gateway (P7)."""
        assert self.member is not None
        self.conn.execute(
            "UPDATE sessions SET lease_until = clock_timestamp() + make_interval(secs => %s) WHERE num = %s",
            (self.member.lease, num),
        )

    def _take_lease(self, num: int, session_id: str) -> list[str]:
        """Inside the claim's transaction: epoch + 1, this Gateway the owner; what a previous owner left
        running is interrupted under the new epoch. The session's wake-up is kept: it is cleared by the
        start that takes the queue's items (or by a claimer that found nothing to start), so a claimer
        that dies, or whose store connection breaks, in between leaves it for any Gateway (P7)."""
        assert self.member is not None
        self._collect_leftovers(num)
        updated = self._one(
            "UPDATE sessions SET owner = %s, epoch = epoch + 1, "
            "lease_until = clock_timestamp() + make_interval(secs => %s) WHERE num = %s RETURNING epoch",
            (self.member.id, self.member.lease, num),
        )
        assert updated is not None
        self.leases[num] = (session_id, updated[0])
        return self._recover_session(num, session_id)

    def _collect_leftovers(self, num: int) -> None:
        """Before a takeover: the processes the previous owner's tool calls started, if it ran on this host
        (``end_leftover`` then checks each pid's start time). Another host's pids, or an owner nobody knows
        (its row gone), are never touched: the same number there names some other process (D3)."""
        rows = self._all(
            "SELECT e.id, t.call_id, t.pid, t.started FROM sessions x JOIN gateways g ON g.id = x.owner "
            "JOIN executions e ON e.session_num = x.num JOIN tool_runs t ON t.exe_num = e.num "
            "WHERE x.num = %s AND g.host = %s AND e.state IN ('running', 'retry_wait') "
            "AND t.pid IS NOT NULL AND NOT t.done ORDER BY e.num, t.seq",
            (num, socket.gethostname()),
        )
        self.leftovers += [ToolProcess(execution_id=r[0], call_id=r[1], pid=r[2], started=r[3]) for r in rows]

    def _take_leftovers(self) -> list[ToolProcess]:
        taken, self.leftovers = self.leftovers, []
        return taken

    def _recover_session(self, num: int, session_id: str) -> list[str]:
        """What a previous owner left running is interrupted (G3), but for unattended work (a Background
        session's) that had not begun: it is left running, with the session's wake-up set, for the Gateway
        that claims the session to run from its start (P7). Returns the executions interrupted."""
        assert self.member is not None
        rows = self._all(
            "SELECT e.id, x.origin IS NOT NULL FROM executions e JOIN sessions x ON x.num = e.session_num "
            "WHERE e.session_num = %s AND e.state IN ('running', 'retry_wait') ORDER BY e.num",
            (num,),
        )
        running = []
        for execution_id, unattended in rows:
            if unattended and not self.execution_begun(execution_id):
                self.conn.execute("UPDATE sessions SET wake = true WHERE num = %s", (num,))
                continue
            running.append(execution_id)
            self._recover_execution(execution_id, session_id, self.member.recovery_note)
        if running:  # a stop for what was running is moot now; an answer still is not
            self.conn.execute("DELETE FROM session_controls WHERE session_num = %s AND kind = 'stop'", (num,))
        return running

    def release_session(self, session_id: str) -> None:
        member = self.member
        num = next((n for n, (sid, _epoch) in self.leases.items() if sid == session_id), None)
        if member is None or num is None:
            return
        _sid, epoch = self.leases.pop(num)
        self.conn.execute(
            "UPDATE sessions SET owner = NULL, lease_until = NULL WHERE num = %s AND owner = %s AND epoch = %s",
            (num, member.id, epoch),
        )

    def heartbeat(self) -> Heartbeat:
        member = self.member
        if member is None:
            return Heartbeat(lost=[], recovered=[], controls=[])
        self._reconnect_if_lost()
        with self._tx() as conn:
            seen = conn.execute(
                "UPDATE gateways SET last_seen = clock_timestamp() WHERE id = %s RETURNING stop_requested",
                (member.id,),
            ).fetchall()
            stop = bool(seen and seen[0][0])
            if not seen:  # removed by someone's cleanup while this one was stopped: register again
                conn.execute(
                    "INSERT INTO gateways (id, pid, host, lease_seconds) VALUES (%s, %s, %s, %s)",
                    (member.id, os.getpid(), socket.gethostname(), member.lease),
                )
            # Only the leases this Gateway's work holds are renewed; one it holds for nothing (its release was
            # lost with the store connection) is let go, so that what waits there is any Gateway's (P7).
            held = [num for num, (_sid, epoch) in self.leases.items() if epoch != LOST_EPOCH]
            renewed = {
                row[0]: row[1]
                for row in conn.execute(
                    "UPDATE sessions SET lease_until = CASE WHEN num = ANY(%(held)s) "
                    "THEN clock_timestamp() + make_interval(secs => %(lease)s) END, "
                    "owner = CASE WHEN num = ANY(%(held)s) THEN owner END "
                    "WHERE owner = %(me)s RETURNING num, epoch",
                    {"held": held, "lease": member.lease, "me": member.id},
                )
                if row[0] in held
            }
        lost = []
        for num, (sid, epoch) in list(self.leases.items()):
            if epoch != LOST_EPOCH and renewed.get(num) != epoch:
                lost.append(sid)
                self.leases[num] = (sid, LOST_EPOCH)  # refused from now on, until claimed again
        now = time.monotonic()
        if now - self._beat_ok > member.lease:
            # This Gateway could not reach the store for longer than a lease: neither, perhaps, could the
            # others, whose leases ran out meanwhile without their dying. They get one lease to renew them
            # before this one takes anything over (a short database outage interrupts nothing, P7).
            self._takeovers_after = now + member.lease
        self._beat_ok = now
        recovered: list[Execution] = []
        woken: list[str] = []
        recovered_too: list[Execution] = []
        if now >= self._takeovers_after:
            recovered = self._recover_orphans()
            woken, recovered_too = self._claim_woken()
            self._forget_dead_gateways()
        controls = self._take_controls()
        return Heartbeat(
            lost=lost,
            recovered=recovered + recovered_too,
            controls=controls,
            woken=woken,
            leftovers=self._take_leftovers(),
            stop=stop,
        )

    def _recover_orphans(self) -> list[Execution]:
        """Sessions whose owner's lease ran out (or running work nobody owns): recovered, left unowned."""
        assert self.member is not None
        with self._tx() as conn:
            rows = self._all(_ORPHANS, {"me": self.member.id, "limit": ORPHAN_BATCH})  # type: ignore[arg-type]
            recovered: list[str] = []
            for num, session_id in rows:
                recovered += self._take_lease(num, session_id)
                conn.execute("UPDATE sessions SET owner = NULL, lease_until = NULL WHERE num = %s", (num,))
                self.leases.pop(num, None)
        return [self.get_execution(e) for e in recovered]

    def _claim_woken(self) -> tuple[list[str], list[Execution]]:
        """Sessions with an item nobody acknowledged (its owner died before the hint reached it), free to
        claim: claimed here (recovering what the dead owner left) for the runtime to run their queue."""
        assert self.member is not None
        with self._tx():
            rows = self._all(_WOKEN, {"me": self.member.id, "limit": ORPHAN_BATCH})  # type: ignore[arg-type]
            recovered: list[str] = []
            for num, session_id in rows:
                recovered += self._take_lease(num, session_id)
        return [session_id for _num, session_id in rows], [self.get_execution(e) for e in recovered]

    def _forget_dead_gateways(self) -> None:
        """The rows of Gateways not seen for :data:`DEAD_AFTER` leases and owning no session any more (their
        sessions were taken over) go: a SIGKILLed Gateway never removes its own (P9). Reads the small
        ``gateways`` table and, per old row, the owned sessions' index."""
        assert self.member is not None
        self.conn.execute(
            "DELETE FROM gateways g WHERE g.id <> %s "
            "AND g.last_seen + make_interval(secs => g.lease_seconds * %s) < clock_timestamp() "
            "AND NOT EXISTS (SELECT 1 FROM sessions x WHERE x.owner = g.id)",
            (self.member.id, DEAD_AFTER),
        )

    def took_work(self, session_id: str) -> None:
        if self.member is not None:
            self.conn.execute(
                "UPDATE sessions SET wake = false WHERE id = %s AND (owner = %s OR owner IS NULL) AND wake",
                (session_id, self.member.id),
            )

    def _notify(self, session_id: str, kind: HintKind) -> None:
        """A hint for the other Gateways; with ``work`` (an item queued), the session's wake-up is set in
        the same transaction, whoever holds it: the owner clears it once the hint reaches it, and the start
        that takes the item clears it. Left set, the item is any Gateway's: once the holder's lease runs out
        (it died), or, where nobody holds the session, once a lease passed (the Gateway that took it, which
        claims it next, died or lost its store connection before it could start it, P7)."""
        super()._notify(session_id, kind)
        if kind == "work" and self.member is not None:
            self.conn.execute(
                "UPDATE sessions SET wake = true, lease_until = CASE WHEN owner IS NULL "
                "THEN clock_timestamp() + make_interval(secs => %s) ELSE lease_until END WHERE id = %s",
                (self.member.lease, session_id),
            )

    # -- the relay -------------------------------------------------------------------------------
    def add_control(self, session_id: str, kind: ControlKind, execution_id: str, text: str = "") -> None:
        with self._tx() as conn:
            num = self._session_num(session_id)
            conn.execute(
                "INSERT INTO session_controls (session_num, kind, execution_id, text) VALUES (%s, %s, %s, %s)",
                (num, kind, execution_id, text),
            )
            self._notify(session_id, "control")

    def _take_controls(self) -> list[Control]:
        """The stops and answers left for sessions this Gateway owns (or nobody owns any more: an answer
        sent while the owner was letting the session go)."""
        assert self.member is not None
        rows = self._all(
            "DELETE FROM session_controls c USING sessions x WHERE c.session_num = x.num AND x.status = 'active' "
            "AND (x.owner = %s OR x.owner IS NULL OR x.lease_until < clock_timestamp()) "
            "RETURNING c.num, x.id, c.kind, c.execution_id, c.text",
            (self.member.id,),
        )
        return [
            Control(session_id=sid, kind=kind, execution_id=eid, text=text) for _n, sid, kind, eid, text in sorted(rows)
        ]

    def hint(self, session_id: str, kind: HintKind) -> None:
        with self._tx():
            self._notify(session_id, kind)

    def listen(self, callback: Callable[[Hint], None]) -> Listener | None:
        if self.member is None:
            return None
        url, schema = self.url, self.schema
        return Listener(lambda: connect(url, schema=schema, timeout=RECONNECT_TIMEOUT), self.member.id, callback)

    def request_stop(self, gateway_ids: list[str] | None = None) -> list[str]:
        with self._tx() as conn:
            rows = conn.execute(
                "UPDATE gateways SET stop_requested = true WHERE %(all)s OR id = ANY(%(ids)s) RETURNING id",
                {"all": gateway_ids is None, "ids": gateway_ids or []},
            ).fetchall()
        return [row[0] for row in rows]

    def list_gateways(self) -> list[GatewayInfo]:
        rows = self._all(
            "SELECT g.id, g.address, g.pid, g.host, extract(epoch FROM g.started), extract(epoch FROM g.last_seen), "
            "g.last_seen + make_interval(secs => g.lease_seconds) > clock_timestamp(), "
            "coalesce(array_agg(x.id ORDER BY x.num) FILTER (WHERE x.id IS NOT NULL), '{}') "
            "FROM gateways g LEFT JOIN sessions x ON x.owner = g.id AND x.status = 'active' "
            "AND x.lease_until > clock_timestamp() GROUP BY g.id ORDER BY g.started"
        )
        return [
            GatewayInfo(
                id=r[0],
                address=r[1],
                pid=r[2],
                host=r[3],
                started=float(r[4]),
                last_seen=float(r[5]),
                alive=bool(r[6]),
                sessions=list(r[7]),
            )
            for r in rows
        ]


class Listener:
    """LISTEN on a connection of its own, on a thread of its own; hints from other Gateways go to the
    callback (the Gateway's own are skipped: it announced those itself). A connection that breaks is
    replaced, every :data:`RELISTEN_DELAY` seconds until a server answers: hints sent meanwhile are lost,
    which costs time, never work (wake-ups, stops and answers are rows the heartbeat reads, P7)."""

    def __init__(
        self, connect: Callable[[], psycopg.Connection[Any]], me: str, callback: Callable[[Hint], None]
    ) -> None:
        self._connect = connect
        self._conn = connect()
        self._me = me
        self._callback = callback
        self._stop = threading.Event()
        self._conn.execute(f"LISTEN {CHANNEL}")
        self.reconnects = 0
        self._thread = threading.Thread(target=self._run, name="anyy-hints", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        quiet = 0.0
        while not self._stop.is_set():
            try:
                heard = False
                for note in self._conn.notifies(timeout=0.5):
                    heard = True
                    hint = Hint.decode(note.payload)
                    if hint is not None and hint.sender != self._me:
                        self._callback(hint)
                quiet = 0.0 if heard else quiet + 0.5
                if quiet >= PROBE_AFTER:  # waiting for notifications does not notice a connection cut off
                    quiet = 0.0
                    self._conn.execute("SELECT 1")
            except psycopg.Error:
                self._relisten()

    def _relisten(self) -> None:
        with contextlib.suppress(Exception):
            self._conn.close()
        while not self._stop.wait(RELISTEN_DELAY):
            try:
                conn = self._connect()
                conn.execute(f"LISTEN {CHANNEL}")
            except Exception as exc:  # no server yet (StoreSettingError, psycopg.Error): try again
                log.debug("hints: no connection yet: %s", exc)
                continue
            self._conn = conn
            self.reconnects += 1
            return

    def close(self) -> None:
        self._stop.set()
        self._thread.join(5)
        with contextlib.suppress(Exception):
            self._conn.close()
