"""Sessions: create, read, list by pages, change settings, move the head, fork."""

from __future__ import annotations

import sqlite3
from typing import Any

import msgspec

from anyy.domain import entry_ids
from anyy.domain.errors import InvalidInput
from anyy.domain.paging import check_limit, decode_cursor, encode_cursor
from anyy.domain.sessions import (
    NewSession,
    Page,
    Session,
    SessionKind,
    SessionPatch,
)
from anyy.storage import rules
from anyy.storage.rows import HEAD_SQL, SESSION_COLUMNS, session_from_row
from anyy.storage.rules import check_kind, check_modes
from anyy.storage.sqlite.core import StoreCore
from commons.ids import new_id

_json = msgspec.json.Encoder()


class SessionsPart(StoreCore):
    def create_session(self, new: NewSession) -> Session:
        with self._tx() as conn:
            session_id, num = self._insert_session(conn, new)
        self._nums[session_id] = num
        return self.get_session(session_id)

    def _insert_session(self, conn: sqlite3.Connection, new: NewSession) -> tuple[str, int]:
        """Inside a write transaction: a new session's row; its id and number."""
        check_kind(new.kind)
        check_modes(new.steering_mode, new.follow_up_mode)
        rules.check_workspace(new.workspace)
        now = self.clock()
        session_id = new_id("ses")
        cur = conn.execute(
            "INSERT INTO sessions (id, kind, title, role, provider, model, effort, tools, steering_mode, "
            "follow_up_mode, created_at, updated_at, origin, workspace) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                session_id,
                new.kind,
                new.title,
                new.role,
                new.provider,
                new.model,
                new.effort,
                _json.encode(new.tools).decode(),
                new.steering_mode,
                new.follow_up_mode,
                now,
                now,
                _json.encode(new.origin).decode() if new.origin else None,
                new.workspace,
            ),
        )
        num = cur.lastrowid
        assert num is not None
        if num > entry_ids.MAX_SESSION_NUMBER:
            raise InvalidInput("this profile has used every session number; start a new profile")
        return session_id, num

    def get_session(self, session_id: str) -> Session:
        num = self._session_num(session_id)
        row = self._one(f"SELECT {SESSION_COLUMNS} FROM sessions WHERE num = ?", (num,))
        assert row is not None
        return session_from_row(row)

    def list_sessions(
        self, *, kind: SessionKind | None = None, limit: int = 50, cursor: str | None = None
    ) -> Page[Session]:
        check_kind(kind)
        check_limit(limit)
        where = ["status = 'active'"]
        params: list[Any] = []
        if kind is not None:
            where.append("kind = ?")
            params.append(kind)
        if cursor is not None:
            updated, num = decode_cursor(cursor, (int, float), int)
            where.append("(updated_at, num) < (?, ?)")
            params += [updated, num]
        rows = self.conn.execute(
            f"SELECT {SESSION_COLUMNS}, num FROM sessions WHERE {' AND '.join(where)} "
            "ORDER BY updated_at DESC, num DESC LIMIT ?",
            (*params, limit + 1),
        ).fetchall()
        more = len(rows) > limit
        rows = rows[:limit]
        items = [session_from_row(row[:-1]) for row in rows]
        next_cursor = encode_cursor(items[-1].updated_at, rows[-1][-1]) if more else None
        return Page(items=items, next_cursor=next_cursor)

    def update_session(self, session_id: str, patch: SessionPatch) -> Session:
        changes = patch.changes()
        if not changes:
            return self.get_session(session_id)
        columns: dict[str, Any] = {}
        for name, value in changes.items():
            if name == "tools":
                columns[name] = _json.encode(value).decode()
            elif name == "goal":
                columns[name] = None if value is None else _json.encode(value).decode()
                if value is not None:
                    rules.check_goal_state(value.state)
            else:
                columns[name] = value
        if "workspace" in changes:
            rules.check_workspace(changes["workspace"])
        current = self.get_session(session_id)
        check_modes(
            columns.get("steering_mode", current.steering_mode),
            columns.get("follow_up_mode", current.follow_up_mode),
        )
        num = self._session_num(session_id)
        assignments = ", ".join(f"{name} = ?" for name in columns)
        with self._tx() as conn:
            conn.execute(
                f"UPDATE sessions SET {assignments}, updated_at = ? WHERE num = ?",
                (*columns.values(), self.clock(), num),
            )
        return self.get_session(session_id)

    def set_head(self, session_id: str, entry_id: int | None) -> Session:
        with self._tx() as conn:
            num = self._session_num(session_id)
            head = self._head_of(num)
            if entry_id is not None and not self._in_tree(num, head, entry_id):
                raise self._missing_entry(session_id, entry_id)
            conn.execute(
                "UPDATE sessions SET head = ?, updated_at = ? WHERE num = ?",
                (0 if entry_id is None else entry_id, self.clock(), num),
            )
        return self.get_session(session_id)

    def fork_session(self, session_id: str, at: int | None = None, *, title: str | None = None) -> Session:
        now = self.clock()
        new_session_id = new_id("ses")
        with self._tx() as conn:
            num = self._session_num(session_id)
            row = conn.execute(
                f"SELECT {HEAD_SQL}, kind, title, role, provider, model, effort, tools, steering_mode, "
                "follow_up_mode, workspace FROM sessions WHERE num = ?",
                (num,),
            ).fetchone()
            head = row[0]
            point = head if at is None else at
            if at is not None and not self._in_tree(num, head, at):
                raise self._missing_entry(session_id, at)
            fork_title = title if title is not None else (f"{row[2]} (fork)" if row[2] else "")
            cur = conn.execute(
                "INSERT INTO sessions (id, kind, title, role, provider, model, effort, tools, steering_mode, "
                "follow_up_mode, workspace, head, forked_from, fork_point, created_at, updated_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    new_session_id,
                    row[1],
                    fork_title,
                    *row[3:],
                    0 if point is None else point,
                    session_id,
                    point,
                    now,
                    now,
                ),
            )
            assert cur.lastrowid is not None
            self._nums[new_session_id] = cur.lastrowid
        return self.get_session(new_session_id)
