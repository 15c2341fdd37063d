"""Schedules and their runs (SPEC K1): the statements shared with SQLite (``storage/schedules_sql``), with
PostgreSQL's placeholders, ``greatest`` and row locks."""

from __future__ import annotations

import psycopg

from anyy.storage.postgres.sessions import SessionsPart
from anyy.storage.schedules_sql import SchedulesSql


class SchedulesPart(SessionsPart, SchedulesSql):
    _unique_violation = psycopg.errors.UniqueViolation
    _greatest = "greatest"

    def _sql(self, text: str) -> str:
        return text.replace("?", "%s")

    def _held_session_num(self, session_id: str) -> int:
        return self._session_num(session_id, lock=True)
