"""Residents (SPEC K3): the SQLite store's statements, with PostgreSQL's placeholders."""

from __future__ import annotations

from anyy.storage.sqlite.residents import ResidentsSql


class PgResidentsSql(ResidentsSql):
    def _sql(self, text: str) -> str:
        return text.replace("?", "%s")
