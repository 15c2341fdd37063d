"""G3 end to end: a real Gateway under load from several clients, SIGKILLed at random moments and
restarted, loses no committed entry and no accepted submission; on restart, work that was running is
marked interrupted (with a notice entry), pending queues are intact, acknowledged deletes stay deleted.

Clients are threads speaking JSON-RPC over HTTP POST /rpc: chats (send + wait), steering and follow-ups
sent while a tool runs, forks, deletes, and history reads. They record what the Gateway acknowledged
(the reply arrived). After each restart, before the clients may go on, the store and the RPC are
checked against that record. ``ANYY_KILLTEST_KILLS`` (default 100) and ``ANYY_KILLTEST_SEED`` size and
choose a run. No sleep orders anything: readiness comes on the ready fd, death on a pidfd, and clients
wait on a condition for the next Gateway.
"""

from __future__ import annotations

import collections
import http.client
import os
import random
import sqlite3
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from anyy.domain.queue import FINAL_SUBMISSION_STATES
from anyy.profiles import create_profile
from anyy.runtime.host import RECOVERY_NOTE
from anyy.storage.rows import HEAD_SQL
from commons import jsonrpc
from tests.killtest.gateway_process import GatewayProcess, RpcClient, RpcFailure

KILLS = int(os.environ.get("ANYY_KILLTEST_KILLS", "100"))
SEED = int(os.environ.get("ANYY_KILLTEST_SEED", "20250611"))
CLIENTS = 4
MAX_ACKS_BEFORE_KILL = 60
LOAD_DEADLINE = 20.0  # a cycle whose clients acknowledge nothing for this long is killed anyway
WAIT_TIMEOUT = 3.0  # session.wait: an answer is quick; a pending item after a restart waits for a poke
EXPECTED_ERRORS = {jsonrpc.CONFLICT, jsonrpc.NOT_FOUND}
# What a submission may be once a restarted Gateway has recovered (nothing runs before a client asks).
AFTER_RECOVERY = FINAL_SUBMISSION_STATES | {"pending", "suspended"}


@dataclass
class Sent:
    session_id: str
    text: str
    kind: str
    last_state: str


@dataclass
class Ledger:
    """What the clients were told; shared by the client threads and the checker, under ``cond``."""

    cond: threading.Condition = field(default_factory=threading.Condition)
    submissions: dict[str, Sent] = field(default_factory=dict)
    sessions: set[str] = field(default_factory=set)
    deleted: set[str] = field(default_factory=set)
    delete_tried: set[str] = field(default_factory=set)
    seen: dict[str, dict[int, tuple[str, str]]] = field(default_factory=dict)
    acks: collections.Counter[str] = field(default_factory=collections.Counter)
    total_acks: int = 0
    unexpected: list[str] = field(default_factory=list)

    def ack(self, what: str) -> None:
        with self.cond:
            self.acks[what] += 1
            self.total_acks += 1
            self.cond.notify_all()


class Cluster:
    """Where the current Gateway is; clients block here between a kill and the checked restart."""

    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.generation = 0
        self.address: tuple[str, int, str] | None = None
        self.stopping = False

    def publish(self, address: tuple[str, int, str] | None) -> None:
        with self.cond:
            self.generation += 1
            self.address = address
            self.cond.notify_all()

    def stop(self) -> None:
        with self.cond:
            self.stopping = True
            self.cond.notify_all()

    def next_up(self, after: int) -> tuple[int, tuple[str, int, str]] | None:
        with self.cond:
            while not self.stopping and (self.address is None or self.generation == after):
                self.cond.wait(60)
            if self.stopping or self.address is None:
                return None
            return self.generation, self.address


