"""P2: `anyy store copy` moves a profile's sessions to PostgreSQL and back to a SQLite file, checked before
anything is committed."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from anyy.domain.entries import Attachment, EntryKind, LabelData, NewEntry
from anyy.domain.queue import NewSubmission
from anyy.domain.sessions import NewSession
from anyy.profiles import Profile, create_profile
from anyy.storage.objects import ObjectFiles
from anyy.storage.postgres import PostgresStore
from anyy.storage.protocol import SessionStore
from anyy.storage.sqlite import SqliteStore
from tests.conformance.support import BIG, assistant, drain, user
from tests.postgres.conftest import Run


def _fill(store: SessionStore) -> None:
    """Every kind of thing a copy must keep: trees with forks and navigation, labels, large bodies,
    attachments, queues in several states, executions, a deleted session a fork still reaches."""
    logo = store.put_object(b"\x89PNG the logo", media_type="image/png")
    chat = store.create_session(NewSession(title="chat to copy"))
    first = store.append_entries(
        chat.id,
        [
            user(
                "hello okapi", [Attachment(object=logo.hash, name="logo.png", media_type="image/png", size=logo.size)]
            ),
            assistant("hi there"),
            user("a long paste " + "x" * BIG),
        ],
    )
    store.append_entries(
        chat.id, [NewEntry(kind=EntryKind.LABEL, text="checkpoint", data=LabelData(target=first[0].id))]
    )
    store.set_head(chat.id, first[1].id)
    store.append_entries(chat.id, [user("another branch"), assistant("branch answer")])
    fork = store.fork_session(chat.id, first[0].id, title="the fork")
    store.append_entries(fork.id, [assistant("fork reply")])
    parent = store.create_session(NewSession(title="deleted parent"))
    store.append_entries(parent.id, [user("kept by a fork"), assistant("still reachable")])
    child = store.fork_session(parent.id)
    store.append_entries(child.id, [user("child goes on")])
    store.delete_session(parent.id)
    job = store.create_session(NewSession(title="a job", kind="background"))
    done = store.add_submission(job.id, NewSubmission(text="run the report"))
    execution = store.start_execution(job.id, [done.id], record_inputs=True)
    store.record_pass(execution.id, [assistant("report written")])
    store.set_execution_state(execution.id, "completed")
    store.add_submission(job.id, NewSubmission(text="waiting"))
    cancelled = store.add_submission(job.id, NewSubmission(kind="follow_up", text="never mind"))
    store.cancel_submission(cancelled.id)
    drain(store)


def _view(store: SessionStore) -> dict[str, Any]:
    """Everything the protocol shows of every session."""
    out: dict[str, Any] = {}
    for kind in ("chat", "background"):
        for session in store.list_sessions(kind=kind, limit=100).items:
            out[session.id] = {
                "session": session,
                "path": store.path(session.id),
                "tree": store.tree(session.id),
                "context": store.context(session.id),
                "queue": store.list_submissions(
                    session.id, states=("pending", "cancelled", "completed", "taken", "cleared")
                ),
                "executions": store.list_executions(session.id),
            }
    out["search"] = [
        sorted((h.session_id, h.entry_id, h.snippet) for h in store.search(query))
        for query in ("okapi", "reachable", "branch*", '"long paste"')
    ]
    return out


def _profile_on_sqlite(home: Path) -> Profile:
    profile = create_profile(home, "default")
    store = SqliteStore.open_profile(profile.path, profile=profile.name)
    try:
        _fill(store)
    finally:
        store.close()
    return profile


def _sqlite_view(db_path: Path) -> dict[str, Any]:
    store = SqliteStore(db_path, objects_dir=db_path.parent / "objects", profile="default")
    try:
        drain(store)
        return _view(store)
    finally:
        store.close()


def _postgres_view(url: str) -> dict[str, Any]:
    store = PostgresStore(url, profile="default")
    try:
        drain(store)
        return _view(store)
    finally:
        store.close()


def test_p2_copy_to_postgresql_and_back_keeps_everything(home: Path, database: str, anyy: Run, tmp_path: Path) -> None:
    profile = _profile_on_sqlite(home)
    original = _sqlite_view(profile.db_path)
    assert len(original) == 5  # four live sessions and the searches
    assert all(original["search"])  # each query finds something

    result = anyy("store", "copy", "--to", database)
    assert result.exit_code == 0, result.output
    assert "verified" in result.stdout
    assert "[store]" in result.stdout
    assert _postgres_view(database) == original
    store = PostgresStore(database, profile="default")
    try:
        attachments = [
            attachment["object"]
            for key, session in original.items()
            if key != "search"
            for entry in session["path"]
            for attachment in entry.data.get("attachments", [])
        ]
        assert len(attachments) == 2  # the chat's and its fork's (the same entry, inherited)
        assert all(store.read_object(obj) == b"\x89PNG the logo" for obj in attachments)
    finally:
        store.close()

    back = tmp_path / "back" / "state.db"
    back.parent.mkdir()
    result = anyy("store", "copy", "--to", str(back), env={"ANYY_STORE_URL": database})
    assert result.exit_code == 0, result.output
    assert _sqlite_view(back) == original


def test_p2_copy_refuses_a_target_with_sessions_unless_forced(
    home: Path, database: str, anyy: Run, tmp_path: Path
) -> None:
    _profile_on_sqlite(home)
    assert anyy("store", "copy", "--to", database).exit_code == 0
    again = anyy("store", "copy", "--to", database)
    assert again.exit_code == 1
    assert "already holds sessions" in again.stderr
    assert "--force" in again.stderr
    assert anyy("store", "copy", "--to", database, "--force").exit_code == 0

    back = tmp_path / "state.db"
    env = {"ANYY_STORE_URL": database}
    assert anyy("store", "copy", "--to", str(back), env=env).exit_code == 0
    refused = anyy("store", "copy", "--to", str(back), env=env)
    assert refused.exit_code == 1
    assert "already holds sessions" in refused.stderr
    assert anyy("store", "copy", "--to", str(back), "--force", env=env).exit_code == 0


def test_p2_a_failed_check_commits_nothing(home: Path, database: str, anyy: Run) -> None:
    profile = _profile_on_sqlite(home)
    objects = ObjectFiles(profile.objects_dir)
    damaged = next(p for p in profile.objects_dir.rglob("*") if p.is_file())
    damaged.write_bytes(b"not what it was")  # a disk error: the bytes no longer match their name
    assert objects.hash_of(damaged.read_bytes()) != damaged.name

    result = anyy("store", "copy", "--to", database)
    assert result.exit_code == 1
    assert "damaged" in result.stderr
    assert "nothing was committed" in result.stderr
    assert "Traceback" not in result.output
    store = PostgresStore(database, profile="default")
    try:
        assert store.list_sessions().items == []
    finally:
        store.close()


@pytest.mark.parametrize("target", ["mysql://x/y"])
def test_p2_copy_from_sqlite_needs_a_postgresql_target(home: Path, anyy: Run, target: str) -> None:
    _profile_on_sqlite(home)
    result = anyy("store", "copy", "--to", target)
    assert result.exit_code == 2
    assert "postgresql://" in result.stderr


def test_p2_copy_back_needs_an_existing_folder(home: Path, database: str, anyy: Run, tmp_path: Path) -> None:
    create_profile(home, "default")
    target = tmp_path / "no-such-folder" / "state.db"
    result = anyy("store", "copy", "--to", str(target), env={"ANYY_STORE_URL": database})
    assert result.exit_code == 2
    assert "does not exist" in result.stderr
    assert not target.parent.exists()


def test_p2_copy_back_to_the_profiles_own_sqlite_store(home: Path, database: str, anyy: Run) -> None:
    profile = _profile_on_sqlite(home)
    original = _sqlite_view(profile.db_path)
    assert anyy("store", "copy", "--to", database).exit_code == 0
    for suffix in ("", "-wal", "-shm"):
        Path(f"{profile.db_path}{suffix}").unlink(missing_ok=True)
    result = anyy("store", "copy", "--to", "sqlite", env={"ANYY_STORE_URL": database})
    assert result.exit_code == 0, result.output
    assert str(profile.db_path) in result.stdout
    assert "remove url under [store]" in result.stdout
    assert _sqlite_view(profile.db_path) == original


def test_p2_copy_without_the_postgresql_driver_says_what_to_install(home: Path, tmp_path: Path) -> None:
    create_profile(home, "default")
    probe = (
        "import sys\n"
        "sys.modules['psycopg'] = None  # as if anyy[postgres] were not installed\n"
        "from anyy.cli.main import main\n"
        "main(['store', 'copy', '--to', 'postgresql://anyy@127.0.0.1:1/none'])\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe],
        env={**os.environ, "ANYY_HOME": str(home)},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    assert "pip install 'anyy[postgres]'" in done.stderr


@pytest.mark.parametrize(
    ("trigger", "said"),
    [
        # The database drops one message on its way in: the row counts differ.
        ("IF NEW.text = 'hi there' THEN RETURN NULL; END IF; RETURN NEW;", "entries rows where the source has"),
        # The database changes a message on its way in: the counts agree, the content hash does not.
        ("NEW.text := replace(NEW.text, 'okapi', 'zebra'); RETURN NEW;", "differ from the source's (content hash"),
    ],
    ids=["a row lost", "a row changed"],
)
def test_p2_a_copy_that_does_not_match_its_source_commits_nothing(
    home: Path, database: str, anyy: Run, trigger: str, said: str
) -> None:
    import psycopg

    _profile_on_sqlite(home)
    PostgresStore(database, profile="default").close()  # the schema, so that a trigger can sit on it
    with psycopg.connect(database, autocommit=True) as conn:
        conn.execute(f"CREATE FUNCTION tamper() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN {trigger} END $$")
        conn.execute("CREATE TRIGGER tamper BEFORE INSERT ON entries FOR EACH ROW EXECUTE FUNCTION tamper()")
    result = anyy("store", "copy", "--to", database)
    assert result.exit_code == 1, result.output
    assert said in result.stderr
    assert "nothing was committed" in result.stderr
    with psycopg.connect(database) as conn:
        assert conn.execute("SELECT count(*) FROM sessions").fetchone() == (0,)
        assert conn.execute("SELECT count(*) FROM entries").fetchone() == (0,)
