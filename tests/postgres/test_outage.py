"""P7 at the store: a connection that breaks (a database restart, a network cut) is replaced by the next call,
what is safe to run again is run again, a commit the break cut off is checked rather than repeated, and
while no server answers every call is refused with ``StoreUnavailable``, nothing of it written. The
database is taken away by a loopback TCP proxy in front of the test's own database (real sockets)."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from anyy.domain.errors import StoreUnavailable
from anyy.domain.queue import NewSubmission
from anyy.domain.sessions import NewSession
from anyy.storage.ownership import Hint
from anyy.storage.postgres import PostgresStore
from tests.fakes.tcp_proxy import TcpProxy

NOTE = "taken over: interrupted"


@pytest.fixture
def proxied(database: str) -> Iterator[tuple[PostgresStore, TcpProxy, PostgresStore]]:
    """A store whose connection goes through a proxy the test controls, and one connected directly."""
    proxy, url = TcpProxy.before(database)
    a, b = PostgresStore(url, profile="a"), PostgresStore(database, profile="b")
    a.join_service("gw-a", lease=30.0, address="http://a", recovery_note=NOTE)
    b.join_service("gw-b", lease=30.0, address="http://b", recovery_note=NOTE)
    yield a, proxy, b
    proxy.restore()
    a.close()
    b.close()
    proxy.close()


def texts(store: PostgresStore, session_id: str) -> list[str]:
    return [s.text for s in store.list_submissions(session_id)]


def test_p7_a_commit_cut_off_after_the_server_committed_stands_once(
    proxied: tuple[PostgresStore, TcpProxy, PostgresStore],
) -> None:
    a, proxy, b = proxied
    session = a.create_session(NewSession())
    proxy.cut_after(b"COMMIT")  # the server commits; the client never hears it
    sub = a.run_unit(lambda s: s.add_submission(session.id, NewSubmission(text="once")))
    assert proxy.cut_done.is_set()
    assert texts(b, session.id) == ["once"]
    assert b.get_submission(sub.id).text == "once"


def test_p7_a_unit_cut_off_before_its_commit_is_run_again_once(
    proxied: tuple[PostgresStore, TcpProxy, PostgresStore],
) -> None:
    a, proxy, b = proxied
    session = a.create_session(NewSession())
    proxy.cut_after(b"INSERT INTO submissions")  # the server inserts, then loses its client: rolled back
    a.run_unit(lambda s: s.add_submission(session.id, NewSubmission(text="once")))
    assert proxy.cut_done.is_set()
    assert texts(b, session.id) == ["once"]


def test_p7_while_no_server_answers_calls_are_refused_and_nothing_is_written(
    proxied: tuple[PostgresStore, TcpProxy, PostgresStore],
) -> None:
    a, proxy, b = proxied
    session = a.create_session(NewSession())
    proxy.cut()
    with pytest.raises(StoreUnavailable) as refused:
        a.run_unit(lambda s: s.add_submission(session.id, NewSubmission(text="refused")))
    assert refused.value.applied is False
    assert "cannot be reached" in str(refused.value)
    assert "nothing of this request was written" in str(refused.value)
    with pytest.raises(StoreUnavailable):
        a.run_unit(lambda s: s.list_sessions())
    assert texts(b, session.id) == []
    proxy.restore()
    a.run_unit(lambda s: s.add_submission(session.id, NewSubmission(text="later")))
    assert texts(b, session.id) == ["later"]


def test_p7_an_item_whose_gateway_lost_the_store_before_starting_it_is_any_gateways(
    proxied: tuple[PostgresStore, TcpProxy, PostgresStore],
) -> None:
    """Acknowledged (committed), then the Gateway's connection breaks before it could claim and start the
    item: the wake-up committed with it makes the session any live Gateway's once a lease passed."""
    a, proxy, b = proxied
    session = a.create_session(NewSession())
    sub = a.add_submission(session.id, NewSubmission(text="acknowledged"))
    proxy.cut()
    with pytest.raises(StoreUnavailable):
        a.run_unit(lambda s: s.claim_session(session.id))
    assert session.id not in b.heartbeat().woken  # the Gateway that took it has a lease's grace to start it
    b.conn.execute(  # as if a lease passed
        "UPDATE sessions SET lease_until = clock_timestamp() - interval '1 second' WHERE id = %s", (session.id,)
    )
    assert session.id in b.heartbeat().woken
    execution = b.start_execution(session.id, [sub.id], record_inputs=True)
    assert b.get_submission(sub.id).state == "taken"
    assert b.get_execution(execution.id).state == "running"
    assert session.id not in b.heartbeat().woken


def test_p7_a_lease_held_for_nothing_is_let_go_at_the_next_heartbeat(
    proxied: tuple[PostgresStore, TcpProxy, PostgresStore],
) -> None:
    """A release lost with the connection left the lease with a Gateway whose work there ended: its own
    heartbeat lets it go instead of renewing it forever, so what waits there is any Gateway's again (here,
    the heartbeat's own: it claims the session for the item, to run it)."""
    a, proxy, b = proxied
    session = a.create_session(NewSession())
    assert a.claim_session(session.id).owned
    proxy.cut()
    with pytest.raises(StoreUnavailable):
        a.run_unit(lambda s: s.release_session(session.id))
    proxy.restore()
    b.add_submission(session.id, NewSubmission(text="for whoever is alive"))
    assert session.id not in b.heartbeat().woken  # a's lease still runs
    assert session.id in a.heartbeat().woken  # let go, then claimed as any session with an item waiting


def test_p7_the_hint_listener_listens_again_after_its_connection_broke(
    proxied: tuple[PostgresStore, TcpProxy, PostgresStore],
) -> None:
    a, proxy, b = proxied
    heard: list[Hint] = []
    got = threading.Event()

    def on_hint(hint: Hint) -> None:
        heard.append(hint)
        got.set()

    listener = a.listen(on_hint)
    assert listener is not None
    try:
        before = proxy.accepted
        proxy.cut()
        proxy.restore()
        session = b.create_session(NewSession())
        deadline = 60.0
        while not got.is_set() and deadline > 0:
            b.hint(session.id, "work")  # hints sent while the listener reconnects are lost: send until heard
            got.wait(0.2)
            deadline -= 0.2
        assert got.is_set()
        assert proxy.accepted > before
        assert heard[-1].session_id == session.id
    finally:
        listener.close()


def test_p9_a_dead_gateways_row_goes_once_its_sessions_were_taken_over(
    proxied: tuple[PostgresStore, TcpProxy, PostgresStore],
) -> None:
    """A SIGKILLed Gateway never removes its row: a live one's heartbeat does, once the dead one was silent
    for 20 leases and owns nothing (before, `anyy gateway status` listed every Gateway that ever died)."""
    a, _proxy, b = proxied
    session = a.create_session(NewSession())
    assert a.claim_session(session.id).owned
    b.conn.execute("UPDATE gateways SET last_seen = clock_timestamp() - interval '1 hour' WHERE id = 'gw-a'")
    b.conn.execute(
        "UPDATE sessions SET lease_until = clock_timestamp() - interval '1 second' WHERE id = %s", (session.id,)
    )
    assert "gw-a" in [g.id for g in b.list_gateways()]
    b.heartbeat()  # takes over gw-a's session, then forgets gw-a
    assert [g.id for g in b.list_gateways()] == ["gw-b"]
