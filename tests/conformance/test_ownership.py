"""P3: the ownership calls of the store protocol on every backend. A store no Gateway joined (and the
SQLite and in-memory stores always) owns every session: claims succeed, heartbeats find nothing, releases
change nothing, so the runtime has one code path whether or not Gateways share the store."""

from __future__ import annotations

from anyy.domain.queue import NewSubmission
from anyy.storage.protocol import SessionStore
from tests.conformance.support import new_session, user


def test_p3_a_store_no_gateway_joined_owns_every_session(store: SessionStore) -> None:
    session = new_session(store)
    claim = store.claim_session(session.id)
    assert claim.owned
    assert claim.recovered == []
    beat = store.heartbeat()
    assert (beat.lost, beat.recovered, beat.controls) == ([], [], [])
    store.release_session(session.id)
    sub = store.add_submission(session.id, NewSubmission(text="hi"))
    execution = store.start_execution(session.id, [sub.id], record_inputs=True)
    store.record_pass(execution.id, [user("more")])
    assert store.set_execution_state(execution.id, "completed").state == "completed"
    assert store.listen(lambda hint: None) is None
    assert store.list_gateways() == []


def test_p3_only_a_shared_store_takes_gateways_as_members(store: SessionStore, backend: str) -> None:
    joined = store.join_service("gw-test", lease=2.0, address="http://127.0.0.1:1", recovery_note="recovered")
    try:
        assert joined is (backend == "postgresql")
        session = new_session(store)
        assert store.claim_session(session.id).owned
        store.append_entries(session.id, [user("written under the lease")])
        gateways = store.list_gateways()
        if joined:
            assert [(g.id, g.alive, g.sessions) for g in gateways] == [("gw-test", True, [session.id])]
    finally:
        store.leave_service()
    assert store.list_gateways() == []