class Client(threading.Thread):
    def __init__(self, number: int, cluster: Cluster, ledger: Ledger) -> None:
        super().__init__(name=f"client-{number}", daemon=True)
        self.number = number
        self.cluster = cluster
        self.ledger = ledger
        self.rng = random.Random(SEED * 100 + number)
        self.own: list[str] = []
        self.counter = 0
        self.rpc: RpcClient | None = None
        self.failure: BaseException | None = None

    def tag(self) -> str:
        self.counter += 1
        return f"c{self.number}-{self.counter}"

    def run(self) -> None:
        try:
            generation = 0
            while True:
                up = self.cluster.next_up(generation)
                if up is None:
                    return
                generation, (host, port, token) = up
                self.rpc = RpcClient(host, port, token, timeout=30)
                try:
                    while True:
                        self.step()
                except (OSError, http.client.HTTPException):
                    pass  # the Gateway died under us: what was not answered is not acknowledged
                finally:
                    self.rpc.close()
        except BaseException as exc:  # reported by the test
            self.failure = exc

    def call(self, method: str, **params: object) -> object:
        assert self.rpc is not None
        return self.rpc.call(method, **params)

    def step(self) -> None:
        rng = self.rng
        if not self.own or rng.random() < 0.04:
            session = self.call("session.create", title=self.tag())
            assert isinstance(session, dict)
            with self.ledger.cond:
                self.ledger.sessions.add(session["id"])
            self.own.append(session["id"])
            self.ledger.ack("create")
            return
        session_id = rng.choice(self.own)
        choice = rng.random()
        try:
            if choice < 0.40:
                self.chat(session_id)
            elif choice < 0.60:
                self.steer_and_follow(session_id)
            elif choice < 0.70:
                self.fork(session_id)
            elif choice < 0.77:
                self.delete(session_id)
            else:
                self.read_history(session_id)
        except RpcFailure as failure:
            if failure.code not in EXPECTED_ERRORS:
                with self.ledger.cond:
                    self.ledger.unexpected.append(f"{failure} (session {session_id})")
            if failure.code == jsonrpc.NOT_FOUND and session_id in self.ledger.delete_tried:
                self.own.remove(session_id)  # a delete that committed without its answer

    def send(self, session_id: str, text: str, kind: str) -> str:
        sub = self.call("session.send", session_id=session_id, text=text, kind=kind)
        assert isinstance(sub, dict)
        assert sub["text"] == text
        with self.ledger.cond:
            self.ledger.submissions[sub["id"]] = Sent(session_id, text, kind, sub["state"])
        self.ledger.ack(kind)
        return str(sub["id"])

    def wait(self, submission_id: str) -> None:
        sub = self.call("session.wait", submission_id=submission_id, timeout=WAIT_TIMEOUT)
        assert isinstance(sub, dict)
        with self.ledger.cond:
            self.ledger.submissions[submission_id].last_state = sub["state"]
        self.ledger.ack("wait")

    def chat(self, session_id: str) -> None:
        tag = self.tag()
        text = f"run: sleep 0.05 # {tag}" if self.rng.random() < 0.3 else f"hello {tag}"
        self.wait(self.send(session_id, text, "prompt"))

    def steer_and_follow(self, session_id: str) -> None:
        ids = [self.send(session_id, f"run: sleep 0.15 # {self.tag()}", "prompt")]
        ids.append(self.send(session_id, f"steer {self.tag()}", "steering"))
        ids.append(self.send(session_id, f"then {self.tag()}", "follow_up"))
        for submission_id in ids:
            self.wait(submission_id)

    def fork(self, session_id: str) -> None:
        result = self.call("session.fork", session_id=session_id, title=self.tag())
        assert isinstance(result, dict)
        new_id = result["session"]["id"]
        with self.ledger.cond:
            self.ledger.sessions.add(new_id)
        self.own.append(new_id)
        self.ledger.ack("fork")

    def delete(self, session_id: str) -> None:
        with self.ledger.cond:
            self.ledger.delete_tried.add(session_id)
        self.call("session.delete", session_id=session_id)
        with self.ledger.cond:
            self.ledger.deleted.add(session_id)
        self.own.remove(session_id)
        self.ledger.ack("delete")

    def read_history(self, session_id: str) -> None:
        page = self.call("session.history", session_id=session_id, limit=30)
        assert isinstance(page, dict)
        with self.ledger.cond:
            seen = self.ledger.seen.setdefault(session_id, {})
            for item in page["items"]:
                if item["object"] is None:
                    seen[item["id"]] = (item["kind"], item["text"])
        self.ledger.ack("history")


