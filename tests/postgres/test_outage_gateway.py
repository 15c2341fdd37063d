"""P7 through a real Gateway on PostgreSQL whose database goes away and comes back (a loopback TCP proxy
the test cuts and restores: what a database restart or a network outage does to the Gateway's
connections, without disturbing the machine's shared server).

Running turns hold their writes while the store is away and finish once it is back (none ends
``failed``); a turn whose outage outlasts ``[store] outage_hold`` ends ``interrupted`` with a note that
names the store; requests made meanwhile get ``store_unavailable`` and leave nothing behind. Nothing
sleeps to synchronise: the model is held by gates, the outage is observed through the proxy (the
Gateway's attempts to reconnect) and the events, each with a generous deadline."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from anyy.domain.model_io import TextDelta
from anyy.providers.gates import Gate
from commons import jsonrpc
from tests.fakes.gateways import LiveGateway, WsClient, error_code, wait_gate
from tests.fakes.tcp_proxy import TcpProxy

DEADLINE = 120.0
TURNS = 20


@pytest.fixture
def proxy(database: str) -> Iterator[tuple[TcpProxy, str]]:
    made, url = TcpProxy.before(database)
    yield made, url
    made.close()


def on_postgres(tmp_path: Path, url: str, *, outage_hold: float | None = None) -> LiveGateway:
    live = LiveGateway(tmp_path)
    config = live.profile.path / "config.toml"
    text = config.read_text().replace('\nurl = ""\n', f'\nurl = "{url}"\n', 1)
    if outage_hold is not None:
        text = text.replace("# outage_hold = 30.0", f"outage_hold = {outage_hold}", 1)
    config.write_text(text)
    return live


def until(probe: Callable[[], Any], what: str) -> Any:
    deadline = time.monotonic() + DEADLINE
    while True:
        found = probe()
        if found:
            return found
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {DEADLINE:.0f} s")
        time.sleep(0.05)


def settled(client: WsClient, submission: str) -> dict[str, Any]:
    """The submission once it has an outcome (``session.wait`` in slices the client's calls allow)."""

    def probe() -> dict[str, Any] | None:
        found: dict[str, Any] = client.call("session.wait", {"submission_id": submission, "timeout": 5})
        return found if found["state"] not in ("pending", "taken") else None

    result: dict[str, Any] = until(probe, f"submission {submission} settled")
    return result


def held_turns(live: LiveGateway, client: WsClient, count: int) -> tuple[list[tuple[str, str]], list[Gate]]:
    """``count`` sessions, each with a turn held mid-answer by a gate: (session id, submission id) each."""
    sessions, gates = [], []
    for n in range(count):
        gate = Gate(f"turn {n}")
        live.model.enqueue([TextDelta(text=f"part {n}, "), gate, TextDelta(text="and the rest")])
        gates.append(gate)
    for n in range(count):
        session = client.call("session.create")["id"]
        client.call("events.subscribe", {"session_id": session})
        sent = client.call("session.send", {"session_id": session, "text": f"turn {n}", "idempotency_key": f"t{n}"})
        sessions.append((session, sent["id"]))
    for gate in gates:
        wait_gate(gate)
    return sessions, gates


def test_p7_a_database_outage_during_20_running_turns_ends_none_of_them(
    tmp_path: Path, proxy: tuple[TcpProxy, str]
) -> None:
    cut, url = proxy
    with on_postgres(tmp_path, url) as live, live.ws() as client:
        sessions, gates = held_turns(live, client, TURNS)
        cut.cut()  # the database restarts: every connection ends, new ones are refused
        for gate in gates:
            gate.open()  # each turn's answer ends now, and its writes meet the outage
        until(lambda: cut.refused >= 2 * TURNS, "the Gateway trying to reach its store")
        cut.restore()
        for _session, submission in sessions:
            waited = settled(client, submission)
            assert waited["state"] == "completed", waited
        for session, _submission in sessions:
            executions = client.call("session.get", {"session_id": session})
            assert executions["running_execution"] is None
            history = client.call("session.history", {"session_id": session, "limit": 20})["items"]
            assert [e["kind"] for e in history if e["kind"] in ("user", "assistant", "notice")] == [
                "assistant",
                "user",
            ], history
            assert history[0]["text"].endswith("and the rest")


def test_p7_while_the_store_is_away_a_send_gets_store_unavailable_and_nothing_is_stored(
    tmp_path: Path, proxy: tuple[TcpProxy, str]
) -> None:
    cut, url = proxy
    with on_postgres(tmp_path, url) as live, live.ws() as client:
        session = client.call("session.create")["id"]
        cut.cut()
        send = {"session_id": session, "text": "refused", "idempotency_key": "refused-1"}
        assert error_code(lambda: client.call("session.send", send)) == jsonrpc.STORE_UNAVAILABLE
        assert error_code(lambda: client.call("session.create")) == jsonrpc.STORE_UNAVAILABLE
        with pytest.raises(jsonrpc.RpcError) as refused:
            client.call("session.list")
        assert refused.value.code == jsonrpc.STORE_UNAVAILABLE
        assert "send it again" in refused.value.message
        cut.restore()
        assert client.call("session.queue.list", {"session_id": session}) == []
        assert client.call("session.history", {"session_id": session})["items"] == []
        assert [s["id"] for s in client.call("session.list")["items"]] == [session]


def test_p7_a_turn_whose_outage_outlasts_the_bound_ends_interrupted_naming_the_store(
    tmp_path: Path, proxy: tuple[TcpProxy, str]
) -> None:
    cut, url = proxy
    with on_postgres(tmp_path, url, outage_hold=0.5) as live, live.ws() as client:
        [(_session, submission)], [gate] = held_turns(live, client, 1)
        cut.cut()
        gate.open()
        # The turn gave up waiting; its end is written once the store is back (as for a full disk, D1).
        client.event(lambda e: e.get("type") == "notice" and "(interrupted)" in e.get("text", ""), DEADLINE)
        cut.restore()
        ended = client.event(lambda e: e.get("type") == "execution_state" and e.get("state") == "interrupted", DEADLINE)
        assert "the session store was unreachable for" in (ended.get("note") or ""), ended
        assert "Gateway stopped" not in (ended.get("note") or "")
        assert settled(client, submission)["state"] == "interrupted"


def test_p7_a_start_cut_off_right_after_its_commit_runs_the_execution_it_made(
    tmp_path: Path, database: str, proxy: tuple[TcpProxy, str]
) -> None:
    cut, url = proxy
    with on_postgres(tmp_path, url) as live, live.ws() as client:
        session = client.call("session.create")["id"]
        live.model.enqueue([TextDelta(text="the answer")])
        # The start's transaction commits (the execution, its taken item, the user's message); the store is
        # gone before the next statement of its unit, which reads the execution back.
        cut.cut_before(b"FROM submissions WHERE execution_id", following=b"INSERT INTO executions")
        sent = client.call("session.send", {"session_id": session, "text": "go on", "idempotency_key": "cut-start"})
        assert cut.cut_done.wait(DEADLINE)
        until(lambda: cut.refused >= 1, "the Gateway trying to reach its store")
        cut.restore()
        assert settled(client, sent["id"])["state"] == "completed"
        history = client.call("session.history", {"session_id": session, "limit": 20})["items"]
        assert [e["kind"] for e in history] == ["assistant", "user"], history
        with psycopg.connect(database, autocommit=True) as conn:
            states = conn.execute(
                "SELECT e.state FROM executions e JOIN sessions x ON x.num = e.session_num WHERE x.id = %s",
                (session,),
            ).fetchall()
        assert states == [("completed",)]
