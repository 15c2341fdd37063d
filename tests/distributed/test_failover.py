"""P3, P5: a Gateway that dies or freezes loses its sessions to the others, and nothing is lost or done
twice. The new owner recovers each session as a restarted Gateway would (G3): running work interrupted with
a notice, pending items left pending, nothing started until a client asks (S7). A frozen owner that wakes
up after the takeover writes nothing under its old epoch."""

from __future__ import annotations

import os
import signal
import time
from typing import Any

from anyy.runtime.delegation import RESTARTED
from anyy.runtime.host import RECOVERY_NOTE
from tests.distributed.service import BOUND, LEASE, Service, eventually
from tests.distributed.test_any_gateway import running_on, wait_final
from tests.fakes.gateways import MakeHold
from tests.killtest.gateway_process import RpcClient

SESSIONS = 3


def owner_index(service: Service, session_id: str) -> int:
    owner = running_on(service, session_id)
    rows = service.sql("SELECT pid FROM gateways WHERE id = %s", (owner,))
    return next(i for i, g in enumerate(service.gateways) if g.pid == rows[0][0])


def execution_state(service: Service, index: int, session_id: str, execution_id: str) -> str:
    found: dict[str, Any] = service.rpc(index).call(
        "session.execution", session_id=session_id, execution_id=execution_id
    )
    return str(found["state"])


def running_execution(rpc: RpcClient, session_id: str) -> str:
    def probe() -> str | None:
        found: str | None = rpc.call("session.get", session_id=session_id)["running_execution"]
        return found

    return eventually(probe, 60, f"an execution of {session_id} running")


def interrupted(service: Service, index: int, session_id: str, execution_id: str, timeout: float) -> None:
    def probe() -> bool:
        return execution_state(service, index, session_id, execution_id) == "interrupted"

    eventually(probe, timeout, f"execution {execution_id} interrupted")


def user_texts(service: Service, index: int, session_id: str) -> list[str]:
    items = service.rpc(index).call("session.history", session_id=session_id, limit=100)["items"]
    return [e["text"] for e in reversed(items) if e["kind"] == "user"]


def test_p5_sigkill_of_the_owner_interrupts_its_sessions_and_loses_nothing(service: Service, hold: MakeHold) -> None:
    a = service.rpc(0)
    sessions, holds, firsts, runs, follows = [], [], {}, {}, {}
    for _ in range(SESSIONS):
        session = a.call("session.create")["id"]
        held = hold()
        firsts[session] = a.call("session.send", session_id=session, text=held.command)
        sessions.append(session)
        holds.append(held)
    for session in sessions:
        runs[session] = running_execution(a, session)
    victim = owner_index(service, sessions[0])
    owned = [s for s in sessions if owner_index(service, s) == victim]
    survivor = (victim + 1) % 3
    for session in owned:
        follows[session] = service.rpc(survivor).call(
            "session.send", session_id=session, text=f"after {session}", kind="follow_up"
        )
    # The owner got each follow-up's hint (it would run them after the held turn): once it dies, they stay
    # pending like any queue after a crash (G3), rather than being woken by a survivor.
    eventually(
        lambda: not service.sql("SELECT 1 FROM sessions WHERE wake AND id = ANY(%s)", (owned,)),
        30,
        "the owner took the follow-ups",
    )
    killed = time.monotonic()
    service.gateways[victim].kill()
    for session in owned:
        interrupted(service, survivor, session, runs[session], LEASE + BOUND)
    took = time.monotonic() - killed
    assert took <= LEASE + BOUND
    other = 3 - victim - survivor
    for session in owned:
        assert wait_final(service, other, firsts[session]["id"])["state"] == "interrupted"
        items = service.rpc(other).call("session.history", session_id=session, limit=100)["items"]
        assert any(e["kind"] == "notice" and e["text"].startswith(RECOVERY_NOTE) for e in items)
        pending = service.rpc(other).call("session.queue.list", session_id=session)
        assert [p["id"] for p in pending] == [follows[session]["id"]]  # intact, and not started by itself
        service.rpc(other).call("session.continue", session_id=session)
        assert wait_final(service, other, follows[session]["id"])["state"] == "completed"
        assert user_texts(service, other, session) == [holds[sessions.index(session)].command, f"after {session}"]


def test_p5_a_send_the_dead_owner_never_saw_runs_once_its_lease_runs_out(service: Service, hold: MakeHold) -> None:
    a = service.rpc(0)
    session = a.call("session.create")["id"]
    held = hold()
    first = a.call("session.send", session_id=session, text=held.command)
    running = running_execution(a, session)
    victim = owner_index(service, session)
    survivor = service.rpc((victim + 1) % 3)
    dead = running_on(service, session)
    service.gateways[victim].kill()
    # However long the kill took to be seen, the dead owner's lease is still live when the send arrives.
    service.sql("UPDATE sessions SET lease_until = clock_timestamp() + interval '2 seconds' WHERE id = %s", (session,))
    later = survivor.call("session.send", session_id=session, text="sent after the crash")
    assert running_on(service, session) == dead  # not claimable yet: acknowledged, and waiting for the lease
    # No further request: a survivor claims the session once the lease runs out, and runs the item.
    assert wait_final(service, (victim + 2) % 3, later["id"])["state"] == "completed"
    assert execution_state(service, (victim + 2) % 3, session, running) == "interrupted"
    assert wait_final(service, (victim + 1) % 3, first["id"])["state"] == "interrupted"
    assert user_texts(service, (victim + 1) % 3, session) == [held.command, "sent after the crash"]
    assert not service.sql("SELECT 1 FROM sessions WHERE wake AND id = %s", (session,))


