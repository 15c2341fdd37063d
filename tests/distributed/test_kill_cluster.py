"""P5 under fire: SIGKILLs of random Gateways of a three-Gateway service while four clients send through
whichever Gateways are up. No acknowledged submission is lost or run twice, and along every session the
entries' epochs never decrease (nothing was written under a lease already taken over).

``ANYY_CLUSTER_KILLS`` (default 50) and ``ANYY_CLUSTER_SEED`` size and choose a run. A killed Gateway is
restarted in the background while the others serve; waits are on replies and on the database, each with
a deadline.
"""

from __future__ import annotations

import http.client
import os
import random
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest

from anyy.domain.queue import FINAL_SUBMISSION_STATES
from tests.distributed.service import Service, eventually, three_gateways
from tests.killtest.gateway_process import GatewayProcess, RpcClient, RpcFailure

KILLS = int(os.environ.get("ANYY_CLUSTER_KILLS", "50"))
SEED = int(os.environ.get("ANYY_CLUSTER_SEED", "20261201"))
CLIENTS = 4
ACKS_BETWEEN_KILLS = (1, 8)
LOAD_DEADLINE = 10.0


@dataclass
class Ledger:
    cond: threading.Condition = field(default_factory=threading.Condition)
    acked: dict[str, tuple[str, str]] = field(default_factory=dict)  # submission id -> (session, text)
    sessions: set[str] = field(default_factory=set)
    total: int = 0
    unexpected: list[str] = field(default_factory=list)

    def ack(self, submission_id: str, session_id: str, text: str) -> None:
        with self.cond:
            self.acked[submission_id] = (session_id, text)
            self.total += 1
            self.cond.notify_all()


class Fleet:
    """The addresses of the Gateways up now; clients pick one at random."""

    def __init__(self, gateways: list[GatewayProcess]) -> None:
        self.lock = threading.Lock()
        self.up: dict[int, GatewayProcess] = dict(enumerate(gateways))
        self.stopping = threading.Event()

    def pick(self, rng: random.Random) -> RpcClient | None:
        with self.lock:
            if not self.up:
                return None
            gateway = self.up[rng.choice(sorted(self.up))]
            return RpcClient(gateway.host, gateway.port, gateway.token, timeout=15)


class Client(threading.Thread):
    def __init__(self, number: int, fleet: Fleet, ledger: Ledger) -> None:
        super().__init__(name=f"cluster-client-{number}", daemon=True)
        self.number = number
        self.fleet = fleet
        self.ledger = ledger
        self.rng = random.Random(SEED * 10 + number)
        self.sessions: list[str] = []
        self.count = 0

    def run(self) -> None:
        while not self.fleet.stopping.is_set():
            rpc = self.fleet.pick(self.rng)
            if rpc is None:
                continue
            try:
                self.step(rpc)
            except (OSError, http.client.HTTPException):
                continue  # that Gateway just died (mid-reply, maybe): the call was not acknowledged
            except RpcFailure as exc:
                if "Internal" in exc.message or exc.code == -32603:
                    self.ledger.unexpected.append(f"{self.name}: {exc}")
            except Exception as exc:  # anything else fails the test (a dead client thread would hide load)
                self.ledger.unexpected.append(f"{self.name}: {type(exc).__name__}: {exc}")

    def step(self, rpc: RpcClient) -> None:
        if len(self.sessions) < 3 or self.rng.random() < 0.05:
            session = rpc.call("session.create")["id"]
            self.sessions.append(session)
            with self.ledger.cond:
                self.ledger.sessions.add(session)
            return
        session = self.rng.choice(self.sessions)
        self.count += 1
        text = f"hello c{self.number} n{self.count}"
        kind = "follow_up" if self.rng.random() < 0.3 else "prompt"
        sub = rpc.call("session.send", session_id=session, text=text, kind=kind)
        self.ledger.ack(sub["id"], session, text)
        rpc.call("session.wait", submission_id=sub["id"], timeout=1)


