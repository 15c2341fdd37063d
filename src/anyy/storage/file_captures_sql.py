"""File captures (W2) in SQL; PostgreSQL runs the same statements with its own placeholders."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from anyy.domain.file_captures import FileCapture, NewFileCapture, stored

_COLUMNS = "c.id, c.session_id, c.entry_id, c.commit_id, c.workspace, c.kind, c.execution_id, c.created_at"
_CHUNK = 500  # entry ids per statement (SQLite caps the number of parameters)


def _row(row: Sequence[Any]) -> FileCapture:
    return FileCapture(
        id=int(row[0]),
        session_id=row[1],
        entry_id=int(row[2]),
        commit=row[3],
        workspace=row[4],
        kind=row[5],
        execution_id=row[6],
        created_at=float(row[7]),
    )


class FileCapturesSql:
    """The file-capture methods of :class:`anyy.storage.protocol.SessionStore` over SQL (``?`` marks)."""

    clock: Any
    _tx: Any
    conn: Any

    def _fc_sql(self, text: str) -> str:
        return text

    def add_file_capture(self, new: NewFileCapture) -> FileCapture:
        now = self.clock()
        with self._tx() as conn:
            row = conn.execute(
                self._fc_sql(
                    "INSERT INTO file_captures (session_id, entry_id, execution_id, kind, commit_id, workspace, "
                    "created_at) VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING id"
                ),
                (new.session_id, new.entry_id, new.execution_id, new.kind, new.commit, new.workspace, now),
            ).fetchone()
        return stored(new, capture_id=int(row[0]), created_at=now)

    def list_file_captures(
        self, *, entry_ids: Sequence[int] | None = None, execution_id: str | None = None
    ) -> list[FileCapture]:
        base = f"SELECT {_COLUMNS} FROM file_captures c JOIN entries e ON e.id = c.entry_id"
        found: list[FileCapture] = []
        if execution_id is not None:
            rows = self.conn.execute(self._fc_sql(base + " WHERE c.execution_id = ?"), (execution_id,)).fetchall()
            found += [_row(r) for r in rows]
        if entry_ids is not None:
            ids = sorted(set(entry_ids))
            for start in range(0, len(ids), _CHUNK):
                chunk = ids[start : start + _CHUNK]
                marks = ", ".join("?" for _ in chunk)
                rows = self.conn.execute(self._fc_sql(base + f" WHERE c.entry_id IN ({marks})"), tuple(chunk))
                found += [_row(r) for r in rows.fetchall()]
        return sorted({c.id: c for c in found}.values(), key=lambda c: c.id)

    def file_capture_commits(self) -> set[str]:
        rows = self.conn.execute("SELECT DISTINCT c.commit_id FROM file_captures c JOIN entries e ON e.id = c.entry_id")
        return {row[0] for row in rows.fetchall()}
