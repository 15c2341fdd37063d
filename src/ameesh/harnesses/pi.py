"""pi: ``pi -p --mode json --model PROVIDER/ID [--thinking E] --session /ABS/PATH.jsonl PROMPT``.

ameesh owns the session *file*: the session id ameesh records is a name it chooses, and the file is
``SESSIONS_DIR/ID.jsonl`` in the agent's state directory (``pi-sessions``); pi creates it on the first turn
and resumes it afterwards (a bare id from another directory would ask an interactive question). The first
output line is ``{"type":"session","id":…}`` (pi's own id, kept in the usage). pi exits 0 on an API error:
a turn whose last assistant message has ``stopReason: "error"`` is failed whatever the exit code. The
context re-read is that message's ``usage`` (input + cacheRead + cacheWrite). A session file records its
working directory in its header line and pi refuses to resume it once that directory is gone ("Stored
session working directory does not exist"): when ameesh adopts a moved worktree, the headers are
rewritten to the new place. The command is ``AMEESH_PI_BIN`` (default ``pi``).
"""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path
from typing import Any

from ameesh import paths
from ameesh.harnesses import Retry, TurnRequest, TurnResult, nearest_effort, tail

PI_EFFORTS = ("minimal", "low", "medium", "high", "xhigh")  # `pi --thinking` (also off)


def _text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    return "".join(str(c.get("text") or "") for c in content if isinstance(c, dict) and c.get("type") == "text")


def _context(usage: Any) -> int | None:
    if not isinstance(usage, dict):
        return None
    values = [usage.get(k) for k in ("input", "cacheRead", "cacheWrite")]
    if not any(isinstance(v, int) for v in values):
        return None
    return sum(v for v in values if isinstance(v, int))


class PiHarness:
    name = "pi"

    def __init__(
        self, sessions_dir: Path | None = None, binary: str | None = None, *, state_dir: Path | None = None
    ) -> None:
        self.sessions_dir = sessions_dir or (state_dir / "pi-sessions" if state_dir else paths.home() / "pi-sessions")
        self.binary = binary or os.environ.get("AMEESH_PI_BIN") or "pi"

    def session_path(self, session_id: str) -> Path:
        return (self.sessions_dir / f"{session_id}.jsonl").absolute()

    def new_session_id(self) -> str | None:
        return str(uuid.uuid4())

    def session_exists(self, session_id: str, cwd: Path) -> bool:
        return self.session_path(session_id).exists()

    def command(self, request: TurnRequest) -> list[str]:
        argv = [self.binary, "-p", "--mode", "json"]
        if request.model:
            argv += ["--model", request.model]
        if request.effort:  # pi's levels stop at xhigh: max becomes xhigh
            argv += ["--thinking", nearest_effort(request.effort, PI_EFFORTS)]
        if request.session_id:
            self.sessions_dir.mkdir(parents=True, exist_ok=True)
            argv += ["--session", str(self.session_path(request.session_id))]
        argv.append(request.prompt)
        return argv

    def environment(self) -> dict[str, str]:
        return {}

    def session_in(self, line: str) -> str | None:
        return None  # ameesh owns the session file: its name is the id

    def fatal_in(self, line: str) -> str | None:
        """An assistant message that ended on an error (pi would retry on its own, waiting 2, 4, 8 s…)."""
        if '"stopReason":"error"' not in line.replace(" ", "") or '"message_end"' not in line:
            return None
        try:
            event = json.loads(line)
        except ValueError:
            return None
        message = event.get("message") if isinstance(event, dict) else None
        if isinstance(message, dict) and message.get("role") == "assistant" and message.get("stopReason") == "error":
            return str(message.get("errorMessage") or "the model call failed")
        return None

    def prepare_retry(self, session_id: str, cwd: Path, prompt: str) -> Retry:
        """pi records the prompt and its error answers; ameesh owns the session file: it is cut back to
        before the prompt (pi's files are append-only trees whose leaf is the last line)."""
        path = self.session_path(session_id)
        if not path.exists():
            return Retry("resend")
        lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
        index, last = None, None
        for i, line in enumerate(lines):
            try:
                entry = json.loads(line)
            except ValueError:
                continue
            message = entry.get("message") if isinstance(entry, dict) else None
            if isinstance(message, dict) and message.get("role") == "user":
                index, last = i, _text(message)
        if index is None or last != prompt:  # only the session's last prompt is undone
            return Retry("resend")
        tmp = path.with_suffix(".tmp")
        tmp.write_text("".join(lines[:index]), encoding="utf-8")
        os.replace(tmp, path)
        return Retry("resend", note=f"the session file was cut back to before the failed attempt ({index} lines)")

    def parse(self, request: TurnRequest, returncode: int, stdout: str, stderr: str) -> TurnResult:
        pi_id: str | None = None
        last: dict[str, Any] | None = None
        for line in stdout.splitlines():
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if not isinstance(event, dict):
                continue
            if event.get("type") == "session" and isinstance(event.get("id"), str):
                pi_id = event["id"]
            elif event.get("type") in {"message_end", "turn_end"}:
                message = event.get("message")
                if isinstance(message, dict) and message.get("role") == "assistant":
                    last = message
        sid = request.session_id
        if pi_id is None or last is None:
            return TurnResult(
                "failed",
                session_id=sid,
                error=f"pi: no session or no answer (exit {returncode}): {tail(stderr or stdout)}",
            )
        if last.get("stopReason") in {"error", "aborted"}:
            why = last.get("errorMessage") or tail(stderr) or "the model call failed"
            return TurnResult(
                "failed", session_id=sid, error=f"pi: {last.get('stopReason')}: {why} (exit {returncode})"
            )
        if returncode != 0:
            return TurnResult("failed", session_id=sid, error=f"pi exited {returncode}: {tail(stderr or stdout)}")
        usage = last.get("usage")
        return TurnResult(
            "ok",
            session_id=sid,
            text=_text(last),
            usage={**(usage if isinstance(usage, dict) else {}), "pi_session_id": pi_id},
            context_tokens=_context(usage),
        )

    def follow_move(self, old: Path, new: Path) -> str:
        """Point the session files recorded in ``old`` at ``new`` (their header's ``cwd``), atomically."""
        moved = 0
        for path in sorted(self.sessions_dir.glob("*.jsonl")) if self.sessions_dir.is_dir() else []:
            head, newline, rest = path.read_text(encoding="utf-8").partition("\n")
            try:
                header = json.loads(head)
            except ValueError:
                continue
            if not isinstance(header, dict) or header.get("type") != "session" or header.get("cwd") != str(old):
                continue
            header["cwd"] = str(new)
            tmp = path.with_suffix(".tmp")
            tmp.write_text(json.dumps(header, ensure_ascii=False) + newline + rest, encoding="utf-8")
            os.replace(tmp, path)
            moved += 1
        return f"{moved} pi session file(s) pointed there" if moved else ""

    def attach_command(self, session_id: str, cwd: Path) -> list[str]:
        return [self.binary, "--session", str(self.session_path(session_id))]
