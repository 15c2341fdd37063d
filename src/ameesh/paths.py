"""Where ameesh keeps its state: ``AMEESH_HOME`` (default: the platform's data directory for ameesh).

AMEESH_HOME/registry.db          the SQLite registry (agents, sessions, turns, inbox, thread, alerts)
AMEESH_HOME/agents/NAME/         one state directory per agent
AMEESH_HOME/agents/NAME/session.json   its current session id and lot (H2: read when the registry lost it)
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import platformdirs


def home() -> Path:
    value = os.environ.get("AMEESH_HOME")
    return Path(value) if value else Path(platformdirs.user_data_dir("ameesh"))


def registry_path(root: Path) -> Path:
    return root / "registry.db"


def agent_dir(root: Path, name: str) -> Path:
    return root / "agents" / name


def session_file(root: Path, name: str) -> Path:
    return agent_dir(root, name) / "session.json"


def write_session_file(root: Path, name: str, session_id: str | None, lot: str | None) -> None:
    """Atomically record the agent's current session (``None``: no session open)."""
    path = session_file(root, name)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({"session_id": session_id, "lot": lot}) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def read_session_file(root: Path, name: str) -> tuple[str | None, str | None]:
    """The session id and lot in the agent's state file; ``(None, None)`` when it is absent or unreadable."""
    try:
        data = json.loads(session_file(root, name).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None, None
    if not isinstance(data, dict):
        return None, None
    sid, lot = data.get("session_id"), data.get("lot")
    return (sid if isinstance(sid, str) and sid else None, lot if isinstance(lot, str) else None)
