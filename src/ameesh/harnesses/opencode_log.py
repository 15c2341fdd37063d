"""Fail fast on opencode: its first model-call error, read from its log while an ACP turn runs.

opencode retries a failed model call on its own (after 2, 4, 8, 16, 30 s: about 90 s against a dead
server, 145 s on HTTP 500s) and says nothing over ACP meanwhile; it has no setting for it. Each failed try
is logged at once (``$XDG_DATA_HOME/opencode/log/opencode.log``, a line ``level=ERROR … message="stream
error" … session.id=ID … error.error="…"``). The ACP turn program watches that file from the turn's start
and, at the first such line of its session, cancels the prompt and fails the turn with the error — as
the other harnesses' first error event does (``Harness.fatal_in``); ameesh's backoff decides about retries.
"""

from __future__ import annotations

import asyncio
import os
import re
from pathlib import Path

POLL = 0.25  # seconds between two reads of the log (a file: no event to wait on)
_ERROR = re.compile(r'error\.error="((?:[^"\\]|\\.)*)"')


def log_dir() -> Path:
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "opencode" / "log"


def is_opencode(agent: list[str]) -> bool:
    return bool(agent) and Path(agent[0]).name.startswith("opencode")


def stream_error(line: str, session_id: str) -> str | None:
    """The error a log line reports for ``session_id``'s model call, if it is one."""
    if 'message="stream error"' not in line or f"session.id={session_id}" not in line:
        return None
    found = _ERROR.search(line)
    text = found.group(1).replace('\\"', '"').replace("\\n", " ") if found else "stream error"
    return " ".join(text.split())[:400]


class LogWatch:
    """The log's files as they are now: what is written after this point is read by :meth:`first_error`."""

    def __init__(self) -> None:
        self.offsets = {path: _size(path) for path in _logs()}

    async def first_error(self, session_id: str) -> str:
        """Wait for the first stream error of ``session_id`` logged since this watch began."""
        pending = ""
        while True:
            for path in _logs():
                offset = self.offsets.get(path, 0)
                size = _size(path)
                if size < offset:  # rotated or truncated
                    offset = 0
                if size > offset:
                    with path.open("rb") as handle:
                        handle.seek(offset)
                        chunk = handle.read(size - offset)
                    self.offsets[path] = size
                    *lines, pending = (pending + chunk.decode("utf-8", "replace")).split("\n")
                    for line in lines:
                        error = stream_error(line, session_id)
                        if error is not None:
                            return error
            await asyncio.sleep(POLL)


def _logs() -> list[Path]:
    directory = log_dir()
    return sorted(directory.glob("*.log")) if directory.is_dir() else []


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0
