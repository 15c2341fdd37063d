"""P3, P4, P5 at the store: leases with a fencing epoch between two Gateways' stores on one database."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from anyy.domain.entries import EntryKind, NewEntry
from anyy.domain.queue import NewSubmission
from anyy.domain.sessions import NewSession, Origin
from anyy.storage.ownership import LeaseLost, OwnedElsewhere
from anyy.storage.postgres import PostgresStore

NOTE = "taken over: interrupted"


@pytest.fixture
def pair(database: str) -> Iterator[tuple[PostgresStore, PostgresStore]]:
    a, b = PostgresStore(database, profile="a"), PostgresStore(database, profile="b")
    a.join_service("gw-a", lease=30.0, address="http://a", recovery_note=NOTE)
    b.join_service("gw-b", lease=30.0, address="http://b", recovery_note=NOTE)
    yield a, b
    a.close()
    b.close()


def expire(store: PostgresStore, session_id: str) -> None:
    """The lease runs out (as if its holder stopped renewing it 30 s ago)."""
    store.conn.execute(
        "UPDATE sessions SET lease_until = clock_timestamp() - interval '1 second' WHERE id = %s", (session_id,)
    )


def running(store: PostgresStore, session_id: str) -> str:
    sub = store.add_submission(session_id, NewSubmission(text="go"))
    return store.start_execution(session_id, [sub.id], record_inputs=True).id


def test_p3_a_claim_is_exclusive_and_every_claim_bumps_the_epoch(pair: tuple[PostgresStore, PostgresStore]) -> None:
    a, b = pair
    session = a.create_session(NewSession())
    assert a.claim_session(session.id).owned
    refused = b.claim_session(session.id)
    assert (refused.owned, refused.owner, refused.address) == (False, "gw-a", "http://a")
    a.release_session(session.id)
    assert b.claim_session(session.id).owned
    epoch = a.conn.execute("SELECT epoch, owner FROM sessions WHERE id = %s", (session.id,)).fetchone()
    assert epoch == (2, "gw-b")


def test_p3_a_write_under_a_lost_lease_writes_nothing(pair: tuple[PostgresStore, PostgresStore]) -> None:
    a, b = pair
    session = a.create_session(NewSession())
    assert a.claim_session(session.id).owned
    execution = running(a, session.id)
    before = len(a.path(session.id))
    expire(a, session.id)
    recovered = b.heartbeat().recovered  # b finds the dead-looking owner's session and recovers it
    assert [e.id for e in recovered] == [execution]
    assert b.get_execution(execution).state == "interrupted"
    with pytest.raises(LeaseLost):
        a.record_pass(execution, [NewEntry(kind=EntryKind.ASSISTANT, text="too late")])
    with pytest.raises(LeaseLost):
        a.set_execution_state(execution, "completed")
    path = b.path(session.id)
    assert len(path) == before + 1  # the recovery notice only
    assert path[-1].text.startswith(NOTE)  # then what was kept of its answer (D4)
    assert a.heartbeat().lost == []  # known lost already, when the write was refused
    with pytest.raises(LeaseLost):  # and every later write of that work stays refused
        a.append_entries(session.id, [NewEntry(kind=EntryKind.ASSISTANT, text="still too late")])
    assert len(b.path(session.id)) == before + 1


def test_p3_the_heartbeat_reports_a_lease_taken_over(pair: tuple[PostgresStore, PostgresStore]) -> None:
    a, b = pair
    session = a.create_session(NewSession())
    assert a.claim_session(session.id).owned
    expire(a, session.id)
    assert b.claim_session(session.id).owned
    assert a.heartbeat().lost == [session.id]
    assert a.heartbeat().lost == []  # said once
    with pytest.raises(LeaseLost):
        a.append_entries(session.id, [NewEntry(kind=EntryKind.ASSISTANT, text="after the takeover")])


def test_p3_a_live_owner_fences_out_other_gateways(pair: tuple[PostgresStore, PostgresStore]) -> None:
    a, b = pair
    session = a.create_session(NewSession())
    assert a.claim_session(session.id).owned
    with pytest.raises(OwnedElsewhere):
        b.append_entries(session.id, [NewEntry(kind=EntryKind.USER, text="not mine")])
    b.add_submission(session.id, NewSubmission(text="anyone may queue"))  # queue edits need no lease
    a.release_session(session.id)
    b.append_entries(session.id, [NewEntry(kind=EntryKind.USER, text="nobody's: anyone may")])


def test_p4_stops_and_answers_are_durable_and_handed_over_once(pair: tuple[PostgresStore, PostgresStore]) -> None:
    a, b = pair
    session = a.create_session(NewSession())
    assert a.claim_session(session.id).owned
    b.add_control(session.id, "stop", "exe_1")
    b.add_control(session.id, "answer", "exe_2", "green")
    assert b.heartbeat().controls == []  # not b's session
    controls = a.heartbeat().controls
    assert [(c.kind, c.execution_id, c.text) for c in controls] == [("stop", "exe_1", ""), ("answer", "exe_2", "green")]
    assert a.heartbeat().controls == []


def test_p3_gateway_connections_end_a_transaction_left_idle(pair: tuple[PostgresStore, PostgresStore]) -> None:
    a, _b = pair
    setting = a.conn.execute("SHOW idle_in_transaction_session_timeout").fetchone()
    assert setting == ("30s",)


def test_p3_a_late_renewal_is_no_takeover(pair: tuple[PostgresStore, PostgresStore]) -> None:
    """A busy Gateway renewing late keeps writing while nobody claimed the session: the epoch, not the
    clock, fences (a machine under load must not interrupt its own work)."""
    a, _b = pair
    session = a.create_session(NewSession())
    assert a.claim_session(session.id).owned
    execution = running(a, session.id)
    expire(a, session.id)
    a.record_pass(execution, [NewEntry(kind=EntryKind.ASSISTANT, text="late but still mine")])
    assert a.claim_session(session.id).owned
    assert a.conn.execute("SELECT epoch FROM sessions WHERE id = %s", (session.id,)).fetchone() == (1,)
    assert a.set_execution_state(execution, "completed").state == "completed"


def test_p7_a_connection_the_server_ended_is_replaced_by_the_next_call(
    pair: tuple[PostgresStore, PostgresStore],
) -> None:
    """What a database restart, a proxy's idle timeout or idle_in_transaction_session_timeout does to a
    Gateway's connection: it ends. The next call connects anew, with the same settings, and a read cut off
    is read again there; so is a unit of work cut off before it committed anything."""
    a, b = pair
    b.conn.execute("SELECT pg_terminate_backend(%s)", (a.conn.info.backend_pid,))
    assert a.list_sessions().items == []
    assert a.conn.execute("SHOW idle_in_transaction_session_timeout").fetchone() == ("30s",)
    session = a.create_session(NewSession())
    b.conn.execute("SELECT pg_terminate_backend(%s)", (a.conn.info.backend_pid,))
    sub = a.run_unit(lambda s: s.add_submission(session.id, NewSubmission(text="once", key="k1")))
    assert [s.id for s in b.list_submissions(session.id)] == [sub.id]


def wake(store: PostgresStore, session_id: str) -> bool:
    row = store.conn.execute("SELECT wake FROM sessions WHERE id = %s", (session_id,)).fetchone()
    assert row is not None
    return bool(row[0])


def test_p5_a_send_its_owner_acknowledges_is_the_owners_and_one_it_never_saw_is_claimed_once_the_lease_ends(
    pair: tuple[PostgresStore, PostgresStore],
) -> None:
    a, b = pair
    free, held = a.create_session(NewSession()), a.create_session(NewSession())
    sub = b.add_submission(free.id, NewSubmission(text="nobody holds it"))
    assert wake(a, free.id)  # until a start takes it (P7): the Gateway that took it claims it next
    assert b.claim_session(free.id).owned
    assert wake(a, free.id)  # a claim is no start
    b.start_execution(free.id, [sub.id], record_inputs=True)
    assert not wake(a, free.id)
    assert a.claim_session(held.id).owned
    b.add_submission(held.id, NewSubmission(text="the owner is told"))
    assert wake(a, held.id)
    a.took_work(held.id)  # the owner's hint arrived: the item is its business
    assert not wake(a, held.id)
    b.add_submission(held.id, NewSubmission(text="the owner died before the hint"))
    assert held.id not in b.heartbeat().woken  # its lease still runs
    expire(a, held.id)
    assert held.id in b.heartbeat().woken  # claimed for b, to run the queue
    assert b.claim_session(held.id).owned
    b.took_work(held.id)  # b read the queue
    assert not wake(a, held.id)
    assert b.heartbeat().woken == []


def test_p3_a_stop_request_reaches_the_gateway_at_its_heartbeat(pair: tuple[PostgresStore, PostgresStore]) -> None:
    a, b = pair
    assert not b.heartbeat().stop
    assert a.request_stop(["gw-b"]) == ["gw-b"]
    assert b.heartbeat().stop
    assert not a.heartbeat().stop
    assert sorted(a.request_stop()) == ["gw-a", "gw-b"]


def test_p7_a_dead_owners_unattended_work_that_had_not_begun_is_woken_not_interrupted(
    pair: tuple[PostgresStore, PostgresStore],
) -> None:
    a, b = pair
    scheduled = a.create_session(NewSession(kind="background", origin=Origin(kind="schedule", name="digest")))
    chat = a.create_session(NewSession())
    for session in (scheduled, chat):
        assert a.claim_session(session.id).owned
    unattended, attended = running(a, scheduled.id), running(a, chat.id)
    for session in (scheduled, chat):
        expire(a, session.id)  # a died right after taking the work, before its first model call
    beat = b.heartbeat()
    assert [e.id for e in beat.recovered] == [attended]  # a person's chat: interrupted (G3)
    assert beat.woken == [scheduled.id]  # the run: any live Gateway's to run from its start
    assert b.get_execution(unattended).state == "running"
    assert b.conn.execute("SELECT owner FROM sessions WHERE id = %s", (scheduled.id,)).fetchone() == ("gw-b",)
    assert b.heartbeat().recovered == []  # not recovered again while b holds it
