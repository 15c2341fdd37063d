"""The priced calls of a store (SPEC Y1), shared by both backends: the ``model_calls`` row written with each
assistant entry that reported a usage, in the entry's own transaction, and the usage reports read back.

A row keeps the tokens and the cost (nano-dollars; NULL: unpriced) of one model call, the session that made
it and the UTC day, so that every total is an exact sum over rows: by day, session, session tree (a session
with its delegated children), model, schedule, resident, role and channel.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import msgspec

from anyy.domain.budgets import HOLD_SECONDS, BudgetScope, Exhausted, check_scope, spend_keys
from anyy.domain.entries import EntryKind
from anyy.domain.errors import InvalidInput
from anyy.domain.pricing import USAGE_GROUPS, CostLine
from anyy.domain.sessions import Origin

# (provider, model, input, output, cache_read, cache_write, reasoning, cost)
CallFields = tuple[str, str, int, int, int, int, int, int | None]

COLUMNS = (
    "entry_id, session_id, created_at, day, provider, model, input, output, cache_read, cache_write, reasoning, cost"
)


def call_fields(kind: int, data: Any) -> CallFields | None:
    """What the ``model_calls`` row of an entry holds (its kind, its decoded data), or None for an entry
    that is not a model call with a reported usage."""
    if kind != EntryKind.ASSISTANT or not isinstance(data, dict):
        return None
    usage = data.get("usage")
    if not isinstance(usage, dict):
        return None
    cost = data.get("cost")
    priced = isinstance(cost, int) and not isinstance(cost, bool) and cost >= 0
    return (
        str(data.get("provider", "")),
        str(data.get("model", "")),
        _count(usage.get("input")),
        _count(usage.get("output")),
        _count(usage.get("cache_read")),
        _count(usage.get("cache_write")),
        _count(usage.get("reasoning")),
        cost if priced else None,
    )


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def utc_day(at: float) -> str:
    return time.strftime("%Y-%m-%d", time.gmtime(at))


def call_rows(session_id: str, entries: Sequence[Any]) -> list[tuple[Any, ...]]:
    """The ``model_calls`` rows of appended entries (``Entry`` values), in ``COLUMNS`` order."""
    rows = []
    for entry in entries:
        fields = call_fields(entry.kind, entry.data)
        if fields is not None:
            rows.append((entry.id, session_id, entry.created_at, utc_day(entry.created_at), *fields))
    return rows


ADD_SPEND = (
    "INSERT INTO budget_spend (scope, period, spent) VALUES (?, ?, ?) "
    "ON CONFLICT (scope, period) DO UPDATE SET spent = budget_spend.spent + excluded.spent"
)


def spend_rows(session_id: str, origin: object, calls: Sequence[tuple[Any, ...]]) -> list[tuple[str, str, int]]:
    """What ``calls`` (``model_calls`` rows) add to the running totals of budgets (Y2)."""
    added: dict[tuple[str, str], int] = {}
    for row in calls:
        cost = row[11]
        if cost:
            for key in spend_keys(session_id, origin, row[2]):
                added[key] = added.get(key, 0) + cost
    return [(scope, period, amount) for (scope, period), amount in added.items()]


def origin_of(raw: str | None) -> Origin | None:
    if not raw:
        return None
    try:
        return msgspec.json.decode(raw, type=Origin)
    except msgspec.DecodeError:
        return None


def add_spend(conn: Any, session_id: str, calls: Sequence[tuple[Any, ...]], *, mark: str = "?") -> None:
    """Inside the append's transaction: the calls' costs added to their budgets' running totals (Y2)."""
    if not any(row[11] for row in calls):
        return
    found = conn.execute(f"SELECT origin FROM sessions WHERE id = {mark}", (session_id,)).fetchone()
    for row in spend_rows(session_id, origin_of(found[0] if found else None), calls):
        conn.execute(ADD_SPEND.replace("?", mark), row)


INSERT_CALL = f"INSERT INTO model_calls ({COLUMNS}) VALUES ({', '.join('?' for _ in COLUMNS.split(','))})"


# -- reports ---------------------------------------------------------------------------------------------
_SUMS = (
    "count(*), count(*) - count(c.cost), coalesce(sum(c.cost), 0), coalesce(sum(c.input), 0), "
    "coalesce(sum(c.output), 0), coalesce(sum(c.cache_read), 0), coalesce(sum(c.cache_write), 0), "
    "coalesce(sum(c.reasoning), 0)"
)


def check_group(by: str) -> str:
    if by not in USAGE_GROUPS:
        raise InvalidInput(f"unknown usage grouping {by!r}; use one of: {', '.join(USAGE_GROUPS)}")
    return by


