"""Copying a whole store between a SQLite ``state.db`` (with its ``objects/``) and a PostgreSQL database.

Both backends keep the same tables with the same columns (the PostgreSQL migration mirrors the SQLite one),
so a copy moves rows as they are: session numbers, entry ids, heads, forks, labels, queues, executions and
objects keep their identity. The search index is not copied: the target rebuilds it (its upkeep indexes
every session from the start). The source is read in one consistent snapshot (a REPEATABLE READ, READ ONLY
transaction on PostgreSQL; one read transaction on SQLite), so Gateways may go on writing meanwhile.

Before anything is committed, the copy reads back what it wrote and compares it with the source: row
counts and a SHA-256 over every table's rows, and every object's bytes against its name. Any difference
and nothing is committed (PostgreSQL: the transaction is rolled back; SQLite: the new file, built beside
the target, is removed).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import sqlite3
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import msgspec
import psycopg

from anyy.domain.errors import AnyyError, Conflict
from anyy.storage.objects import ObjectFiles
from anyy.storage.postgres import migrate
from anyy.storage.postgres.core import hash_of
from anyy.storage.postgres.settings import DEFAULT_SETTING, connect
from anyy.storage.store_urls import redact

# Table → (its columns, in order; the key its rows are sorted by). `indexed_seq` is left out on purpose:
# the target indexes everything again.
TABLES: dict[str, tuple[tuple[str, ...], str]] = {
    "sessions": (
        (
            "num",
            "id",
            "kind",
            "title",
            "role",
            "provider",
            "model",
            "effort",
            "tools",
            "steering_mode",
            "follow_up_mode",
            "goal",
            "head",
            "forked_from",
            "fork_point",
            "status",
            "created_at",
            "updated_at",
            "origin",
            "workspace",
        ),
        "num",
    ),
    "entries": (("id", "parent", "run", "kind", "text", "data", "obj", "created_at"), "id"),
    "cross_links": (("child", "parent"), "child"),
    "objects": (("hash", "size", "media_type", "created_at"), "hash"),
    "object_refs": (("holder", "obj"), "holder, obj"),
    "submissions": (
        (
            "num",
            "id",
            "session_num",
            "kind",
            "text",
            "attachments",
            "state",
            "position",
            "version",
            "execution_id",
            "entry_id",
            "error",
            "created_at",
            "updated_at",
        ),
        "num",
    ),
    "executions": (("num", "id", "session_num", "state", "passes", "error", "note", "started_at", "ended_at"), "num"),
    "gc_queue": (("session_num",), "session_num"),
    "schedules": (
        (
            "id",
            "name",
            "timing",
            "prompt",
            "role",
            "provider",
            "model",
            "tools",
            "session_id",
            "paused",
            "considered",
            "next_at",
            "workspace",
            "created_at",
            "updated_at",
        ),
        "id",
    ),
    "schedule_runs": (
        ("schedule_id", "scheduled_for", "claimed_at", "session_id", "submission_id", "error"),
        "schedule_id, scheduled_for",
    ),
    # Background work (K2, K3).
    "delegated_tasks": (
        (
            "child_session_id",
            "parent_session_id",
            "parent_execution_id",
            "parent_call_id",
            "position",
            "brief",
            "depth",
            "state",
            "result",
            "is_error",
            "restarts",
            "delivered",
            "created_at",
            "updated_at",
        ),
        "child_session_id",
    ),
    "residents": (("id", "name", "session_id", "body", "created_at"), "id"),
    "resident_wakes": (("resident_id", "wake_at", "claimed_at"), "resident_id, wake_at"),
    # Money (Y1, Y2): what each call cost, and the budgets set per scope (holds of calls in flight are not
    # copied: a copy is made with no call running).
    "model_calls": (
        (
            "entry_id",
            "session_id",
            "created_at",
            "day",
            "provider",
            "model",
            "input",
            "output",
            "cache_read",
            "cache_write",
            "reasoning",
            "cost",
        ),
        "entry_id",
    ),
    "budgets": (("scope", "limit_nano", "updated_at"), "scope"),
    "budget_spend": (("scope", "period", "spent"), "scope, period"),
}
# Tables whose `num` PostgreSQL numbers itself (identity columns): copied numbers are inserted as they are.
IDENTITY_TABLES = ("sessions", "submissions", "executions")
_encode = msgspec.json.Encoder()


class CopyFailed(AnyyError):
    """A copy whose check failed, or whose source cannot be read: nothing was committed to the target."""

    code = "copy_failed"


class CopyReport(msgspec.Struct, kw_only=True):
    source: str
    target: str
    counts: dict[str, int]  # rows per table, identical on both sides
    digests: dict[str, str]  # SHA-256 of each table's rows, identical on both sides
    object_bytes: int


Rows = dict[str, list[tuple[Any, ...]]]


def read_tables(execute: Callable[[str], Iterable[tuple[Any, ...]]]) -> Rows:
    """Every copied table's rows, in key order (inside the caller's read transaction)."""
    return {
        table: [tuple(row) for row in execute(f"SELECT {', '.join(columns)} FROM {table} ORDER BY {key}")]
        for table, (columns, key) in TABLES.items()
    }


def digests(rows: Rows) -> dict[str, str]:
    out = {}
    for table, table_rows in rows.items():
        digest = hashlib.sha256()
        for row in table_rows:
            digest.update(_encode.encode(list(row)))
            digest.update(b"\n")
        out[table] = digest.hexdigest()
    return out


def _check_same(source: Rows, written: Rows, where: str) -> None:
    for table in TABLES:
        if len(source[table]) != len(written[table]):
            raise CopyFailed(
                f"the copy to {where} holds {len(written[table])} {table} rows where the source has "
                f"{len(source[table])}; nothing was committed"
            )
    expected, found = digests(source), digests(written)
    for table in TABLES:
        if expected[table] != found[table]:
            raise CopyFailed(
                f"the {table} copied to {where} differ from the source's (content hash {found[table][:12]} "
                f"instead of {expected[table][:12]}); nothing was committed"
            )


def _checked_body(object_hash: str, body: bytes, where: str) -> bytes:
    actual = hash_of(body)
    if actual != object_hash:
        raise CopyFailed(
            f"object {object_hash} in {where} is damaged (its bytes hash to {actual}); nothing was committed. "
            "Restore that object from a backup, or delete the session holding it, then copy again"
        )
    return body


# -- SQLite side --------------------------------------------------------------------------------------
def _sqlite_rows(conn: sqlite3.Connection) -> tuple[Rows, int]:
    """The rows and the highest session number ever used (AUTOINCREMENT's memory), in one read."""
    conn.execute("BEGIN")
    try:
        rows = read_tables(conn.execute)
        found = conn.execute("SELECT seq FROM sqlite_sequence WHERE name = 'sessions'").fetchone()
    finally:
        conn.execute("ROLLBACK")
    return rows, int(found[0]) if found else 0


def _sqlite_is_empty(db_path: Path) -> bool:
    if not db_path.exists():
        return True
    conn = sqlite3.connect(db_path)
    try:
        found = conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'sessions'").fetchone()
        return found is None or conn.execute("SELECT 1 FROM sessions LIMIT 1").fetchone() is None
    finally:
        conn.close()


def _new_sqlite(db_path: Path) -> sqlite3.Connection:
    """An empty ``state.db`` with the SQLite store's schema (its own migrations)."""
    from anyy.storage.sqlite import SqliteStore

    SqliteStore(db_path, objects_dir=db_path.parent / "objects", profile="copy").close()
    return sqlite3.connect(db_path, isolation_level=None)


# -- PostgreSQL side ----------------------------------------------------------------------------------
@contextlib.contextmanager
def _pg_snapshot(conn: psycopg.Connection[Any]) -> Iterator[None]:
    """One consistent read of the whole database, while writers go on."""
    with conn.transaction():
        conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
        yield


def _pg_rows(conn: psycopg.Connection[Any]) -> tuple[Rows, int, dict[str, bytes]]:
    with _pg_snapshot(conn):
        rows = read_tables(lambda sql: conn.execute(sql).fetchall())
        found = conn.execute("SELECT last_value FROM sessions_num_seq").fetchone()
        bodies = {h: bytes(b) for h, b in conn.execute("SELECT hash, body FROM objects").fetchall()}
    return rows, int(found[0]) if found else 0, bodies


def _pg_is_empty(conn: psycopg.Connection[Any]) -> bool:
    found = conn.execute("SELECT EXISTS (SELECT 1 FROM sessions) OR EXISTS (SELECT 1 FROM objects)").fetchone()
    return not (found and found[0])


def _entries_for_postgres(rows: Rows, bodies: dict[str, bytes], now: float) -> None:
    """PostgreSQL text cannot hold NUL: an entry whose text does becomes an object, as the store does."""
    known = {row[0] for row in rows["objects"]}
    for index, row in enumerate(rows["entries"]):
        text = row[4]
        if text is not None and "\x00" in text:
            body = text.encode("utf-8")
            obj = hash_of(body)
            rows["entries"][index] = (*row[:4], None, row[5], obj, row[7])
            bodies[obj] = body
            if obj not in known:
                rows["objects"].append((obj, len(body), "text/plain; charset=utf-8", now))
                known.add(obj)
            rows["object_refs"].append((row[0], obj))
    rows["objects"].sort()
    rows["object_refs"].sort()


def _insert_rows(conn: psycopg.Connection[Any], rows: Rows, bodies: dict[str, bytes], *, top_session: int) -> None:
    """Write every table's rows (objects with their bodies), then move the identity sequences past them
    (the sessions' past ``top_session``, the highest number the source ever used)."""
    for table, (columns, _key) in TABLES.items():
        if not rows[table]:
            continue
        overriding = " OVERRIDING SYSTEM VALUE" if table in IDENTITY_TABLES else ""
        marks = ", ".join(["%s"] * len(columns))
        with conn.cursor() as cur:
            if table == "objects":
                cur.executemany(
                    "INSERT INTO objects (hash, size, media_type, created_at, body) VALUES (%s, %s, %s, %s, %s)",
                    [(*row, bodies[row[0]]) for row in rows[table]],
                )
            else:
                cur.executemany(f"INSERT INTO {table} ({', '.join(columns)}){overriding} VALUES ({marks})", rows[table])
    for table in IDENTITY_TABLES:
        floor = top_session if table == "sessions" else 0
        conn.execute(
            f"SELECT setval(pg_get_serial_sequence('{table}', 'num'), "
            f"greatest((SELECT coalesce(max(num), 0) FROM {table}), %s, 1))",
            (floor,),
        )


def copy_sqlite_to_postgres(
    db_path: Path,
    objects_dir: Path,
    url: str,
    *,
    force: bool = False,
    setting: str = DEFAULT_SETTING,
    schema: str | None = None,
) -> CopyReport:
    """Copy a SQLite store into the PostgreSQL database at ``url`` (refused if not empty, unless ``force``);
    ``schema``: into that schema of the database (as ``PostgresStore`` takes it)."""
    source = sqlite3.connect(db_path, isolation_level=None)
    try:
        rows, top_session = _sqlite_rows(source)
    finally:
        source.close()
    files = ObjectFiles(objects_dir)
    bodies = {h: _checked_body(h, files.get(h), str(objects_dir)) for h, *_ in rows["objects"]}
    _entries_for_postgres(rows, bodies, now=time.time())
    where = redact(url)
    conn = connect(url, setting=setting, schema=schema)
    try:
        if schema is not None:
            conn.execute(f'CREATE SCHEMA IF NOT EXISTS "{schema}"')
        migrate.apply(conn, where=where)
        with conn.transaction():
            if not _pg_is_empty(conn):
                if not force:
                    raise Conflict(
                        f"the database {where} already holds sessions or objects: nothing was copied. Copy into "
                        "an empty database, or add --force to replace what it holds"
                    )
                conn.execute(f"TRUNCATE {', '.join(TABLES)}, entry_words")
            _insert_rows(conn, rows, bodies, top_session=top_session)
            written = read_tables(lambda sql: conn.execute(sql).fetchall())
            _check_same(rows, written, where)
            size = 0
            for object_hash, body in conn.execute("SELECT hash, body FROM objects").fetchall():
                size += len(_checked_body(object_hash, bytes(body), where))
    finally:
        conn.close()
    return _report(str(db_path), where, rows, size)


def export_postgres(conn: psycopg.Connection[Any], db_path: Path, objects_dir: Path, *, where: str) -> CopyReport:
    """Write the database's consistent snapshot as a new SQLite store at ``db_path`` (which must not exist),
    its objects into ``objects_dir``; checked before it is kept."""
    rows, top_session, bodies = _pg_rows(conn)
    for object_hash, body in bodies.items():
        _checked_body(object_hash, body, where)
    target = _new_sqlite(db_path)
    try:
        target.execute("BEGIN IMMEDIATE")
        for table, (columns, _key) in TABLES.items():
            marks = ", ".join("?" * len(columns))
            target.executemany(f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({marks})", rows[table])
        target.execute("UPDATE sqlite_sequence SET seq = max(seq, ?) WHERE name = 'sessions'", (top_session,))
        target.execute(
            "INSERT INTO sqlite_sequence (name, seq) SELECT 'sessions', ? "
            "WHERE NOT EXISTS (SELECT 1 FROM sqlite_sequence WHERE name = 'sessions')",
            (top_session,),
        )
        written = read_tables(target.execute)
        _check_same(rows, written, str(db_path))
        files = ObjectFiles(objects_dir)
        for object_hash, body in bodies.items():
            files.put(body)
            _checked_body(object_hash, files.get(object_hash), str(objects_dir))
        target.execute("COMMIT")
    except BaseException:
        target.close()
        for suffix in ("", "-wal", "-shm"):
            Path(f"{db_path}{suffix}").unlink(missing_ok=True)
        raise
    target.close()
    return _report(where, str(db_path), rows, sum(len(b) for b in bodies.values()))


def copy_postgres_to_sqlite(
    url: str, db_path: Path, objects_dir: Path, *, force: bool = False, setting: str = DEFAULT_SETTING
) -> CopyReport:
    """Copy the PostgreSQL database at ``url`` into a SQLite store (refused if it holds sessions, unless
    ``force``). The new file is built beside the target and put in its place only once checked."""
    if not _sqlite_is_empty(db_path) and not force:
        raise Conflict(
            f"{db_path} already holds sessions: nothing was copied. Copy into a new file, or add --force to replace it"
        )
    where = redact(url)
    conn = connect(url, setting=setting)
    building = db_path.with_name(f".{db_path.name}.copy-{os.getpid()}")
    try:
        migrate.apply(conn, where=where)
        for suffix in ("", "-wal", "-shm"):
            Path(f"{building}{suffix}").unlink(missing_ok=True)
        report = export_postgres(conn, building, objects_dir, where=where)
    finally:
        conn.close()
    for suffix in ("-wal", "-shm"):
        Path(f"{db_path}{suffix}").unlink(missing_ok=True)
    os.replace(building, db_path)
    return msgspec.structs.replace(report, target=str(db_path))


def _report(source: str, target: str, rows: Rows, size: int) -> CopyReport:
    return CopyReport(
        source=source,
        target=target,
        counts={table: len(table_rows) for table, table_rows in rows.items()},
        digests=digests(rows),
        object_bytes=size,
    )
