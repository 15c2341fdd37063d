"""Schedules and their runs (SPEC K1): the statements shared with PostgreSQL (``storage/schedules_sql``)."""

from __future__ import annotations

import sqlite3

from anyy.storage.schedules_sql import SchedulesSql
from anyy.storage.sqlite.sessions import SessionsPart


class SchedulesPart(SessionsPart, SchedulesSql):
    _unique_violation = sqlite3.IntegrityError

    def _held_session_num(self, session_id: str) -> int:
        return self._session_num(session_id)  # the write transaction (IMMEDIATE) holds the whole file
