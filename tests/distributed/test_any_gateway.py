"""P4: a client can use any Gateway of the service. Sends, steering, follow-ups and queue edits commit on
the Gateway that took them and wake the owner; stops and answers are durable control rows the owner
applies; events of a session another Gateway runs reach subscribers on every Gateway."""

from __future__ import annotations

from typing import Any

from anyy.domain.queue import FINAL_SUBMISSION_STATES
from tests.distributed.service import Service, eventually
from tests.fakes.gateways import MakeHold, is_state

FINAL = FINAL_SUBMISSION_STATES


def wait_final(service: Service, index: int, submission_id: str, *, suspended: bool = False) -> dict[str, Any]:
    """The submission once it has an outcome (or, with ``suspended``, waits on a question)."""
    rpc = service.rpc(index)
    settled = FINAL | {"suspended"} if suspended else FINAL

    def probe() -> dict[str, Any] | None:
        sub: dict[str, Any] = rpc.call("session.wait", submission_id=submission_id, timeout=2)
        return sub if sub["state"] in settled else None

    return eventually(probe, 60, f"submission {submission_id} settled")


def running_on(service: Service, session_id: str) -> str:
    rows = service.sql("SELECT owner FROM sessions WHERE id = %s AND lease_until > clock_timestamp()", (session_id,))
    assert rows, f"nobody holds session {session_id}"
    assert rows[0][0], f"nobody holds session {session_id}"
    return str(rows[0][0])


def test_p4_send_steer_and_follow_up_through_three_gateways(service: Service, hold: MakeHold) -> None:
    a, b, c = (service.rpc(i) for i in range(3))
    session = a.call("session.create")["id"]
    with service.ws(2) as watcher:  # a subscriber on a Gateway that runs nothing of it
        watcher.call("events.subscribe", {"session_id": session})
        held = hold()
        first = b.call("session.send", session_id=session, text=held.command)
        watcher.event(is_state("running"), timeout=60)
        steer = c.call("session.send", session_id=session, text="steer me", kind="steering")
        follow = a.call("session.send", session_id=session, text="then this", kind="follow_up")
        held.release()
        for sub in (first, steer, follow):
            assert wait_final(service, 0, sub["id"])["state"] == "completed"
        done = watcher.event(
            lambda e: (
                e.get("type") == "execution_state"
                and e.get("state") == "completed"
                and follow["id"] in e.get("submission_ids", [])
            ),
            timeout=30,
        )
        assert done["session_id"] == session
        appended = watcher.event(lambda e: e.get("type") == "entries_appended", timeout=30)
        assert appended["session_id"] == session
    texts = [
        e["text"]
        for e in reversed(b.call("session.history", session_id=session, limit=50)["items"])
        if e["kind"] == "user"
    ]
    assert texts == [held.command, "steer me", "then this"]  # each once, in the order the rules say


def test_p4_a_subscription_to_every_session_sees_a_remote_sessions_first_change(
    service: Service, hold: MakeHold
) -> None:
    a = service.rpc(0)
    session = a.call("session.create")["id"]  # run by another Gateway, busy before the subscription
    held = hold()
    first = a.call("session.send", session_id=session, text=held.command)
    eventually(lambda: a.call("session.get", session_id=session)["running_execution"], 60, "the turn running")
    queued = a.call("session.send", session_id=session, text="then this", kind="follow_up")
    with service.ws(2) as watcher:
        watcher.call("events.subscribe", {})
        # The session's first change since the subscription: one transaction, one hint.
        a.call("session.queue.update", submission_id=queued["id"], text="then that")
        changed = watcher.event(lambda e: e.get("type") == "queue_changed" and e.get("session_id") == session, 30)
        assert [p["text"] for p in changed["pending"]] == ["then that"]
        held.release()
        assert wait_final(service, 0, queued["id"])["state"] == "completed"
        appended = watcher.event(
            lambda e: (
                e.get("type") == "entries_appended" and "then that" in [x.get("text") for x in e.get("entries", [])]
            ),
            30,
        )
        assert appended["session_id"] == session
        fresh = a.call("session.create")["id"]  # created and run elsewhere after the subscription
        sent = a.call("session.send", session_id=fresh, text="hello fresh")
        assert wait_final(service, 0, sent["id"])["state"] == "completed"
        watcher.event(
            lambda e: (
                e.get("type") == "entries_appended"
                and e.get("session_id") == fresh
                and "hello fresh" in [x.get("text") for x in e.get("entries", [])]
            ),
            30,
        )
    assert wait_final(service, 0, first["id"])["state"] == "completed"


