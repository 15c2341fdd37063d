"""The SQLite registry: agents, their session history, turns, the inbox, the readable thread and alerts.

stdlib ``sqlite3`` through :mod:`commons.sqlite` (WAL, numbered migrations recorded in ``schema_migrations``),
one connection per ``Registry``. Every SQL statement of ameesh is in this module; callers get typed rows
(:mod:`ameesh.rows`). Every multi-row change is one transaction (``with registry.tx():``). Columns of
``agents`` that hold execution settings (model, effort, tier, session_policy) are NULL when the agent follows
the canon's default.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, TypeVar

from ameesh.names import HARNESSES, ROLES
from ameesh.rows import Agent, Alert, Lot, LotReview, Message, Session, ThreadItem, Turn
from commons import sqlite

__all__ = ["HARNESSES", "ROLES", "Registry", "RegistryError"]

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
    (
        2,
        """
        ALTER TABLE agents ADD COLUMN uid TEXT;
        ALTER TABLE agents ADD COLUMN failures INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE agents ADD COLUMN retry_at REAL;
        ALTER TABLE agents ADD COLUMN circuit_open INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE agents ADD COLUMN pending_kind TEXT;
        ALTER TABLE sessions ADD COLUMN model TEXT;
        ALTER TABLE messages ADD COLUMN tried INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE alerts ADD COLUMN cleared_reason TEXT;
        ALTER TABLE agents ADD COLUMN rewind_to TEXT;
        """,
    ),
    (
        3,
        """
        ALTER TABLE agents ADD COLUMN turn_key TEXT;
        CREATE TABLE lots (
            name TEXT PRIMARY KEY,
            owner TEXT NOT NULL,
            state TEXT NOT NULL,
            rounds INTEGER NOT NULL DEFAULT 0,
            repository TEXT,
            worktree TEXT NOT NULL,
            base TEXT,
            updated_at REAL NOT NULL
        );
        CREATE TABLE lot_reviews (
            num INTEGER PRIMARY KEY AUTOINCREMENT,
            lot TEXT NOT NULL REFERENCES lots(name) ON DELETE CASCADE,
            reviewer TEXT NOT NULL,
            round INTEGER NOT NULL,
            verdict TEXT NOT NULL,
            findings TEXT,
            at REAL NOT NULL
        );
        """,
    ),
)

# The agent columns a caller may change (``update_agent``): never its name or its uid.
AGENT_COLUMNS = frozenset(
    {
        "harness", "role", "workdir", "git_common_dir", "git_branch", "session_policy", "model", "effort", "tier",
        "session_id", "session_lot", "rotation_state", "rotation_reason", "pending_summary", "pending_kind",
        "failures", "retry_at", "circuit_open", "rewind_to", "turn_key",
    }
)  # fmt: skip

R = TypeVar("R")


class RegistryError(Exception):
    """A request the registry refuses (unknown agent, duplicate name…); the message says what to do."""


class Registry:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.conn = sqlite.connect(path, migrations=MIGRATIONS)
        self.on_alert: Callable[[Alert], None] | None = None  # told of every new alert (pushed to a command)

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> Registry:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- plumbing -------------------------------------------------------------------------------------

    def tx(self) -> AbstractContextManager[None]:
        """One transaction (nested calls join the outer one)."""
        return sqlite.transaction(self.conn)

    def schema_versions(self) -> list[int]:
        return sqlite.schema_versions(self.conn)

    def journal_mode(self) -> str:
        return str(self._value("PRAGMA journal_mode"))

    def _rows(self, cls: type[R], sql: str, params: Sequence[Any] = ()) -> list[R]:
        return [cls(**row) for row in self.conn.execute(sql, params)]

    def _row(self, cls: type[R], sql: str, params: Sequence[Any] = ()) -> R | None:
        row = self.conn.execute(sql, params).fetchone()
        return cls(**row) if row is not None else None

    def _value(self, sql: str, params: Sequence[Any] = ()) -> Any:
        row = self.conn.execute(sql, params).fetchone()
        return next(iter(row.values())) if row else None

    def _iter_dicts(self, sql: str, params: Sequence[Any] = ()) -> Iterator[dict[str, Any]]:
        yield from self.conn.execute(sql, params)

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
        uid: str | None = None,
    ) -> None:
        if harness not in HARNESSES:
            raise RegistryError(f"unknown harness {harness!r}: one of {', '.join(HARNESSES)}")
        if role not in ROLES:
            raise RegistryError(f"unknown role {role!r}: one of {', '.join(ROLES)}")
        try:
            self.conn.execute(
                "INSERT INTO agents (name, harness, role, workdir, git_common_dir, git_branch, created_at, uid)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (name, harness, role, workdir, git_common_dir, git_branch, time.time(), uid),
            )
        except sqlite3.IntegrityError:
            raise RegistryError(f"an agent named {name!r} already exists (ameesh remove {name} first)") from None

    def find_agent(self, name: str) -> Agent | None:
        return self._row(Agent, "SELECT * FROM agents WHERE name = ?", (name,))

    def agent(self, name: str) -> Agent:
        found = self.find_agent(name)
        if found is None:
            raise RegistryError(f"no agent named {name!r} (see ameesh list)")
        return found

    def agents(self) -> list[Agent]:
        return self._rows(Agent, "SELECT * FROM agents ORDER BY name")

    def update_agent(self, name: str, **values: Any) -> None:
        unknown = set(values) - AGENT_COLUMNS
        if unknown:
            raise ValueError(f"not an agent column: {', '.join(sorted(unknown))}")
        cols = ", ".join(f"{key} = ?" for key in values)
        self.conn.execute(f"UPDATE agents SET {cols} WHERE name = ?", (*values.values(), name))

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

    def next_message(self, agent: str) -> Message | None:
        return self._row(
            Message, "SELECT * FROM messages WHERE agent = ? AND state = 'waiting' ORDER BY num LIMIT 1", (agent,)
        )

    def messages(self, agent: str, state: str | None = None) -> list[Message]:
        if state is None:
            return self._rows(Message, "SELECT * FROM messages WHERE agent = ? ORDER BY num", (agent,))
        return self._rows(Message, "SELECT * FROM messages WHERE agent = ? AND state = ? ORDER BY num", (agent, state))

    def waiting_agents(self) -> list[str]:
        sql = "SELECT DISTINCT agent FROM messages WHERE state = 'waiting' ORDER BY agent"
        return [row["agent"] for row in self._iter_dicts(sql)]

    def waiting_count(self, agent: str) -> int:
        return int(self._value("SELECT count(*) FROM messages WHERE agent = ? AND state = 'waiting'", (agent,)))

    def message_started(self, num: int) -> None:
        """A turn of the message is starting (if it never ends, its prompt may be in the harness's session)."""
        self.conn.execute("UPDATE messages SET tried = tried + 1 WHERE num = ?", (num,))

    def message_done(self, num: int) -> None:
        self.conn.execute("UPDATE messages SET state = 'done' WHERE num = ?", (num,))

    def message_failed(self, num: int, attempts: int, *, for_good: bool) -> None:
        state = "failed" if for_good else "waiting"
        self.conn.execute("UPDATE messages SET attempts = ?, state = ? WHERE num = ?", (attempts, state, num))

    def requeue(self, agent: str, nums: Sequence[int] = ()) -> list[int]:
        """Put the agent's failed messages (all, or those numbered) back in the inbox; the numbers re-queued."""
        failed = {m.num for m in self.messages(agent, "failed")}
        chosen = [n for n in nums if n in failed] if nums else sorted(failed)
        for num in chosen:
            self.conn.execute("UPDATE messages SET state = 'waiting', attempts = 0 WHERE num = ?", (num,))
        return chosen

    # -- thread, alerts, sessions ---------------------------------------------------------------------

    def note(self, agent: str, kind: str, text: str, *, session_id: str | None = None, lot: str | None = None) -> None:
        self.conn.execute(
            "INSERT INTO thread (agent, kind, session_id, lot, text, at) VALUES (?, ?, ?, ?, ?, ?)",
            (agent, kind, session_id, lot, text, time.time()),
        )

    def thread(self, agent: str) -> list[ThreadItem]:
        self.agent(agent)
        return self._rows(ThreadItem, "SELECT * FROM thread WHERE agent = ? ORDER BY num", (agent,))

    def alert(
        self, agent: str, kind: str, message: str, *, session_id: str | None = None, refresh: bool = False
    ) -> Alert | None:
        """Raise an alert unless the same one (agent, kind, session) is already active (``refresh``: its
        message is brought up to date); the new alert, if any (``on_alert`` is told of it)."""
        active = self._value(
            "SELECT num FROM alerts WHERE agent = ? AND kind = ? AND session_id IS ? AND cleared_at IS NULL",
            (agent, kind, session_id),
        )
        if active:
            if refresh:
                self.conn.execute("UPDATE alerts SET message = ? WHERE num = ?", (message, active))
            return None
        with self.tx():
            cur = self.conn.execute(
                "INSERT INTO alerts (agent, kind, session_id, message, at) VALUES (?, ?, ?, ?, ?)",
                (agent, kind, session_id, message, time.time()),
            )
            self.note(agent, "alert", f"{kind}: {message}", session_id=session_id)
        raised = self._row(Alert, "SELECT * FROM alerts WHERE num = ?", (cur.lastrowid,))
        if raised is not None and self.on_alert is not None:
            self.on_alert(raised)
        return raised

    def last_note(self, agent: str, kind: str) -> ThreadItem | None:
        return self._row(
            ThreadItem, "SELECT * FROM thread WHERE agent = ? AND kind = ? ORDER BY num DESC LIMIT 1", (agent, kind)
        )

    def alerts(self, agent: str | None = None) -> list[Alert]:
        """Active alerts."""
        if agent is None:
            return self._rows(Alert, "SELECT * FROM alerts WHERE cleared_at IS NULL ORDER BY num")
        return self._rows(Alert, "SELECT * FROM alerts WHERE cleared_at IS NULL AND agent = ? ORDER BY num", (agent,))

    def resolve_alerts(self, agent: str, *kinds: str, session_id: str | None = None, why: str = "resolved") -> int:
        """Clear the agent's active alerts of these kinds (of one session, if given): their cause is gone."""
        cleared = 0
        for kind in kinds:
            sql = (
                "UPDATE alerts SET cleared_at = ?, cleared_reason = ?"
                " WHERE agent = ? AND kind = ? AND cleared_at IS NULL"
            )
            params: tuple[Any, ...] = (time.time(), why, agent, kind)
            if session_id is not None:
                sql += " AND session_id IS NOT ?"  # a session_too_big alert of another session is stale
                params += (session_id,)
            cleared += self.conn.execute(sql, params).rowcount
        if cleared:
            self.note(agent, "alert", f"{cleared} alert(s) cleared ({', '.join(kinds)}): {why}")
        return cleared

    def ack_alert(self, num: int) -> Alert:
        """Acknowledge one alert by its number (it leaves the active list)."""
        found = self._row(Alert, "SELECT * FROM alerts WHERE num = ?", (num,))
        if found is None:
            raise RegistryError(f"no alert {num} (see ameesh alerts)")
        if found.cleared_at is None:
            with self.tx():
                self.conn.execute(
                    "UPDATE alerts SET cleared_at = ?, cleared_reason = 'acknowledged' WHERE num = ?",
                    (time.time(), num),
                )
                self.note(found.agent, "alert", f"alert {num} ({found.kind}) acknowledged")
        return found

    def sessions(self, agent: str) -> list[Session]:
        self.agent(agent)
        return self._rows(Session, "SELECT * FROM sessions WHERE agent = ? ORDER BY num", (agent,))

    def session(self, agent: str, session_id: str) -> Session | None:
        return self._row(Session, "SELECT * FROM sessions WHERE agent = ? AND session_id = ?", (agent, session_id))

    def open_session(self, agent: str, session_id: str, lot: str | None, model: str | None = None) -> None:
        self.conn.execute(
            "INSERT OR IGNORE INTO sessions (agent, session_id, lot, opened_at, model) VALUES (?, ?, ?, ?, ?)",
            (agent, session_id, lot, time.time(), model),
        )

    def close_session(self, agent: str, session_id: str, reason: str) -> None:
        self.conn.execute(
            "UPDATE sessions SET closed_at = ?, close_reason = ?"
            " WHERE agent = ? AND session_id = ? AND closed_at IS NULL",
            (time.time(), reason, agent, session_id),
        )

    def set_summary(self, agent: str, session_id: str, summary: str) -> None:
        self.conn.execute(
            "UPDATE sessions SET summary = ? WHERE agent = ? AND session_id = ?", (summary, agent, session_id)
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
                "UPDATE sessions SET turns = turns + ?, last_context_tokens = coalesce(?, last_context_tokens)"
                " WHERE agent = ? AND session_id = ?",
                (int(kind == "turn"), context_tokens, agent, session_id),  # a summary turn is not the agent's
            )

    def turns(self, agent: str) -> list[Turn]:
        return self._rows(Turn, "SELECT * FROM turns WHERE agent = ? ORDER BY num", (agent,))

    # -- lots (H16) -----------------------------------------------------------------------------------

    def find_lot(self, name: str) -> Lot | None:
        return self._row(Lot, "SELECT * FROM lots WHERE name = ?", (name,))

    def lot(self, name: str) -> Lot:
        found = self.find_lot(name)
        if found is None:
            raise RegistryError(f"no lot named {name!r} (see ameesh lots)")
        return found

    def lots(self) -> list[Lot]:
        return self._rows(Lot, "SELECT * FROM lots ORDER BY name")

    def add_lot(self, name: str, *, owner: str, worktree: str, repository: str | None, base: str | None) -> None:
        self.conn.execute(
            "INSERT OR IGNORE INTO lots (name, owner, state, worktree, repository, base, updated_at)"
            " VALUES (?, ?, 'working', ?, ?, ?, ?)",
            (name, owner, worktree, repository, base, time.time()),
        )

    def update_lot(self, name: str, **values: Any) -> None:
        unknown = set(values) - {"state", "rounds", "worktree", "repository", "base"}
        if unknown:
            raise ValueError(f"not a lot column: {', '.join(sorted(unknown))}")
        cols = ", ".join(f"{key} = ?" for key in (*values, "updated_at"))
        self.conn.execute(f"UPDATE lots SET {cols} WHERE name = ?", (*values.values(), time.time(), name))

    def add_review(self, lot: str, reviewer: str, round_: int, verdict: str, findings: str | None) -> None:
        self.conn.execute(
            "INSERT INTO lot_reviews (lot, reviewer, round, verdict, findings, at) VALUES (?, ?, ?, ?, ?, ?)",
            (lot, reviewer, round_, verdict, findings, time.time()),
        )

    def reviews(self, lot: str, round_: int | None = None) -> list[LotReview]:
        if round_ is None:
            return self._rows(LotReview, "SELECT * FROM lot_reviews WHERE lot = ? ORDER BY num", (lot,))
        sql = "SELECT * FROM lot_reviews WHERE lot = ? AND round = ? ORDER BY num"
        return self._rows(LotReview, sql, (lot, round_))

    def agent_by_turn_key(self, key_hash: str) -> Agent | None:
        """The agent whose turn holds this key now (H16: who runs ``ameesh done`` / ``ameesh review``)."""
        return self._row(Agent, "SELECT * FROM agents WHERE turn_key = ?", (key_hash,))
