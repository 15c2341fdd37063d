"""P1: a profile's [store] url (or ANYY_STORE_URL) chooses PostgreSQL; each way it can be wrong is a clear
error that names the setting, never a traceback."""

from __future__ import annotations

import socket
from pathlib import Path

import psycopg
import pytest

from anyy.domain.sessions import NewSession
from anyy.profiles import Profile, create_profile
from anyy.profiles.store import open_store, store_backend
from anyy.storage.postgres import PostgresStore
from tests.postgres.conftest import Run
from tests.postgres.server import with_database


def _profile_with_url(home: Path, url: str) -> Profile:
    profile = create_profile(home, "default")
    text = profile.config_path.read_text(encoding="utf-8")
    assert '\nurl = ""\n' in text  # the [store] table of a new profile's config.toml
    profile.config_path.write_text(text.replace('\nurl = ""\n', f'\nurl = "{url}"\n'), encoding="utf-8")
    return profile


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _fails_naming_the_setting(anyy: Run, *words: str) -> str:
    result = anyy("sessions", "list")
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output + result.stderr
    assert result.stderr.startswith("error: ")
    for word in words:
        assert word in result.stderr, result.stderr
    return result.stderr


def test_p1_store_url_puts_the_profiles_sessions_in_postgresql(home: Path, database: str, anyy: Run) -> None:
    profile = _profile_with_url(home, database)
    assert store_backend(profile) == "postgresql"
    store = open_store(profile)
    try:
        assert isinstance(store, PostgresStore)
        session = store.create_session(NewSession(title="kept in postgres"))
    finally:
        store.close()
    result = anyy("sessions", "list")
    assert result.exit_code == 0, result.output
    assert session.id in result.stdout


def test_p1_env_overrides_config_and_is_named(
    home: Path, database: str, anyy: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    _profile_with_url(home, "")
    monkeypatch.setenv("ANYY_STORE_URL", with_database(database, "no_such_database_here"))
    _fails_naming_the_setting(anyy, "ANYY_STORE_URL", "no_such_database_here", "does not exist")


def test_p1_wrong_scheme_names_the_setting(home: Path, anyy: Run) -> None:
    _profile_with_url(home, "mysql://user:secret@db.example/anyy")
    message = _fails_naming_the_setting(anyy, "[store] url", "config.toml", "postgresql://")
    assert "secret" not in message  # the password is never echoed


def test_p1_malformed_url_names_the_setting(home: Path, anyy: Run) -> None:
    _profile_with_url(home, "postgresql://127.0.0.1:notaport/anyy")
    _fails_naming_the_setting(anyy, "[store] url", "config.toml")


def test_p1_unreachable_server_names_the_setting(home: Path, anyy: Run) -> None:
    _profile_with_url(home, f"postgresql://postgres@127.0.0.1:{_closed_port()}/anyy")
    _fails_naming_the_setting(anyy, "[store] url", "no PostgreSQL server answers")


def test_p1_missing_database_names_the_setting(home: Path, database: str, anyy: Run) -> None:
    _profile_with_url(home, with_database(database, "anyy_missing_db"))
    _fails_naming_the_setting(anyy, "[store] url", "anyy_missing_db", "does not exist", "createdb")


def test_p1_schema_newer_than_the_code_is_refused(home: Path, database: str, anyy: Run) -> None:
    PostgresStore(database).close()
    with psycopg.connect(database, autocommit=True) as conn:
        conn.execute("INSERT INTO schema_migrations (number, name, applied_at) VALUES (999, '0999_future.sql', 0)")
    _profile_with_url(home, database)
    _fails_naming_the_setting(anyy, "schema 999", "upgrade anyy", "[store] url")
