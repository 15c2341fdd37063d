"""The SQLite registry: agents, their session history, turns, the inbox, the readable thread and alerts.

stdlib ``sqlite3`` in WAL mode, one connection per ``Registry``; numbered migrations applied at opening and
recorded in ``schema_migrations``. Every multi-row change is one transaction (``with registry.tx():``).
Columns of ``agents`` that hold execution settings (model, effort, tier, session_policy) are NULL when the
agent follows the canon's default.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROLES = ("build", "review", "orchestrator")
HARNESSES = ("fake", "claude", "codex", "pi", "anyy")

MIGRATIONS: tuple[tuple[int, str], ...] = (
    (
        1,
        """
        CREATE TABLE agents (
            name TEXT PRIMARY KEY,
            harness TEXT NOT NULL,
            role TEXT NOT NULL CHECK (role IN ('build', 'review', 'orchestrator')),
            workdir TEXT NOT NULL,
            git_common_dir TEXT,
            git_branch TEXT,
            session_policy TEXT,
            model TEXT,
            effort TEXT,
            tier TEXT,
            session_id TEXT,
            session_lot TEXT,
            rotation_state TEXT,
            rotation_reason TEXT,
            pending_summary TEXT,
            created_at REAL NOT NULL
        );
        CREATE TABLE sessions (
            num INTEGER PRIMARY KEY AUTOINCREMENT,
            agent TEXT NOT NULL REFERENCES agents(name) ON DELETE CASCADE,
            session_id TEXT NOT NULL,
            lot TEXT,
            opened_at REAL NOT NULL,
            closed_at REAL,
            close_reason TEXT,
            turns INTEGER NOT NULL DEFAULT 0,
            last_context_tokens INTEGER,
            summary TEXT,
            UNIQUE (agent, session_id)
        );
        CREATE TABLE turns (
            num INTEGER PRIMARY KEY AUTOINCREMENT,
            agent TEXT NOT NULL REFERENCES agents(name) ON DELETE CASCADE,
            session_id TEXT,
            lot TEXT,
            kind TEXT NOT NULL,
            prompt TEXT NOT NULL,
            result TEXT,
            usage TEXT,
            context_tokens INTEGER,
            duration REAL NOT NULL,
            outcome TEXT NOT NULL,
            error TEXT,
            at REAL NOT NULL
        );
        CREATE TABLE messages (
            num INTEGER PRIMARY KEY AUTOINCREMENT,
            agent TEXT NOT NULL REFERENCES agents(name) ON DELETE CASCADE,
            lot TEXT,
            text TEXT NOT NULL,
            state TEXT NOT NULL DEFAULT 'waiting',
            attempts INTEGER NOT NULL DEFAULT 0,
            created_at REAL NOT NULL
        );
        CREATE INDEX messages_waiting ON messages (agent, num) WHERE state = 'waiting';
        CREATE TABLE thread (
            num INTEGER PRIMARY KEY AUTOINCREMENT,
            agent TEXT NOT NULL REFERENCES agents(name) ON DELETE CASCADE,
            kind TEXT NOT NULL,
            session_id TEXT,
            lot TEXT,
            text TEXT NOT NULL,
            at REAL NOT NULL
        );
        CREATE INDEX thread_agent ON thread (agent, num);
        CREATE TABLE alerts (
            num INTEGER PRIMARY KEY AUTOINCREMENT,
            agent TEXT NOT NULL REFERENCES agents(name) ON DELETE CASCADE,
            kind TEXT NOT NULL,
            session_id TEXT,
            message TEXT NOT NULL,
            at REAL NOT NULL,
            cleared_at REAL
        );
        """,
    ),
)

PRAGMAS = (
    "PRAGMA journal_mode = WAL",
    "PRAGMA synchronous = NORMAL",
    "PRAGMA foreign_keys = ON",
    "PRAGMA busy_timeout = 10000",
)


class RegistryError(Exception):
    """A request the registry refuses (unknown agent, duplicate name…); the message says what to do."""


def _row(cursor: sqlite3.Cursor, row: tuple[Any, ...]) -> dict[str, Any]:
    return {col[0]: value for col, value in zip(cursor.description, row, strict=True)}


class Registry:
    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self.conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self.conn.row_factory = _row
        for pragma in PRAGMAS:
            self.conn.execute(pragma)
        self._depth = 0
        self._migrate()

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> Registry:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- plumbing -------------------------------------------------------------------------------------

    @contextlib.contextmanager
    def tx(self) -> Iterator[None]:
        """One transaction (nested calls join the outer one)."""
        if self._depth:
            self._depth += 1
            try:
                yield
            finally:
                self._depth -= 1
            return
        self.conn.execute("BEGIN IMMEDIATE")
        self._depth = 1
        try:
            yield
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        else:
            self.conn.execute("COMMIT")
        finally:
            self._depth = 0

    def _migrate(self) -> None:
        self.conn.execute("CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied_at REAL)")
        with self.tx():
            done = {r["version"] for r in self.conn.execute("SELECT version FROM schema_migrations")}
            for version, sql in MIGRATIONS:
                if version in done:
                    continue
                for statement in sql.split(";"):
                    if statement.strip():
                        self.conn.execute(statement)
                self.conn.execute("INSERT INTO schema_migrations VALUES (?, ?)", (version, time.time()))

    def schema_versions(self) -> list[int]:
        return [r["version"] for r in self.conn.execute("SELECT version FROM schema_migrations ORDER BY version")]

    def one(self, sql: str, params: tuple[Any, ...] = ()) -> dict[str, Any] | None:
        row: dict[str, Any] | None = self.conn.execute(sql, params).fetchone()
        return row

    def all(self, sql: str, params: tuple[Any, ...] = ()) -> list[dict[str, Any]]:
        return list(self.conn.execute(sql, params).fetchall())

    def update_agent(self, name: str, **values: Any) -> None:
        cols = ", ".join(f"{key} = ?" for key in values)
        self.conn.execute(f"UPDATE agents SET {cols} WHERE name = ?", (*values.values(), name))

    # -- agents ---------------------------------------------------------------------------------------

    def add_agent(
        self,
        name: str,
        *,
        harness: str,
        role: str,
        workdir: str,
        git_common_dir: str | None,
        git_branch: str | None,
    ) -> None:
        if harness not in HARNESSES:
            raise RegistryError(f"unknown harness {harness!r}: one of {', '.join(HARNESSES)}")
        if role not in ROLES:
            raise RegistryError(f"unknown role {role!r}: one of {', '.join(ROLES)}")
        try:
            self.conn.execute(
                "INSERT INTO agents (name, harness, role, workdir, git_common_dir, git_branch, created_at)"
                " VALUES (?, ?, ?, ?, ?, ?, ?)",
                (name, harness, role, workdir, git_common_dir, git_branch, time.time()),
            )
        except sqlite3.IntegrityError:
            raise RegistryError(f"an agent named {name!r} already exists (ameesh remove {name} first)") from None

    def agent(self, name: str) -> dict[str, Any]:
        row = self.one("SELECT * FROM agents WHERE name = ?", (name,))
        if row is None:
            raise RegistryError(f"no agent named {name!r} (see ameesh list)")
        return row

    def agents(self) -> list[dict[str, Any]]:
        return self.all("SELECT * FROM agents ORDER BY name")

    def remove_agent(self, name: str) -> None:
        self.agent(name)
        self.conn.execute("DELETE FROM agents WHERE name = ?", (name,))

    # -- inbox ----------------------------------------------------------------------------------------

    def send(self, agent: str, text: str, lot: str | None) -> int:
        self.agent(agent)
        cur = self.conn.execute(
            "INSERT INTO messages (agent, lot, text, created_at) VALUES (?, ?, ?, ?)", (agent, lot, text, time.time())
        )
        return int(cur.lastrowid or 0)

    def next_message(self, agent: str) -> dict[str, Any] | None:
        return self.one("SELECT * FROM messages WHERE agent = ? AND state = 'waiting' ORDER BY num LIMIT 1", (agent,))

    def waiting_agents(self) -> list[str]:
        return [
            r["agent"] for r in self.all("SELECT DISTINCT agent FROM messages WHERE state = 'waiting' ORDER BY agent")
        ]

    def waiting_count(self, agent: str) -> int:
        row = self.one("SELECT count(*) AS n FROM messages WHERE agent = ? AND state = 'waiting'", (agent,))
        return int(row["n"]) if row else 0

    # -- thread, alerts, sessions ---------------------------------------------------------------------

    def note(self, agent: str, kind: str, text: str, *, session_id: str | None = None, lot: str | None = None) -> None:
        self.conn.execute(
            "INSERT INTO thread (agent, kind, session_id, lot, text, at) VALUES (?, ?, ?, ?, ?, ?)",
            (agent, kind, session_id, lot, text, time.time()),
        )

    def thread(self, agent: str) -> list[dict[str, Any]]:
        self.agent(agent)
        return self.all("SELECT kind, session_id, lot, text, at FROM thread WHERE agent = ? ORDER BY num", (agent,))

    def alert(self, agent: str, kind: str, message: str, *, session_id: str | None = None) -> bool:
        """Raise an alert unless the same one (agent, kind, session) is already active; True if raised."""
        active = self.one(
            "SELECT num FROM alerts WHERE agent = ? AND kind = ? AND session_id IS ? AND cleared_at IS NULL",
            (agent, kind, session_id),
        )
        if active:
            return False
        with self.tx():
            self.conn.execute(
                "INSERT INTO alerts (agent, kind, session_id, message, at) VALUES (?, ?, ?, ?, ?)",
                (agent, kind, session_id, message, time.time()),
            )
            self.note(agent, "alert", f"{kind}: {message}", session_id=session_id)
        return True

    def alerts(self, agent: str | None = None) -> list[dict[str, Any]]:
        sql = "SELECT agent, kind, session_id, message, at FROM alerts WHERE cleared_at IS NULL"
        if agent is None:
            return self.all(sql + " ORDER BY num")
        return self.all(sql + " AND agent = ? ORDER BY num", (agent,))

    def sessions(self, agent: str) -> list[dict[str, Any]]:
        self.agent(agent)
        return self.all(
            "SELECT session_id, lot, opened_at, closed_at, close_reason, turns, last_context_tokens, summary"
            " FROM sessions WHERE agent = ? ORDER BY num",
            (agent,),
        )

    def session(self, agent: str, session_id: str) -> dict[str, Any] | None:
        return self.one("SELECT * FROM sessions WHERE agent = ? AND session_id = ?", (agent, session_id))

    def open_session(self, agent: str, session_id: str, lot: str | None) -> None:
        self.conn.execute(
            "INSERT OR IGNORE INTO sessions (agent, session_id, lot, opened_at) VALUES (?, ?, ?, ?)",
            (agent, session_id, lot, time.time()),
        )

    def close_session(self, agent: str, session_id: str, reason: str) -> None:
        self.conn.execute(
            "UPDATE sessions SET closed_at = ?, close_reason = ?"
            " WHERE agent = ? AND session_id = ? AND closed_at IS NULL",
            (time.time(), reason, agent, session_id),
        )

    def record_turn(
        self,
        agent: str,
        *,
        session_id: str | None,
        lot: str | None,
        kind: str,
        prompt: str,
        result: str | None,
        usage: dict[str, Any] | None,
        context_tokens: int | None,
        duration: float,
        outcome: str,
        error: str | None,
    ) -> None:
        self.conn.execute(
            "INSERT INTO turns (agent, session_id, lot, kind, prompt, result, usage, context_tokens, duration,"
            " outcome, error, at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                agent,
                session_id,
                lot,
                kind,
                prompt,
                result,
                json.dumps(usage) if usage is not None else None,
                context_tokens,
                duration,
                outcome,
                error,
                time.time(),
            ),
        )
        if outcome == "ok" and session_id is not None:
            self.conn.execute(
                "UPDATE sessions SET turns = turns + 1, last_context_tokens = coalesce(?, last_context_tokens)"
                " WHERE agent = ? AND session_id = ?",
                (context_tokens, agent, session_id),
            )

    def turns(self, agent: str) -> list[dict[str, Any]]:
        return self.all("SELECT * FROM turns WHERE agent = ? ORDER BY num", (agent,))
