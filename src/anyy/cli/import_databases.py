"""Reading the SQLite databases of opencode and Hermes for ``anyy import`` (SPEC I1): the rows only,
read-only, handed to the pure parsers (:mod:`anyy.domain.imports.opencode`, ``….hermes``).

The file is untrusted: it is opened read-only (``mode=ro``), with the schema's own SQL not trusted
(``trusted_schema=OFF``) and cell sizes checked, and only plain SELECTs of the tables opencode writes
are run.
"""

from __future__ import annotations

import sqlite3
import urllib.parse
from pathlib import Path
from typing import TYPE_CHECKING

from anyy.domain.errors import AnyyError, InvalidInput

if TYPE_CHECKING:
    from anyy.domain.imports.model import ImportedSession


def _open(path: Path, agent: str) -> sqlite3.Connection | InvalidInput:
    if not path.is_file():
        return InvalidInput(f"{path}: not a file ({agent} keeps its sessions in one database file)")
    uri = f"file:{urllib.parse.quote(str(path.resolve()))}?mode=ro"
    try:
        conn = sqlite3.connect(uri, uri=True)
        conn.execute("PRAGMA trusted_schema = OFF")
        conn.execute("PRAGMA cell_size_check = ON")
        conn.execute("PRAGMA query_only = ON")
    except sqlite3.Error as exc:
        return InvalidInput(f"{path}: cannot open it as {agent}'s database ({exc})")
    return conn


def read_hermes(path: Path) -> list[ImportedSession | AnyyError]:
    from anyy.domain.imports import hermes

    conn = _open(path, "Hermes")
    if isinstance(conn, InvalidInput):
        return [conn]
    out: list[ImportedSession | AnyyError] = []
    try:
        sessions = conn.execute(
            "SELECT id, model, cwd, title, started_at, billing_provider FROM sessions ORDER BY started_at, id"
        ).fetchall()
        for session_id, model, cwd, title, started, provider in sessions:
            row = {
                "id": session_id,
                "model": model,
                "cwd": cwd,
                "title": title,
                "started_at": started,
                "billing_provider": provider,
            }
            messages = conn.execute(
                f"SELECT {hermes.COLUMNS} FROM messages WHERE session_id = ? ORDER BY timestamp, id", (session_id,)
            ).fetchall()
            try:
                out.append(hermes.parse(row, messages, f"{path} (session {session_id})"))
            except AnyyError as exc:
                out.append(exc)
    except sqlite3.Error as exc:
        return [InvalidInput(f"{path}: not a Hermes database this import reads ({exc})")]
    finally:
        conn.close()
    return out


def read_database(path: Path) -> list[ImportedSession | AnyyError]:
    from anyy.domain.imports import opencode

    conn = _open(path, "opencode")
    if isinstance(conn, InvalidInput):
        return [conn]
    out: list[ImportedSession | AnyyError] = []
    try:
        sessions = conn.execute(
            "SELECT id, directory, title, time_created FROM session ORDER BY time_created, id"
        ).fetchall()
        for session_id, directory, title, created in sessions:
            row = {"id": session_id, "directory": directory, "title": title, "time_created": created}
            messages = conn.execute(
                "SELECT id, time_created, data FROM message WHERE session_id = ? ORDER BY time_created, id",
                (session_id,),
            ).fetchall()
            parts = conn.execute(
                "SELECT id, message_id, data FROM part WHERE session_id = ? ORDER BY message_id, time_created, id",
                (session_id,),
            ).fetchall()
            try:
                out.append(opencode.parse(row, messages, parts, f"{path} (session {session_id})"))
            except AnyyError as exc:
                out.append(exc)
    except sqlite3.Error as exc:
        return [InvalidInput(f"{path}: not an opencode database this import reads ({exc})")]
    finally:
        conn.close()
    return out
