"""Where ameesh keeps its state: ``AMEESH_HOME`` (default: the platform's data directory for ameesh).

AMEESH_HOME/registry.db          the SQLite registry (agents, sessions, turns, inbox, thread, alerts)
AMEESH_HOME/agents/NAME/         one state directory per agent
AMEESH_HOME/agents/NAME/session.json   its current session id and lot (H2: read when the registry lost it)
AMEESH_HOME/agents/NAME/agent.json     whose state this is (the agent's uid): a name can be reused, a uid never
AMEESH_HOME/removed/NAME.UID/          the state of a removed agent, kept under a unique name
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path


def home() -> Path:
    value = os.environ.get("AMEESH_HOME")
    if value:
        return Path(value)
    import platformdirs  # only without AMEESH_HOME (H18: commands start fast)

    return Path(platformdirs.user_data_dir("ameesh"))


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


def owner_file(root: Path, name: str) -> Path:
    return agent_dir(root, name) / "agent.json"


def new_uid() -> str:
    import uuid

    return uuid.uuid4().hex


def claim(root: Path, name: str, uid: str) -> None:
    """Make the agent's state directory, recording that it is ``uid``'s."""
    path = owner_file(root, name)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({"uid": uid, "name": name, "created_at": time.time()}) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def owner(root: Path, name: str) -> str | None:
    try:
        data = json.loads(owner_file(root, name).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    uid = data.get("uid") if isinstance(data, dict) else None
    return uid if isinstance(uid, str) else None


def owned_by(root: Path, name: str, uid: str | None) -> bool:
    """Whether the state directory is this agent's (an agent registered before uids existed owns it)."""
    return uid is None or owner(root, name) == uid


def leftover(root: Path, name: str) -> bool:
    """A state directory with something in it (a removed agent's session, files) under this name."""
    directory = agent_dir(root, name)
    return directory.is_dir() and any(p.name != "lock" for p in directory.iterdir())


def archive(root: Path, name: str) -> Path | None:
    """Move the agent's state directory out of the way, under a unique name; where it went (None: none)."""
    directory = agent_dir(root, name)
    if not directory.is_dir():
        return None
    import uuid

    target = root / "removed" / f"{name}.{owner(root, name) or uuid.uuid4().hex}"
    while target.exists():
        target = target.with_name(f"{target.name}.{uuid.uuid4().hex[:8]}")
    target.parent.mkdir(parents=True, exist_ok=True)
    os.replace(directory, target)
    return target
