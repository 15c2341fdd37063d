"""Delegated tasks (SPEC K2) in SQL; PostgreSQL runs the same statements with its own placeholders."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec

from anyy.domain.delegation import DelegatedTask, TaskUpdate, apply_update
from anyy.domain.errors import NotFound

_COLUMNS = (
    "child_session_id, parent_session_id, parent_execution_id, parent_call_id, position, brief, depth, state, "
    "result, is_error, restarts, delivered, created_at, updated_at"
)


def _task(row: tuple[Any, ...]) -> DelegatedTask:
    (child, parent, execution, call, position, brief, depth, state, result, is_error, restarts, delivered) = row[:12]
    created, updated = row[12:]
    return DelegatedTask(
        child_session_id=child,
        parent_session_id=parent,
        parent_execution_id=execution,
        parent_call_id=call,
        position=int(position),
        brief=brief,
        depth=int(depth),
        state=state,
        result=result,
        is_error=bool(is_error),
        restarts=int(restarts),
        delivered=bool(delivered),
        created_at=float(created),
        updated_at=float(updated),
    )


def _values(task: DelegatedTask) -> tuple[Any, ...]:
    return (
        task.child_session_id,
        task.parent_session_id,
        task.parent_execution_id,
        task.parent_call_id,
        task.position,
        task.brief,
        task.depth,
        task.state,
        task.result,
        int(task.is_error),
        task.restarts,
        int(task.delivered),
        task.created_at,
        task.updated_at,
    )


class DelegationSql:
    """The delegated-task methods of :class:`anyy.storage.protocol.SessionStore` over SQL (``?`` marks)."""

    clock: Any
    _tx: Any
    conn: Any

    def _sql(self, text: str) -> str:
        return text

    def _rows(self, sql: str, params: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        rows: list[tuple[Any, ...]] = self.conn.execute(self._sql(sql), params).fetchall()
        return rows

    def add_delegated_tasks(self, tasks: Sequence[DelegatedTask]) -> list[DelegatedTask]:
        now = self.clock()
        stored = [msgspec.structs.replace(task, created_at=now, updated_at=now) for task in tasks]
        marks = ", ".join("?" * 14)
        with self._tx() as conn:
            for task in stored:
                conn.execute(self._sql(f"INSERT INTO delegated_tasks ({_COLUMNS}) VALUES ({marks})"), _values(task))
        return stored

    def list_delegated_tasks(
        self,
        *,
        parent_session_id: str | None = None,
        parent_call_id: str | None = None,
        open_only: bool = False,
    ) -> list[DelegatedTask]:
        where, params = [], []
        if parent_session_id is not None:
            where.append("parent_session_id = ?")
            params.append(parent_session_id)
        if parent_call_id is not None:
            where.append("parent_call_id = ?")
            params.append(parent_call_id)
        if open_only:
            where.append("delivered = 0")
        clause = f" WHERE {' AND '.join(where)}" if where else ""
        sql = f"SELECT {_COLUMNS} FROM delegated_tasks{clause} ORDER BY created_at, parent_call_id, position"
        return [_task(row) for row in self._rows(sql, tuple(params))]

    def get_delegated_task(self, child_session_id: str) -> DelegatedTask:
        rows = self._rows(f"SELECT {_COLUMNS} FROM delegated_tasks WHERE child_session_id = ?", (child_session_id,))
        if not rows:
            raise NotFound(f"session {child_session_id!r} is not a delegated task")
        return _task(rows[0])

    def update_delegated_task(self, child_session_id: str, update: TaskUpdate) -> DelegatedTask:
        with self._tx() as conn:
            rows = conn.execute(
                self._sql(f"SELECT {_COLUMNS} FROM delegated_tasks WHERE child_session_id = ?"), (child_session_id,)
            ).fetchall()
            if not rows:
                raise NotFound(f"session {child_session_id!r} is not a delegated task")
            task = apply_update(_task(rows[0]), update, self.clock())
            conn.execute(
                self._sql(
                    "UPDATE delegated_tasks SET state = ?, result = ?, is_error = ?, restarts = ?, delivered = ?, "
                    "updated_at = ? WHERE child_session_id = ?"
                ),
                (
                    task.state,
                    task.result,
                    int(task.is_error),
                    task.restarts,
                    int(task.delivered),
                    task.updated_at,
                    child_session_id,
                ),
            )
        return task
