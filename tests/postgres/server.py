"""The PostgreSQL server the tests use, and one database of their own per test run.

The server's URL comes from ``ANYY_TEST_POSTGRES_URL``, else from the file ``scripts/setup-postgres`` writes
(``.cache/postgres-url`` in the repository). Each test process creates a database with a unique name on
first use, exports its URL (``ANYY_TEST_POSTGRES_RUN_URL``) so that child processes (the crash test's
writer) reach the same database, and drops it when the process exits.

Not a pytest module: the crash test's child process imports it too.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import secrets
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import psycopg

ROOT = Path(__file__).resolve().parents[2]
URL_FILE = ROOT / ".cache" / "postgres-url"
RUN_URL_ENV = "ANYY_TEST_POSTGRES_RUN_URL"
SKIP_ENV = "ANYY_TEST_ALLOW_SKIP"


class NoServer(Exception):
    """No PostgreSQL server answers at the configured URL."""


def server_url() -> str:
    url = os.environ.get("ANYY_TEST_POSTGRES_URL")
    if url:
        return url
    if URL_FILE.exists():
        return URL_FILE.read_text(encoding="utf-8").strip()
    return "postgresql://postgres@127.0.0.1:5432/test"


def skip_allowed() -> bool:
    """Whether the user opted out of the PostgreSQL tests (``ANYY_TEST_ALLOW_SKIP=postgres``)."""
    return "postgres" in os.environ.get(SKIP_ENV, "").replace(",", " ").split()


def with_database(url: str, dbname: str) -> str:
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path=f"/{dbname}"))


def _drop(url: str, dbname: str) -> None:
    try:
        with psycopg.connect(url, autocommit=True, connect_timeout=5) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{dbname}" WITH (FORCE)')
    except psycopg.Error:
        pass  # the server went away: nothing left to drop


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _drop_leftovers(conn: psycopg.Connection[tuple[object, ...]]) -> None:
    """Databases of earlier test processes that were killed before they could drop theirs."""
    for (name,) in conn.execute(
        "SELECT datname FROM pg_database WHERE datname ~ '^anyy_(test|pgtest)_[0-9]+_[0-9a-f]+$'"
    ).fetchall():
        pid = int(str(name).split("_")[2])
        if not _alive(pid):
            with contextlib.suppress(psycopg.Error):  # another test process dropped it first
                conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def create_database(prefix: str = "anyy_test") -> str:
    """A new empty database on the test server (dropped when this process exits); its URL."""
    url = server_url()
    dbname = f"{prefix}_{os.getpid()}_{secrets.token_hex(4)}"
    try:
        with psycopg.connect(url, autocommit=True, connect_timeout=5) as conn:
            _drop_leftovers(conn)
            conn.execute(f'CREATE DATABASE "{dbname}"')
    except psycopg.OperationalError as exc:
        raise NoServer(
            f"no PostgreSQL server answers at {url} ({exc}). Run `bash scripts/setup-postgres` (scripts/test "
            f"does), set ANYY_TEST_POSTGRES_URL, or opt out with {SKIP_ENV}=postgres"
        ) from None
    atexit.register(_drop, url, dbname)
    return with_database(url, dbname)


def run_database_url() -> str:
    """The database of this test run, created on first use (shared with child processes)."""
    url = os.environ.get(RUN_URL_ENV)
    if not url:
        url = create_database()
        os.environ[RUN_URL_ENV] = url
    return url


def require_postgres() -> str:
    """For pytest: the run's database URL, else a failure saying how to get a server; a skip only when the
    user opted out (ANYY_TEST_ALLOW_SKIP=postgres)."""
    import pytest

    try:
        return run_database_url()
    except NoServer as exc:
        if skip_allowed():
            pytest.skip(f"PostgreSQL tests skipped on request: {exc}")
        pytest.fail(str(exc), pytrace=False)
