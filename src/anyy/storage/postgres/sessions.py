"""Sessions: create, read, list by pages, change settings, move the head, fork."""

from __future__ import annotations

from typing import Any

import msgspec
import psycopg

from anyy.domain import entry_ids
from anyy.domain.errors import InvalidInput
from anyy.domain.paging import check_limit, decode_cursor, encode_cursor
from anyy.domain.sessions import NewSession, Page, Session, SessionKind, SessionPatch
from anyy.storage.postgres.core import PgCore
from anyy.storage.rows import HEAD_SQL, SESSION_COLUMNS, session_from_row
from anyy.storage.rules import check_kind, check_modes, check_workspace
from commons.ids import new_id

_json = msgspec.json.Encoder()
_LOCK_BY_ID = "SELECT 1 FROM sessions WHERE id = %s AND status = 'active' FOR UPDATE"
_INSERT_SESSION = (
    "INSERT INTO sessions (id, kind, title, role, provider, model, effort, tools, steering_mode, follow_up_mode, "
    "head, forked_from, fork_point, created_at, updated_at, origin, workspace) "
    "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s) RETURNING num"
)

# A fork at the head, reading the source's row inside the insert; the new row as ``session_from_row`` takes it
# (its head: the fork point, NULL before the first entry).
_FORK_AT_HEAD = (
    "INSERT INTO sessions (id, kind, title, role, provider, model, effort, tools, steering_mode, follow_up_mode, "
    "head, forked_from, fork_point, created_at, updated_at, origin, workspace) "
    "SELECT %s, kind, CASE WHEN %s::text IS NOT NULL THEN %s WHEN title <> '' THEN title || ' (fork)' ELSE '' END, "
    f"role, provider, model, effort, tools, steering_mode, follow_up_mode, coalesce(h.head, 0), %s, h.head, %s, %s, "
    f"NULL, workspace FROM sessions, LATERAL (SELECT {HEAD_SQL} AS head) h WHERE id = %s AND status = 'active' "
    "RETURNING id, kind, title, role, provider, model, effort, tools, steering_mode, follow_up_mode, goal, "
    "fork_point, forked_from, created_at, updated_at, origin, workspace"
)


