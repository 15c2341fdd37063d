"""Harness processes left running by a runner that died mid-turn.

Each turn's process is started in a process group of its own (its pid is the group id), so a runner killed
mid-turn leaves it running: it would go on writing into the session while the next runner resumes that
same session. The runner therefore records the group of the turn it plays (``AMEESH_HOME/agents/NAME/
turn.json``: pid and the process's start time) and removes the record when the turn ends; before an
agent's next turn, a record still there names a leftover, which is ended (SIGKILL to the whole group).

A pid can be reused: the record is trusted only while the group's leader has the recorded start time, or,
once the leader is gone, while other members of its group live (Linux does not hand out a pid that is still
some group's id).
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path

from ameesh import paths


def _record_path(root: Path, name: str) -> Path:
    return paths.agent_dir(root, name) / "turn.json"


def record(root: Path, name: str, pid: int) -> None:
    """Note that the agent's turn runs in process group ``pid``."""
    from commons.processes import start_time

    path = _record_path(root, name)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({"pid": pid, "start": start_time(pid)}) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def playing(root: Path, name: str) -> dict[str, float | int] | None:
    """The turn being played for the agent now (``pid`` of its process group, ``since`` when the record was
    written), or None: no record, or one whose process is gone (a leftover of a dead runner, ended at the
    agent's next turn)."""
    path = _record_path(root, name)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        pid, start, since = int(data["pid"]), data.get("start"), path.stat().st_mtime
    except (OSError, ValueError, KeyError, TypeError):
        return None
    from commons.processes import exited, start_time  # only with a record (H18: ameesh status starts fast)

    leader_start = start_time(pid)
    if leader_start is None or leader_start != start or exited(pid):
        return None
    return {"pid": pid, "since": since}


def clear(root: Path, name: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        _record_path(root, name).unlink()


def end_leftover(root: Path, name: str, wait: float = 10.0) -> int | None:
    """End the process group of a turn a dead runner left running; its id, or None if there was none."""
    path = _record_path(root, name)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        pid, start = int(data["pid"]), data.get("start")
    except (OSError, ValueError, KeyError, TypeError):
        clear(root, name)
        return None
    from commons.processes import end_group, group_alive, start_time

    leader_start = start_time(pid)
    ours = (leader_start is not None and leader_start == start) or (leader_start is None and group_alive(pid))
    if not ours or pid <= 1:
        clear(root, name)
        return None
    end_group(pid, wait=wait)  # SIGKILL to the group, then wait: it takes effect soon, not at once
    clear(root, name)
    return pid