def test_p4_a_stop_through_another_gateway_names_the_execution_it_captured(service: Service, hold: MakeHold) -> None:
    a, b = service.rpc(0), service.rpc(1)
    session = a.call("session.create")["id"]
    held = hold()
    with service.ws(1) as watcher:
        watcher.call("events.subscribe", {"session_id": session})
        first = a.call("session.send", session_id=session, text=held.command)
        running = watcher.event(
            lambda e: e.get("type") == "execution_state" and e.get("state") == "running", timeout=60
        )
        owner = running_on(service, session)
        assert b.call("session.stop", session_id=session, execution_id=running["execution_id"])["stopped"] is True
        held.release()
        stopped = wait_final(service, 1, first["id"])
        assert stopped["state"] == "interrupted", stopped
    # A stop relayed late (the execution it names has ended) never reaches the next turn.
    second_hold = hold()
    second = b.call("session.send", session_id=session, text=second_hold.command)
    with service.ws(2) as watcher:
        watcher.call("events.subscribe", {"session_id": session})
        nxt = eventually(
            lambda: b.call("session.get", session_id=session)["running_execution"], 60, "second turn running"
        )
        assert nxt != running["execution_id"]
        num = service.sql("SELECT num FROM sessions WHERE id = %s", (session,))[0][0]
        service.sql(
            "INSERT INTO session_controls (session_num, kind, execution_id) VALUES (%s, 'stop', %s)",
            (num, running["execution_id"]),
        )
        service.sql("SELECT pg_notify('anyy', %s)", (f"control:{session}:test",))
        eventually(
            lambda: not service.sql("SELECT 1 FROM session_controls WHERE session_num = %s", (num,)),
            30,
            "the stale stop consumed",
        )
        assert b.call("session.execution", session_id=session, execution_id=nxt)["state"] == "running"
        second_hold.release()
        assert wait_final(service, 2, second["id"])["state"] == "completed"
    assert owner


def test_p4_a_question_is_answered_through_another_gateway(service: Service) -> None:
    a, c = service.rpc(0), service.rpc(2)
    session = a.call("session.create")["id"]
    asked = a.call("session.send", session_id=session, text="ask me which colour?")
    assert wait_final(service, 0, asked["id"], suspended=True)["state"] == "suspended"
    waiting = c.call("session.get", session_id=session)["waiting_question"]
    assert waiting is not None
    c.call("session.answer", session_id=session, execution_id=waiting["execution_id"], text="green")
    assert wait_final(service, 2, asked["id"])["state"] == "completed"
    texts = [e["text"] for e in c.call("session.history", session_id=session, limit=20)["items"]]
    assert any("green" in t for t in texts)


def test_p4_forks_and_deletes_across_gateways_keep_shared_history(service: Service) -> None:
    a, b, c = (service.rpc(i) for i in range(3))
    session = a.call("session.create")["id"]
    first = a.call("session.send", session_id=session, text="hello one")
    assert wait_final(service, 0, first["id"])["state"] == "completed"
    fork = b.call("session.fork", session_id=session)["session"]["id"]
    c.call("session.delete", session_id=session)
    more = c.call("session.send", session_id=fork, text="hello two")
    assert wait_final(service, 1, more["id"])["state"] == "completed"
    history = a.call("session.history", session_id=fork, limit=20)["items"]
    assert [e["text"] for e in reversed(history) if e["kind"] == "user"] == ["hello one", "hello two"]
