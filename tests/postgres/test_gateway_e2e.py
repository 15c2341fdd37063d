"""P1, P2 end to end: a session started on SQLite, copied to PostgreSQL, then continued there through a real
Gateway (`anyy gateway start`, `anyy chat`), the SQLite file left as it was."""

from __future__ import annotations

from pathlib import Path

from anyy.storage.postgres import PostgresStore
from anyy.storage.sqlite import SqliteStore
from tests.cli.live import StartGateway, chat_json, run, start_gateway

__all__ = ["start_gateway"]


def test_p1_p2_a_sqlite_session_continues_on_postgresql_through_the_gateway(
    start_gateway: StartGateway, home: Path, database: str
) -> None:
    start_gateway()
    code, first, _ = chat_json(home, "hello")
    assert code == 0
    session_id = first["session_id"]
    assert run(home, "gateway", "stop").returncode == 0

    copied = run(home, "store", "copy", "--to", database)
    assert copied.returncode == 0, copied.stderr
    config = home / "profiles" / "default" / "config.toml"
    config.write_text(config.read_text().replace('\nurl = ""\n', f'\nurl = "{database}"\n'))

    started = run(home, "gateway", "start")
    assert started.returncode == 0, started.stderr
    code, record, _ = chat_json(home, "--session", session_id, "and then?")
    assert code == 0
    assert record["session_id"] == session_id
    assert "«and then?»" in record["response"]

    store = PostgresStore(database, profile="default")
    try:
        path = store.path(session_id)
        assert [e.kind.label for e in path] == ["user", "assistant", "user", "assistant"]
        assert path[2].text == "and then?"
        assert [s.id for s in store.list_sessions().items] == [session_id]
    finally:
        store.close()
    sqlite = SqliteStore.open_profile(home / "profiles" / "default", profile="default")
    try:
        assert len(sqlite.path(session_id)) == 2  # what stayed behind is untouched
    finally:
        sqlite.close()
