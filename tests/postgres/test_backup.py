"""A5 on PostgreSQL: `anyy backup` of a profile whose sessions live in PostgreSQL takes a consistent
snapshot while its Gateway runs; `anyy restore` puts that snapshot back into the database."""

from __future__ import annotations

from pathlib import Path

from anyy.domain.entries import Attachment, EntryKind, NewEntry
from anyy.domain.queue import NewSubmission
from anyy.domain.sessions import NewSession
from anyy.profiles import create_profile
from anyy.profiles.backup import backup_profile, read_manifest
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


def test_a5_p1_backup_counts_the_objects_of_a_postgresql_profile(database: str, tmp_path: Path) -> None:
    """The objects of a PostgreSQL store live in the database, not in the profile's folder: the backup's
    report and manifest count the ones its snapshot wrote (it said 0)."""
    profile = create_profile(tmp_path / "home", "pg")
    profile.config_path.write_text(profile.config_path.read_text().replace('\nurl = ""\n', f'\nurl = "{database}"\n'))
    store = PostgresStore(database, profile="pg")
    try:
        session = store.create_session(NewSession(title="with bodies"))
        store.append_entries(session.id, [NewEntry(kind=EntryKind.ASSISTANT, text="x" * (70 * 1024))])
        ref = store.put_object(b"attached", media_type="text/plain")
        store.add_submission(
            session.id, NewSubmission(text="see", attachments=[Attachment(object=ref.hash, name="a.txt", size=8)])
        )
    finally:
        store.close()
    report = backup_profile(profile, tmp_path / "pg.tar.gz")
    assert report.counts.objects == 2
    assert read_manifest(tmp_path / "pg.tar.gz").counts.objects == 2
    assert report.missing_objects == []
