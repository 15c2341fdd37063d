"""Delegated tasks (SPEC K2): the SQLite store's statements, with PostgreSQL's placeholders."""

from __future__ import annotations

from anyy.storage.sqlite.delegation import DelegationSql


class PgDelegationSql(DelegationSql):
    def _sql(self, text: str) -> str:
        return text.replace("?", "%s")