def restart_later(fleet: Fleet, index: int, gateway: GatewayProcess) -> threading.Thread:
    def run() -> None:
        gateway.start()
        with fleet.lock:
            fleet.up[index] = gateway

    thread = threading.Thread(target=run, name=f"restart-{index}", daemon=True)
    thread.start()
    return thread


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Service]:
    """A service of its own: the checks read the whole database."""
    yield from three_gateways(tmp_path_factory)


@pytest.mark.slow
def test_p5_kill_test_sigkills_of_random_gateways_lose_and_repeat_nothing(service: Service) -> None:
    rng = random.Random(SEED)
    ledger = Ledger()
    fleet = Fleet(service.gateways)
    clients = [Client(n, fleet, ledger) for n in range(CLIENTS)]
    restarts: list[threading.Thread] = []
    started = time.monotonic()
    for client in clients:
        client.start()
    try:
        for _ in range(KILLS):
            goal = ledger.total + rng.randint(*ACKS_BETWEEN_KILLS)
            with ledger.cond:
                ledger.cond.wait_for(lambda: ledger.total >= goal, LOAD_DEADLINE)  # noqa: B023
            with fleet.lock:
                candidates = sorted(fleet.up)
                index = rng.choice(candidates) if len(candidates) > 1 else None
                if index is not None:
                    del fleet.up[index]
            if index is None:  # keep one Gateway up: wait for a restart to finish
                restarts[-1].join(60)
                continue
            service.gateways[index].kill()
            restarts.append(restart_later(fleet, index, service.gateways[index]))
    finally:
        fleet.stopping.set()
        for thread in restarts:
            thread.join(60)
        for client in clients:
            client.join(30)
    settle(service, ledger)
    check(service, ledger)
    print(
        f"\nP5 kill test: {KILLS} SIGKILLs (seed {SEED}) in {time.monotonic() - started:.1f} s; "
        f"{len(ledger.acked)} acknowledged submissions over {len(ledger.sessions)} sessions"
    )


def settle(service: Service, ledger: Ledger) -> None:
    """Every session continued once (what the kills left pending starts), then every item final."""
    rpc = service.rpc(0)
    for session in sorted(ledger.sessions):
        rpc.call("session.continue", session_id=session)

    def open_items() -> bool:
        rows = service.sql(f"SELECT count(*) FROM submissions WHERE state NOT IN {_in(FINAL_SUBMISSION_STATES)}")
        return bool(rows[0][0] == 0)

    eventually(open_items, 120, "every acknowledged item settled")


def check(service: Service, ledger: Ledger) -> None:
    assert not ledger.unexpected, ledger.unexpected[:5]
    assert len(ledger.acked) >= KILLS
    stored = {row[0]: row for row in service.sql("SELECT id, state, text, entry_id FROM submissions")}
    missing = [sid for sid in ledger.acked if sid not in stored]
    assert not missing, f"acknowledged but lost: {missing[:5]}"
    entries = service.sql("SELECT id, kind, text, epoch FROM entries ORDER BY id")
    users: dict[str, int] = {}
    for _id, kind, text, _epoch in entries:
        if kind == 1:
            users[text] = users.get(text, 0) + 1
    for sid, (_session, text) in ledger.acked.items():
        state, entry_id = stored[sid][1], stored[sid][3]
        expected = 0 if state in ("cancelled", "cleared") else 1
        assert users.get(text, 0) == expected, f"{sid} ({state}): {users.get(text, 0)} user entries for {text!r}"
        assert state in FINAL_SUBMISSION_STATES
        assert (entry_id is not None) == bool(expected)
    by_session: dict[int, list[int]] = {}
    for entry_id, _kind, _text, epoch in entries:
        by_session.setdefault(entry_id >> 30, []).append(epoch or 0)
    for num, epochs in by_session.items():
        assert epochs == sorted(epochs), f"session #{num}: epochs went back {epochs}"
    running = service.sql("SELECT count(*) FROM executions WHERE state IN ('running', 'retry_wait')")
    assert running[0][0] == 0


def _in(values: frozenset[str]) -> str:
    return "(" + ", ".join(f"'{v}'" for v in sorted(values)) + ")"
