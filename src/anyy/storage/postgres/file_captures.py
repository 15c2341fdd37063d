"""File captures (W2): the SQLite store's statements, with PostgreSQL's placeholders."""

from __future__ import annotations

from anyy.storage.file_captures_sql import FileCapturesSql


class PgFileCapturesSql(FileCapturesSql):
    def _fc_sql(self, text: str) -> str:
        return text.replace("?", "%s")
