"""P7 on SQLite: there is no connection to break, but a database another program keeps locked (a backup
tool, a second process holding a write transaction) for longer than the store's busy timeout refuses the
request with the same retryable ``store_unavailable`` code as an unreachable PostgreSQL, and nothing of it
is written; once the lock is gone the same request succeeds."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from commons import jsonrpc
from tests.fakes.gateways import LiveGateway

BUSY_WAIT = 60.0  # the store waits its busy timeout (10 s) before it gives up


def test_p7_a_sqlite_database_locked_by_another_program_refuses_with_store_unavailable(tmp_path: Path) -> None:
    with LiveGateway(tmp_path, serve=False) as live:
        assert live.dispatcher is not None
        session = live.call("session.create")["id"]
        locker = sqlite3.connect(live.profile.path / "state.db", isolation_level=None)
        try:
            locker.execute("BEGIN IMMEDIATE")
            frame = jsonrpc.request("session.send", {"session_id": session, "text": "while locked"}, 1)
            raw = live.run(live.dispatcher.handle(frame, None), BUSY_WAIT)
            assert raw is not None
            reply = json.loads(raw)
            assert reply["error"]["code"] == jsonrpc.STORE_UNAVAILABLE, reply
            assert "locked" in reply["error"]["message"]
            assert "send it again" in reply["error"]["message"]
        finally:
            locker.execute("ROLLBACK")
            locker.close()
        assert live.call("session.queue.list", {"session_id": session}) == []
        sent = live.call("session.send", {"session_id": session, "text": "once unlocked"})
        assert live.call("session.wait", {"submission_id": sent["id"], "timeout": 0})["text"] == "once unlocked"