class SessionsPart(PgCore):
    @staticmethod
    def _inserted_num(conn: psycopg.Connection[Any], values: tuple[Any, ...]) -> int:
        row = conn.execute(_INSERT_SESSION, values).fetchone()
        assert row is not None
        return int(row[0])

    def create_session(self, new: NewSession) -> Session:
        with self._tx() as conn:
            session_id, num = self._insert_session(conn, new)
        self._nums[session_id] = num
        return self.get_session(session_id)

    def _insert_session(self, conn: psycopg.Connection[Any], new: NewSession) -> tuple[str, int]:
        """Inside a transaction: a new session's row; its id and number."""
        check_kind(new.kind)
        check_modes(new.steering_mode, new.follow_up_mode)
        check_workspace(new.workspace)
        now = self.clock()
        session_id = new_id("ses")
        tools = _json.encode(new.tools).decode()
        num = self._inserted_num(
            conn,
            (
                session_id,
                new.kind,
                new.title,
                new.role,
                new.provider,
                new.model,
                new.effort,
                tools,
                new.steering_mode,
                new.follow_up_mode,
                None,
                None,
                None,
                now,
                now,
                _json.encode(new.origin).decode() if new.origin else None,
                new.workspace,
            ),
        )
        if num > entry_ids.MAX_SESSION_NUMBER:
            raise InvalidInput("this profile has used every session number; start a new profile")
        return session_id, num

    def get_session(self, session_id: str) -> Session:
        # One round trip (the runtime asks for the head before every model call).
        row = self._one(
            f"SELECT {SESSION_COLUMNS}, num FROM sessions WHERE id = %s AND status = 'active'", (session_id,)
        )
        if row is None:
            self._nums.pop(session_id, None)
            raise self._missing_session(session_id)
        self._nums[session_id] = int(row[-1])
        return session_from_row(row[:-1])

    def list_sessions(
        self, *, kind: SessionKind | None = None, limit: int = 50, cursor: str | None = None
    ) -> Page[Session]:
        check_kind(kind)
        check_limit(limit)
        where = ["status = 'active'"]
        params: list[Any] = []
        if kind is not None:
            where.append("kind = %s")
            params.append(kind)
        if cursor is not None:
            updated, num = decode_cursor(cursor, (int, float), int)
            where.append("(updated_at, num) < (%s::double precision, %s::bigint)")
            params += [updated, num]
        rows = self._all(
            f"SELECT {SESSION_COLUMNS}, num FROM sessions WHERE {' AND '.join(where)} "
            "ORDER BY updated_at DESC, num DESC LIMIT %s",
            [*params, limit + 1],
        )
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
                if value is not None and value.state not in ("active", "paused"):
                    raise InvalidInput("a goal's state is 'active' or 'paused'")
            else:
                columns[name] = value
        if "workspace" in changes:
            check_workspace(changes["workspace"])
        current = self.get_session(session_id)
        check_modes(
            columns.get("steering_mode", current.steering_mode),
            columns.get("follow_up_mode", current.follow_up_mode),
        )
        assignments = ", ".join(f"{name} = %s" for name in columns)
        with self._tx() as conn:
            num = self._session_num(session_id, lock=True)
            conn.execute(
                f"UPDATE sessions SET {assignments}, updated_at = %s WHERE num = %s",
                (*columns.values(), self.clock(), num),
            )
        return self.get_session(session_id)

    def set_head(self, session_id: str, entry_id: int | None) -> Session:
        with self._tx() as conn:
            num = self._session_num(session_id, lock=True)
            self._fence(num, session_id)
            head = self._head_of(num)
            if entry_id is not None and not self._in_tree(num, head, entry_id):
                raise self._missing_entry(session_id, entry_id)
            conn.execute(
                "UPDATE sessions SET head = %s, updated_at = %s WHERE num = %s",
                (0 if entry_id is None else entry_id, self.clock(), num),
            )
        return self.get_session(session_id)

    def fork_session(self, session_id: str, at: int | None = None, *, title: str | None = None) -> Session:
        if at is not None:
            return self._fork_at(session_id, at, title)
        now = self.clock()
        # One round trip and one commit: the lock and the insert that reads the locked row go as one query
        # string, which the server runs as one transaction with a snapshot per statement (the insert reads
        # what the writer that held the lock committed). The values are bound here, by psycopg's quoting.
        params = (session_id, new_id("ses"), title, title, session_id, now, now, session_id)
        try:
            with psycopg.ClientCursor(self.conn) as cursor:
                cursor.execute(f"{_LOCK_BY_ID}; {_FORK_AT_HEAD}", params)
                cursor.nextset()
                row = cursor.fetchone()
        except BaseException as exc:
            raise self._translate(exc) from exc
        if row is None:
            self._nums.pop(session_id, None)
            raise self._missing_session(session_id)
        return session_from_row(row)

    def _fork_at(self, session_id: str, at: int, title: str | None) -> Session:
        now = self.clock()
        new_session_id = new_id("ses")
        # Pipelined: BEGIN, the lock and the read in one round trip, the insert and COMMIT in another.
        with self.conn.pipeline(), self._tx() as conn:
            conn.execute(_LOCK_BY_ID, (session_id,))
            row = conn.execute(
                f"SELECT num, {HEAD_SQL}, kind, title, role, provider, model, effort, tools, steering_mode, "
                "follow_up_mode, workspace FROM sessions WHERE id = %s AND status = 'active'",
                (session_id,),
            ).fetchone()
            if row is None:
                self._nums.pop(session_id, None)
                raise self._missing_session(session_id)
            num, head, kind, old_title, *settings, workspace = row
            if not self._in_tree(num, head, at):
                raise self._missing_entry(session_id, at)
            fork_title = title if title is not None else (f"{old_title} (fork)" if old_title else "")
            values = (new_session_id, kind, fork_title, *settings, at, session_id, at)
            conn.execute(_INSERT_SESSION, (*values, now, now, None, workspace))
        # What was just committed, without reading it back.
        return session_from_row((*values[:10], None, at, session_id, now, now, None, workspace))
