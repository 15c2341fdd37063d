"""Channels (SPEC L1-L3): the SQLite store's statements, with PostgreSQL's placeholders."""

from __future__ import annotations

from anyy.storage.sqlite.channels import ChannelsSql


class PgChannelsSql(ChannelsSql):
    def _sql(self, text: str) -> str:
        return text.replace("?", "%s")
