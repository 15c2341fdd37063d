"""P7 with real Gateway processes: nothing acknowledged is stranded. A Gateway whose store connections are
ended right after it acknowledged a send runs the item all the same (it replaces the connection on the
failing call; what a break left unstarted is any Gateway's through the wake-up committed with it), and a
schedule's run whose claimant loses its store and is killed before starting it is run once by a survivor.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from anyy.domain.queue import NewSubmission
from anyy.domain.sessions import NewSession, Origin
from anyy.storage.postgres import PostgresStore
from tests.distributed.service import LEASE, Service, eventually
from tests.distributed.test_any_gateway import wait_final
from tests.fakes.tcp_proxy import TcpProxy
from tests.postgres.server import create_database, require_postgres

FAR = 4_102_444_800.0  # 2100: never due by itself
ROUNDS = 6


def terminate_connections(service: Service, index: int) -> int:
    """What a database restart or a proxy's idle timeout does to one Gateway: its connections end."""
    name = f"anyy-{service.gateways[index].pid}"
    rows = service.sql("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = %s", (name,))
    return len(rows)


def test_p7_connections_ended_right_after_an_acknowledgement_strand_nothing(service: Service) -> None:
    existing = [service.rpc(i).call("session.create")["id"] for i in range(3)]
    for n in range(ROUNDS):
        index = n % 3
        rpc = service.rpc(index)
        session = existing[index] if n % 2 else rpc.call("session.create")["id"]
        sent = rpc.call("session.send", session_id=session, text=f"round {n}", idempotency_key=f"p7-round-{n}")
        assert terminate_connections(service, index) >= 1
        assert wait_final(service, index, sent["id"])["state"] == "completed"
    assert not service.sql("SELECT id FROM sessions WHERE wake AND id = ANY(%s)", (existing,))


def test_p7_unattended_work_a_dead_gateway_took_before_its_first_model_call_is_run_by_a_survivor(
    service: Service,
) -> None:
    # A Gateway (here a store of its own in the test) takes a schedule's run and dies before the model is called:
    # its execution is running with nothing recorded, and its lease runs out.
    dead = PostgresStore(service.database, profile="default")
    try:
        dead.join_service("gw-killed", lease=LEASE, address="", recovery_note="recovered")
        origin = Origin(kind="schedule", name="nightly")
        made = NewSession(kind="background", title="nightly", provider="offline", model="offline", origin=origin)
        session = dead.create_session(made)
        assert dead.claim_session(session.id).owned
        sub = dead.add_submission(session.id, NewSubmission(text="Write the digest."))
        execution = dead.start_execution(session.id, [sub.id], record_inputs=True)
    finally:
        dead.close()  # killed: nothing given back
    waited = wait_final(service, 1, sub.id)
    assert waited["state"] == "completed", waited.get("error")
    rows = service.sql(
        "SELECT e.id, e.state FROM executions e JOIN sessions x ON x.num = e.session_num WHERE x.id = %s",
        (session.id,),
    )
    assert rows == [(execution.id, "completed")]


@pytest.fixture(scope="module")
def proxied(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Service, TcpProxy]]:
    """Three Gateways on one database; the first reaches it through a proxy the test controls."""
    require_postgres()
    made = Service(root=tmp_path_factory.mktemp("p7"), database=create_database("anyy_p7"))
    proxy, url = TcpProxy.before(made.database)
    try:
        made.add(url)
        made.add()
        made.add()
        yield made, proxy
    finally:
        made.close()
        proxy.close()


def test_p7_a_schedule_run_whose_claimant_died_before_starting_it_is_run_once_by_a_survivor(
    proxied: tuple[Service, TcpProxy],
) -> None:
    service, proxy = proxied
    claimant, survivor = service.rpc(0), service.rpc(1)
    claimant.call("schedule.create", name="digest", prompt="Write the digest.", at=FAR)
    # The claim of the run commits; the claim of its session (to start it) never reaches the database.
    proxy.cut_before(b"coalesce(g.address, '')")
    run = claimant.call("schedule.run_now", schedule="digest")
    assert proxy.cut_done.wait(60)
    service.gateways[0].kill()
    session = run["session_id"]
    assert session is not None

    def done() -> dict[str, object] | None:
        runs = survivor.call("schedule.runs", schedule="digest")
        return runs[0] if runs and runs[0]["outcome"] == "completed" else None

    eventually(done, 60, "the run completed by a survivor")
    count = service.sql(
        "SELECT count(*) FROM executions e JOIN sessions x ON x.num = e.session_num WHERE x.id = %s", (session,)
    )
    assert count == [(1,)]
    assert len(survivor.call("schedule.runs", schedule="digest")) == 1
