"""Timing proxies for the context figure: a connection and cursor that delegate to SQLite and add up the time
spent there."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any


class TimedConnection:
    """Stands in for the store's connection to split a call into time in SQLite (statements and their
    fetches) and time in Python. It only delegates, so it follows the store's code as that changes."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self.sql_seconds = 0.0
        self.statements = 0
        self.rows = 0

    def execute(self, sql: str, params: Sequence[Any] = ()) -> TimedCursor:
        start = time.perf_counter()
        cursor = self.conn.execute(sql, params)
        self.sql_seconds += time.perf_counter() - start
        self.statements += 1
        return TimedCursor(self, cursor)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.conn, name)


class TimedCursor:
    def __init__(self, owner: TimedConnection, cursor: sqlite3.Cursor) -> None:
        self.owner = owner
        self.cursor = cursor

    def _timed(self, call: Callable[[], Any]) -> Any:
        start = time.perf_counter()
        result = call()
        self.owner.sql_seconds += time.perf_counter() - start
        return result

    def fetchone(self) -> Any:
        row = self._timed(self.cursor.fetchone)
        self.owner.rows += row is not None
        return row

    def fetchall(self) -> list[Any]:
        rows: list[Any] = self._timed(self.cursor.fetchall)
        self.owner.rows += len(rows)
        return rows

    def __iter__(self) -> Iterator[Any]:
        return self

    def __next__(self) -> Any:
        start = time.perf_counter()
        try:
            row = next(self.cursor)
        finally:
            self.owner.sql_seconds += time.perf_counter() - start
        self.owner.rows += 1
        return row

    def __getattr__(self, name: str) -> Any:
        return getattr(self.cursor, name)