def usage_query(by: str, *, json_field: str, placeholder: str, session: str | None = None) -> str:
    """The report query grouped ``by``; ``json_field`` is the dialect's ``(column, key)`` text extraction
    written with ``{col}`` and ``{key}``. Parameters: since (REAL), [session id twice with ``session``]."""

    def origin(key: str) -> str:
        return json_field.format(col="s.origin", key=key)

    keys = {
        "day": "c.day",
        "session": "c.session_id",
        "model": "c.provider || '/' || c.model",
        "schedule": f"coalesce({origin('schedule_id')}, '')",
        "resident": f"coalesce({origin('resident_id')}, '')",
        "role": "coalesce(s.role, '')",
        "channel": f"coalesce({origin('channel')}, '')",
        "tree": f"coalesce(nullif({origin('parent_session_id')}, ''), c.session_id)",
    }
    key = keys[check_group(by)]
    where = f"c.created_at >= {placeholder}"
    if session is not None:
        where += f" AND (c.session_id = {placeholder} OR {keys['tree']} = {placeholder})"
    # Sessions are joined only for the groupings that read them (a day's, a session's or a model's totals
    # read the calls alone: over a million calls the join is most of the time).
    joined = by in ("schedule", "resident", "role", "channel", "tree") or session is not None
    source = "model_calls c LEFT JOIN sessions s ON s.id = c.session_id" if joined else "model_calls c"
    return f"SELECT {key} AS k, {_SUMS} FROM {source} WHERE {where} GROUP BY k ORDER BY k"


def lines_from(rows: Sequence[Sequence[Any]]) -> list[CostLine]:
    return [
        CostLine(
            key=str(r[0] or ""),
            calls=int(r[1]),
            unpriced=int(r[2]),
            cost_nano=int(r[3]),
            input=int(r[4]),
            output=int(r[5]),
            cache_read=int(r[6]),
            cache_write=int(r[7]),
            reasoning=int(r[8]),
        )
        for r in rows
    ]


class CostsSql:
    """The money methods of :class:`anyy.storage.protocol.SessionStore` over SQL (``?`` marks, SQLite's
    JSON); the PostgreSQL part overrides the two dialect hooks."""

    conn: Any
    _tx: Any
    clock: Any
    _JSON_FIELD = "json_extract({col}, '$.{key}')"

    def _cost_sql(self, text: str) -> str:
        return text

    def usage_report(self, by: str, *, since: float = 0.0, session_id: str | None = None) -> list[CostLine]:
        query = usage_query(by, json_field=self._JSON_FIELD, placeholder="?", session=session_id)
        params: tuple[Any, ...] = (since,) if session_id is None else (since, session_id, session_id)
        return lines_from(self.conn.execute(self._cost_sql(query), params).fetchall())

    def _hold_lock(self, conn: Any) -> None:
        """Inside the hold's transaction: serialise budget checks (SQLite's write lock already does)."""

    def set_budget(self, scope: str, limit_nano: int | None) -> None:
        check_scope(scope)
        with self._tx() as conn:
            conn.execute(self._cost_sql("DELETE FROM budgets WHERE scope = ?"), (scope,))
            if limit_nano is not None:
                conn.execute(
                    self._cost_sql("INSERT INTO budgets (scope, limit_nano, updated_at) VALUES (?, ?, ?)"),
                    (scope, limit_nano, self.clock()),
                )

    def list_budgets(self) -> dict[str, int]:
        rows = self.conn.execute("SELECT scope, limit_nano FROM budgets ORDER BY scope").fetchall()
        return {str(r[0]): int(r[1]) for r in rows}

    def budget_spent(self, scope: BudgetScope) -> int:
        """One row: the running total of the scope's period (written with each call)."""
        row = self.conn.execute(
            self._cost_sql("SELECT spent FROM budget_spend WHERE scope = ? AND period = ?"),
            (scope.spend_scope, scope.period),
        ).fetchone()
        return 0 if row is None else int(row[0])

    def hold_budget(self, hold_id: str, scopes: Sequence[BudgetScope], amount: int) -> Exhausted | None:
        if not scopes:
            return None
        now = self.clock()
        with self._tx() as conn:
            self._hold_lock(conn)
            for scope in scopes:
                spent = self.budget_spent(scope)
                held = conn.execute(
                    self._cost_sql(
                        "SELECT coalesce(sum(amount), 0) FROM budget_holds WHERE scope = ? AND created_at >= ? "
                        "AND hold_id <> ?"
                    ),
                    (scope.key, now - HOLD_SECONDS, hold_id),
                ).fetchone()[0]
                if spent + int(held) + amount > scope.limit_nano:
                    return Exhausted(scope=scope, spent_nano=spent + int(held))
            conn.execute(self._cost_sql("DELETE FROM budget_holds WHERE hold_id = ?"), (hold_id,))
            for scope in scopes:
                conn.execute(
                    self._cost_sql("INSERT INTO budget_holds (hold_id, scope, amount, created_at) VALUES (?, ?, ?, ?)"),
                    (hold_id, scope.key, amount, now),
                )
        return None

    def release_budget(self, hold_id: str) -> None:
        with self._tx() as conn:
            conn.execute(
                self._cost_sql("DELETE FROM budget_holds WHERE hold_id = ? OR created_at < ?"),
                (hold_id, self.clock() - HOLD_SECONDS),
            )
