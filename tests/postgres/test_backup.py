"""A5 on PostgreSQL: `anyy backup` of a profile whose sessions live in PostgreSQL takes a consistent
snapshot while its Gateway runs; `anyy restore` puts that snapshot back into the database."""

from __future__ import annotations

from pathlib import Path

from anyy.storage.postgres import PostgresStore
from tests.cli.live import chat_json, run


def _entries(url: str, session_id: str) -> list[str]:
    store = PostgresStore(url, profile="default")
    try:
        return [entry.text for entry in store.path(session_id)]
    finally:
        store.close()


def test_a5_p1_backup_while_the_gateway_runs_and_restore_into_postgresql(
    home: Path, database: str, tmp_path: Path
) -> None:
    assert run(home, "profile", "create", "default").returncode == 0
    config = home / "profiles" / "default" / "config.toml"
    config.write_text(config.read_text().replace('\nurl = ""\n', f'\nurl = "{database}"\n'))
    assert run(home, "gateway", "start").returncode == 0
    try:
        code, first, _ = chat_json(home, "hello")
        assert code == 0
        session_id = first["session_id"]
        archive = tmp_path / "pg-profile.tar.gz"
        backed = run(home, "backup", "-o", str(archive))  # the Gateway still runs: a consistent snapshot
        assert backed.returncode == 0, backed.stderr
        assert "1 sessions, 2 entries" in backed.stdout
        code, _, _ = chat_json(home, "--session", session_id, "after the backup")
        assert code == 0
    finally:
        run(home, "gateway", "stop")
    before = _entries(database, session_id)
    assert before[-2] == "after the backup"

    refused = run(home, "restore", str(archive))
    assert refused.returncode == 1
    assert "Traceback" not in refused.stderr
    restored = run(home, "restore", str(archive), "--force")
    assert restored.returncode == 0, restored.stderr
    assert _entries(database, session_id) == before[:2]  # the database is back at the snapshot
    assert not (home / "profiles" / "default" / "state.db").exists()  # the profile still uses PostgreSQL
    assert run(home, "gateway", "start").returncode == 0
    try:
        code, record, _ = chat_json(home, "--session", session_id, "goes on")
    finally:
        run(home, "gateway", "stop")
    assert code == 0, record
    assert _entries(database, session_id)[-2] == "goes on"
