"""Any ACP agent (Agent Client Protocol over stdio), through the ``agent-client-protocol`` SDK's client.

The agent's command is ``AMEESH_ACP_AGENT`` (a command line, e.g. ``opencode acp``). Each turn runs
``python -m ameesh.harnesses.acp_turn … -- AGENT…`` (:mod:`ameesh.harnesses.acp_turn`), which starts the
agent, opens the session (``session/new``; later turns ``session/load``, or ``session/resume`` for an
agent that cannot load), sets the model and effort through the session's configuration options, sends
the prompt and cancels it (``session/cancel``) when the turn runs out of time. The agent chooses the
session id: it is printed as soon as the session is open, and recorded at once like Codex's thread id.
The context re-read is the agent's last ``usage_update`` (``used``), else the turn's input + cache-read
tokens. On a retry after a failed attempt, the loaded history shows whether the agent kept the prompt
without an answer: then a cue to answer it is sent instead of a second copy.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import sys
from pathlib import Path
from typing import Any

from ameesh.harnesses import Retry, TurnRequest, TurnResult, json_objects, tail

AGENT_VAR = "AMEESH_ACP_AGENT"


def turn_budget(timeout: float) -> float:
    """The time the prompt may take inside a turn of ``timeout`` s: the rest lets the agent start, be
    cancelled and stop before the turn's process group is killed."""
    return max(1.0, timeout - min(20.0, timeout / 4))


def _context(result: dict[str, Any]) -> int | None:
    used = result.get("context_tokens")
    if isinstance(used, int):
        return used
    usage = result.get("usage")
    if not isinstance(usage, dict) or not isinstance(usage.get("inputTokens"), int):
        return None
    cached = usage.get("cachedReadTokens")
    return int(usage["inputTokens"]) + (cached if isinstance(cached, int) else 0)


def opencode_data_dir() -> Path:
    """Where opencode keeps its database: ``$XDG_DATA_HOME/opencode`` (default ``~/.local/share``)."""
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "opencode"


def rebind_opencode_sessions(old: Path, new: Path) -> str:
    """opencode's sessions of working directory ``old`` (or below it) moved to ``new``, in its database
    (SQLite, WAL: opencode runs only during a turn, and the agent's lock keeps turns away meanwhile)."""
    import sqlite3

    moved = 0
    for database in sorted(opencode_data_dir().glob("opencode*.db")):
        with contextlib.closing(sqlite3.connect(database, timeout=30)) as conn, conn:
            moved += conn.execute(
                "UPDATE session SET directory = ?1 || substr(directory, ?2 + 1)"
                " WHERE directory = ?3 OR substr(directory, 1, ?2 + 1) = ?3 || '/'",
                (str(new), len(str(old)), str(old)),
            ).rowcount
    return f"opencode's sessions rebound to {new} ({moved})" if moved else ""


class AcpHarness:
    name = "acp"

    def __init__(self, agent: list[str] | None = None, *, state_dir: Path | None = None) -> None:
        self.agent = agent if agent is not None else shlex.split(os.environ.get(AGENT_VAR, ""))

    def _program(self, cwd: Path, session_id: str | None) -> list[str]:
        argv = [sys.executable, "-m", "ameesh.harnesses.acp_turn", "--cwd", str(cwd)]
        return argv + (["--resume", session_id] if session_id else [])

    def new_session_id(self) -> str | None:
        return None  # the agent chooses it (session/new)

    def session_exists(self, session_id: str, cwd: Path) -> bool:
        return True  # an id ameesh holds was given by the agent, which keeps the session

    def command(self, request: TurnRequest) -> list[str]:
        argv = self._program(request.cwd, None if request.new_session else request.session_id)
        if request.model:
            argv += ["--model", request.model]
        if request.effort:
            argv += ["--effort", request.effort]
        argv += ["--timeout", f"{turn_budget(request.timeout):g}", "--prompt", request.prompt]
        return [*argv, "--", *self.agent]

    def environment(self) -> dict[str, str]:
        return {}

    def session_in(self, line: str) -> str | None:
        if '"session"' not in line:
            return None
        events = json_objects(line)
        sid = events[0].get("session_id") if events and events[0].get("type") == "session" else None
        return sid if isinstance(sid, str) and sid else None

    def fatal_in(self, line: str) -> str | None:
        return None  # the turn program ends the turn itself (cancel) and prints its outcome

    def prepare_retry(self, session_id: str, cwd: Path, prompt: str) -> Retry:
        return Retry("resend")  # the turn program compares the loaded history with the prompt

    def parse(self, request: TurnRequest, returncode: int, stdout: str, stderr: str) -> TurnResult:
        events = json_objects(stdout)
        opened = [e for e in events if e.get("type") == "session"]
        sid = opened[-1].get("session_id") if opened else request.session_id
        results = [e for e in events if e.get("type") == "result"]
        if not results:
            return TurnResult(
                "failed", session_id=sid, error=f"acp: no result (exit {returncode}): {tail(stderr or stdout)}"
            )
        result = results[-1]
        notes = [str(n) for n in result.get("notes") or [] if n]
        if result.get("is_error") or returncode != 0:
            why = result.get("error") or f"stopped: {result.get('stop_reason')}"
            return TurnResult("failed", session_id=sid, error=f"acp: {why} (exit {returncode})", notes=notes)
        usage = result.get("usage")
        return TurnResult(
            "ok",
            session_id=sid,
            text=str(result.get("text") or ""),
            usage=usage if isinstance(usage, dict) else {},
            context_tokens=_context(result),
            notes=notes,
        )

    def follow_move(self, old: Path, new: Path) -> str:
        """ACP has no way to move a session: ``session/load`` takes a ``cwd`` but an agent may keep the
        directory the session was created in. opencode does (its database's ``session.directory``; a
        prompt in a session whose directory is gone fails with "OpenCode service failure"): its sessions
        of ``old`` are rebound to ``new`` in its database. Other agents are left as they are."""
        if not self.agent or not Path(self.agent[0]).name.startswith("opencode"):
            return ""
        return rebind_opencode_sessions(old, new)

    def attach_command(self, session_id: str, cwd: Path) -> list[str]:
        """A line-by-line chat on the session (an ACP agent has no terminal of its own: editors drive it)."""
        return [*self._program(cwd, session_id), "--chat", "--", *self.agent]