class Checker:
    """What must hold after every restart, read from the store (and the RPC) against the ledger."""

    def __init__(self, db: Path, ledger: Ledger) -> None:
        self.db = db
        self.ledger = ledger
        self.checks = 0
        self.figures: dict[str, object] = {}

    def ok(self, condition: bool, message: str) -> None:
        self.checks += 1
        assert condition, message

    def run(self, rpc: RpcClient | None) -> None:
        """Check after a restart (through ``rpc`` too), or at the end (``rpc`` None: the Gateway stopped)."""
        final = rpc is None
        with self.ledger.cond:  # the clients are blocked: the ledger is still
            conn = sqlite3.connect(f"file:{self.db}?mode=ro", uri=True)
            try:
                self._store(conn, final=final)
            finally:
                conn.close()
            if rpc is not None:
                self._rpc(rpc)

    def _store(self, conn: sqlite3.Connection, *, final: bool) -> None:
        led = self.ledger
        sessions = {row[0]: (row[1], row[2]) for row in conn.execute("SELECT id, num, status FROM sessions")}
        rows = conn.execute(
            "SELECT s.id, s.text, s.state, x.id FROM submissions s JOIN sessions x ON x.num = s.session_num"
        ).fetchall()
        by_id = {row[0]: row for row in rows}
        texts = collections.Counter(row[1] for row in rows)
        self.ok(not [t for t, n in texts.items() if n > 1], "a queue item was duplicated")
        for sub_id, sent in led.submissions.items():
            row = by_id.get(sub_id)
            if sent.session_id in led.delete_tried:
                continue  # its session may be gone, and its submissions with it
            self.ok(row is not None, f"acknowledged submission {sub_id} ({sent.text!r}) was lost")
            assert row is not None
            self.ok(row[1] == sent.text and row[3] == sent.session_id, f"submission {sub_id} changed")
            self.ok(row[2] in AFTER_RECOVERY, f"submission {sub_id} is {row[2]!r} after a restart")
            if sent.last_state in FINAL_SUBMISSION_STATES:
                self.ok(row[2] == sent.last_state, f"submission {sub_id} went from {sent.last_state} to {row[2]}")
        active = conn.execute(
            "SELECT count(*) FROM executions e JOIN sessions x ON x.num = e.session_num "
            "WHERE e.state IN ('running', 'retry_wait')"
        ).fetchone()[0]
        self.ok(active == 0, f"{active} execution(s) still 'running' after the restart")
        for num, recovered in conn.execute(
            "SELECT session_num, count(*) FROM executions WHERE state = 'interrupted' AND substr(note, 1, ?) = ? "
            "GROUP BY 1",
            (len(RECOVERY_NOTE), RECOVERY_NOTE),
        ):
            notices = conn.execute(
                "SELECT count(*) FROM entries WHERE id BETWEEN ? AND ? AND kind = 11 AND substr(text, 1, ?) = ?",
                (num << 30, (num << 30) | ((1 << 30) - 1), len(RECOVERY_NOTE), RECOVERY_NOTE),
            ).fetchone()[0]
            self.ok(notices >= recovered, f"session #{num}: {recovered} interrupted, {notices} notices")
        for session_id in led.sessions - led.delete_tried:
            self.ok(sessions.get(session_id, (0, ""))[1] == "active", f"session {session_id} was lost")
        for session_id in led.deleted:
            self.ok(sessions.get(session_id, (0, "deleted"))[1] == "deleted", f"deleted {session_id} came back")
        for session_id, seen in led.seen.items():
            if session_id in led.delete_tried:
                continue
            path = {
                row[0]: row[1]
                for row in conn.execute(
                    "WITH RECURSIVE p(id) AS ("
                    f" SELECT {HEAD_SQL} FROM sessions WHERE id = ?"
                    " UNION ALL SELECT e.parent FROM entries e JOIN p ON e.id = p.id WHERE e.parent IS NOT NULL)"
                    " SELECT e.id, e.text FROM p JOIN entries e ON e.id = p.id",
                    (session_id,),
                )
            }
            for entry_id, (_, text) in seen.items():
                self.ok(path.get(entry_id) == text, f"entry {entry_id} of {session_id} was lost or changed")
        if final:
            (check,) = conn.execute("PRAGMA integrity_check").fetchone()
            self.ok(check == "ok", f"integrity_check: {check}")
            self.figures["store submission states"] = dict(collections.Counter(row[2] for row in rows))
            self.figures["executions recovered as interrupted"] = conn.execute(
                "SELECT count(*) FROM executions WHERE substr(note, 1, ?) = ?", (len(RECOVERY_NOTE), RECOVERY_NOTE)
            ).fetchone()[0]

    def _rpc(self, rpc: RpcClient) -> None:
        led = self.ledger
        pending: dict[str, set[str]] = collections.defaultdict(set)
        for sub_id, sent in led.submissions.items():
            if sent.session_id not in led.delete_tried:
                pending[sent.session_id].add(sub_id)
        for session_id, ours in pending.items():
            listed = rpc.call("session.queue.list", session_id=session_id)
            ids = [item["id"] for item in listed]
            self.ok(len(ids) == len(set(ids)), f"session {session_id}: an item is listed twice")
            for item in listed:
                if item["id"] in ours:
                    self.ok(item["text"] == led.submissions[item["id"]].text, "a pending item changed")
            waiting = {sid for sid in ours if led.submissions[sid].last_state == "pending"}
            for sub_id in waiting - set(ids):  # no longer pending: it must have an outcome now
                state = rpc.call("session.wait", submission_id=sub_id, timeout=0)["state"]
                self.ok(state in AFTER_RECOVERY and state != "pending", f"{sub_id} left its queue as {state}")
        for session_id in list(led.deleted)[-5:]:
            try:
                rpc.call("session.get", session_id=session_id)
            except RpcFailure as failure:
                self.ok(failure.code == jsonrpc.NOT_FOUND, f"deleted {session_id}: {failure}")
            else:
                self.ok(False, f"deleted session {session_id} is still readable")


