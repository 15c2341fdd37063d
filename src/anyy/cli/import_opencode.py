"""Reading opencode's database for ``anyy import opencode`` (SPEC I1): the rows only, read-only, handed to
the pure parser (:mod:`anyy.domain.imports.opencode`).

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


def read_database(path: Path) -> list[ImportedSession | AnyyError]:
    from anyy.domain.imports import opencode

    if not path.is_file():
        return [InvalidInput(f"{path}: not a file (opencode keeps its sessions in opencode.db)")]
    uri = f"file:{urllib.parse.quote(str(path.resolve()))}?mode=ro"
    out: list[ImportedSession | AnyyError] = []
    try:
        conn = sqlite3.connect(uri, uri=True)
    except sqlite3.Error as exc:
        return [InvalidInput(f"{path}: cannot open it as opencode's database ({exc})")]
    try:
        conn.execute("PRAGMA trusted_schema = OFF")
        conn.execute("PRAGMA cell_size_check = ON")
        conn.execute("PRAGMA query_only = ON")
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