def test_k2_a_child_taken_over_by_another_gateway_delivers_to_its_parent_once(service: Service, hold: MakeHold) -> None:
    a = service.rpc(0)
    parent = a.call("session.create")["id"]
    sent = a.call("session.send", session_id=parent, text="delegate: " + hold().command)

    def child_running() -> str | None:
        tasks = a.call("session.children", session_id=parent)
        return str(tasks[0]["child_session_id"]) if tasks and tasks[0]["state"] == "running" else None

    child = eventually(child_running, 60, "the delegated child running")
    running_execution(a, child)
    assert wait_final(service, 0, sent["id"], suspended=True)["state"] == "suspended"
    victim = owner_index(service, child)
    service.gateways[victim].kill()  # the child's Gateway dies: a survivor resumes the child, which ends there
    other = (victim + 1) % 3
    assert wait_final(service, other, sent["id"])["state"] == "completed"
    task = service.rpc(other).call("session.children", session_id=parent)[0]
    assert (task["state"], task["delivered"]) == ("finished", True)
    child_items = service.rpc(other).call("session.history", session_id=child, limit=50)["items"]
    assert next(e["text"] for e in child_items if e["kind"] == "user") == RESTARTED  # resumed once, elsewhere
    items = service.rpc(other).call("session.history", session_id=parent, limit=50)["items"]
    results = [e for e in items if e["kind"] == "tool_result" and e["data"]["name"] == "delegate"]
    assert len(results) == 1, results  # delivered once


def test_p3_a_frozen_owner_writes_nothing_after_the_takeover(service: Service, hold: MakeHold) -> None:
    a = service.rpc(0)
    session = a.call("session.create")["id"]
    held = hold()
    first = a.call("session.send", session_id=session, text=held.command)
    running = running_execution(a, session)
    frozen = owner_index(service, session)
    other = (frozen + 1) % 3
    epoch_before = service.sql("SELECT epoch FROM sessions WHERE id = %s", (session,))[0][0]
    logged = len(service.profile_log(frozen))  # what it logged before (the module's Gateways serve many tests)
    os.kill(service.gateways[frozen].pid, signal.SIGSTOP)
    try:
        interrupted(service, other, session, running, 2 * LEASE + BOUND)
        held.release()  # the frozen Gateway's tool call ends; its result is for a lease it no longer holds
    finally:
        os.kill(service.gateways[frozen].pid, signal.SIGCONT)
    eventually(lambda: "lease" in service.profile_log(frozen)[logged:], 30, "the woken Gateway noticed its lost lease")
    assert execution_state(service, other, session, running) == "interrupted"
    assert wait_final(service, other, first["id"])["state"] == "interrupted"
    rows = service.sql(
        "SELECT e.id, e.kind, e.epoch, e.text FROM entries e JOIN sessions s ON e.id >> 30 = s.num "
        "WHERE s.id = %s ORDER BY e.id",
        (session,),
    )
    epochs = [epoch for _id, _kind, epoch, _text in rows]
    assert epochs == sorted(epochs), rows  # never decreasing along the session
    assert epochs[-1] > epoch_before  # the recovery notice, written under the new epoch, is the last entry
    # No tool result of the frozen pass was kept. The new owner's recovery may record the call it found
    # started (D3: the call and "interrupted" with what it printed), under its own epoch, never the frozen one.
    results = [(epoch, text or "") for _id, kind, epoch, text in rows if kind == 4]
    assert all(epoch > epoch_before for epoch, _text in results), rows
    assert not any("[exit code 0]" in text for _epoch, text in results), rows
    # The woken Gateway serves on: a new turn through it runs under a fresh claim.
    again = service.rpc(frozen).call("session.send", session_id=session, text="hello again")
    assert wait_final(service, frozen, again["id"])["state"] == "completed"


def test_p5_a_question_outlives_its_owner_and_is_answered_elsewhere(service: Service) -> None:
    a = service.rpc(0)
    session = a.call("session.create")["id"]
    asked = a.call("session.send", session_id=session, text="ask me which colour?")
    assert wait_final(service, 0, asked["id"], suspended=True)["state"] == "suspended"
    execution = service.sql(
        "SELECT e.id FROM executions e JOIN sessions x ON x.num = e.session_num WHERE x.id = %s "
        "AND e.state = 'suspended'",
        (session,),
    )[0][0]
    service.gateways[0].kill()  # the Gateway that ran it (and any lease it kept) is gone
    answerer = service.rpc(2)
    waiting = answerer.call("session.get", session_id=session)["waiting_question"]
    assert waiting is not None
    assert waiting["execution_id"] == execution
    answerer.call("session.answer", session_id=session, execution_id=execution, text="green")
    assert wait_final(service, 2, asked["id"])["state"] == "completed"
    texts = [e["text"] for e in answerer.call("session.history", session_id=session, limit=20)["items"]]
    assert any("green" in t for t in texts)