@pytest.mark.slow
def test_g3_gateway_killed_at_random_moments_loses_nothing_acknowledged(tmp_path: Path) -> None:
    home = tmp_path / "home"
    profile = create_profile(home, "kill")
    work = tmp_path / "work"
    work.mkdir()
    gateway = GatewayProcess(home, "kill", cwd=work, log=tmp_path / "gateway.err")
    ledger = Ledger()
    cluster = Cluster()
    checker = Checker(profile.db_path, ledger)
    rng = random.Random(SEED)
    clients = [Client(n, cluster, ledger) for n in range(CLIENTS)]
    for client in clients:
        client.start()
    started = time.monotonic()
    killed_at: list[int] = []
    try:
        gateway.start()
        cluster.publish((gateway.host, gateway.port, gateway.token))
        for _ in range(KILLS):
            target = 0 if rng.random() < 0.2 else rng.randint(1, MAX_ACKS_BEFORE_KILL)
            with ledger.cond:
                goal = ledger.total_acks + target
                ledger.cond.wait_for(lambda: ledger.total_acks >= goal, LOAD_DEADLINE)  # noqa: B023
            cluster.publish(None)  # clients whose call fails now wait for the checked restart
            gateway.kill()
            killed_at.append(target)
            gateway.start()
            rpc = gateway.client()
            try:
                checker.run(rpc)
            finally:
                rpc.close()
            failed = [c.failure for c in clients if c.failure is not None]
            assert not failed, failed
            cluster.publish((gateway.host, gateway.port, gateway.token))
        cluster.stop()
        gateway.stop()
        for client in clients:
            client.join(60)
        checker.run(None)
    finally:
        cluster.stop()
        gateway.stop()
    elapsed = time.monotonic() - started
    failed = [c.failure for c in clients if c.failure is not None]
    assert not failed, failed
    assert not ledger.unexpected, ledger.unexpected[:10]
    states = collections.Counter(s.last_state for s in ledger.submissions.values())
    print(
        f"\nG3 kill test: {KILLS} kills (seed {SEED}) in {elapsed:.1f} s; acknowledged {ledger.total_acks} "
        f"replies {dict(ledger.acks)}; {len(ledger.submissions)} submissions (last seen states "
        f"{dict(states)}), {len(ledger.sessions)} sessions, {len(ledger.deleted)} deletes; "
        f"{checker.checks} checks made; {checker.figures}"
    )
    assert ledger.acks["prompt"] >= KILLS
    assert ledger.acks["fork"] > 0
    assert ledger.acks["delete"] > 0
