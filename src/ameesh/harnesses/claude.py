"""Claude Code: ``claude -p PROMPT --output-format stream-json --verbose``, model and effort every turn.

The first turn of a session creates it with a pre-allocated id (``--session-id``); later turns, and crash
recovery once the transcript exists, use ``--resume``. The result is judged by ``is_error``, not by the
exit code alone. The context re-read is the last assistant message's usage (input + cache read + cache
creation), from the stream, else from the transcript; never the turn's summed ``usage``. The command is
``AMEESH_CLAUDE_BIN`` (default ``claude``).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import uuid
from pathlib import Path
from typing import Any

from ameesh.harnesses import Retry, TurnRequest, TurnResult, claude_style_flags, json_objects, tail


def config_dir() -> Path:
    value = os.environ.get("CLAUDE_CONFIG_DIR")
    return Path(value) if value else Path.home() / ".claude"


def transcript_path(session_id: str, cwd: Path) -> Path:
    """Where Claude Code keeps a session's transcript: keyed by the working directory."""
    return config_dir() / "projects" / re.sub(r"[^A-Za-z0-9]", "-", str(cwd)) / f"{session_id}.jsonl"


def context_of(usage: Any) -> int | None:
    if not isinstance(usage, dict):
        return None
    keys = ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")
    values = [usage.get(k) for k in keys]
    if not any(isinstance(v, int) for v in values):
        return None
    return sum(v for v in values if isinstance(v, int))


def user_text(entry: dict[str, Any]) -> str | None:
    """The text a person typed, for a transcript's user entry (None for tool results and other entries)."""
    message = entry.get("message")
    if entry.get("type") != "user" or not isinstance(message, dict):
        return None
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list) and all(isinstance(c, dict) and c.get("type") == "text" for c in content):
        return "".join(str(c.get("text") or "") for c in content)
    return None


def rewind_plan(entries: list[dict[str, Any]], prompt: str) -> Retry:
    """Claude-style transcript → how to play ``prompt`` again: a failed attempt records the prompt (and a
    synthetic ``isApiErrorMessage`` answer); ``--resume-session-at`` the assistant entry the prompt answered
    (up its ``parentUuid`` chain) drops that branch, and with none (the prompt opened the session) a fresh
    session is needed. Only the session's last prompt is undone: an older one was followed by others."""
    typed = [i for i, e in enumerate(entries) if user_text(e) is not None]
    if not typed or user_text(entries[typed[-1]]) != prompt:
        return Retry("resend")
    by_uuid = {e["uuid"]: e for e in entries if isinstance(e.get("uuid"), str)}
    parent = entries[typed[-1]].get("parentUuid")
    while isinstance(parent, str) and parent in by_uuid:
        entry = by_uuid[parent]
        if entry.get("type") == "assistant" and not entry.get("isApiErrorMessage"):
            return Retry("rewind", point=parent, note=f"resumed at {parent}, before the failed attempt")
        parent = entry.get("parentUuid")
    return Retry("fresh", note="the failed attempt opened the session: a new one is opened")


def last_assistant_context(lines: list[str]) -> int | None:
    """The context of the last assistant message among JSON lines (stream-json events or a transcript)."""
    found = None
    for line in lines:
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if isinstance(event, dict) and event.get("type") == "assistant":
            message = event.get("message")
            if isinstance(message, dict):
                found = context_of(message.get("usage")) or found
    return found


def fatal_event(line: str) -> str | None:
    if '"result"' not in line and '"api_retry"' not in line:
        return None
    try:
        event = json.loads(line)
    except ValueError:
        return None
    if not isinstance(event, dict):
        return None
    if event.get("type") == "result" and event.get("is_error"):
        return str(event.get("result") or event.get("subtype") or "error result")
    if event.get("type") == "system" and event.get("subtype") == "api_retry":
        status, error = event.get("error_status"), event.get("error")
        if status is None and error in {None, "unknown"}:  # no HTTP answer: Claude Code names the cause later
            attempt, most = event.get("attempt"), event.get("max_retries")
            if isinstance(attempt, int) and isinstance(most, int) and attempt >= most:
                return None  # its last try: the result follows at once with the cause ("Unable to connect…")
            return "could not reach the model API (no HTTP answer)"
        return f"model API error {status or ''} {error or ''}".strip()
    return None


class ClaudeHarness:
    name = "claude"

    def __init__(self, binary: str | None = None, *, state_dir: Path | None = None) -> None:
        self.binary = binary or os.environ.get("AMEESH_CLAUDE_BIN") or "claude"

    def new_session_id(self) -> str | None:
        return str(uuid.uuid4())

    def session_exists(self, session_id: str, cwd: Path) -> bool:
        return transcript_path(session_id, cwd).exists()

    def command(self, request: TurnRequest) -> list[str]:
        return [
            self.binary,
            "-p",
            request.prompt,
            "--output-format",
            "stream-json",
            "--verbose",
            *claude_style_flags(request),
        ]

    def environment(self) -> dict[str, str]:
        """No retries of its own unless the user set them (``CLAUDE_CODE_MAX_RETRIES``): ameesh's backoff
        decides, and a failed call's result then names its cause at once ("API Error: Unable to connect to
        API (ConnectionRefused)") instead of an ``api_retry`` event that says "unknown"."""
        return {} if "CLAUDE_CODE_MAX_RETRIES" in os.environ else {"CLAUDE_CODE_MAX_RETRIES": "0"}

    def session_in(self, line: str) -> str | None:
        return None  # ameesh chose the id (--session-id); a different one only matters in the result

    def fatal_in(self, line: str) -> str | None:
        """A ``result`` with ``is_error``, or an ``api_retry`` (Claude Code would wait and retry on its own,
        for minutes: ameesh's backoff decides instead)."""
        return fatal_event(line)

    def prepare_retry(self, session_id: str, cwd: Path, prompt: str) -> Retry:
        path = transcript_path(session_id, cwd)
        return (
            rewind_plan(json_objects(path.read_text(encoding="utf-8", errors="replace")), prompt)
            if path.exists()
            else Retry("resend")
        )

    def parse(self, request: TurnRequest, returncode: int, stdout: str, stderr: str) -> TurnResult:
        lines = stdout.splitlines()
        result: dict[str, Any] | None = None
        for line in lines:
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if isinstance(event, dict) and event.get("type") == "result":
                result = event
        if result is None:
            return TurnResult(
                "failed",
                session_id=request.session_id,
                error=f"claude gave no result (exit {returncode}): {tail(stderr or stdout)}",
            )
        sid = result.get("session_id") if isinstance(result.get("session_id"), str) else request.session_id
        text = str(result.get("result") or "")
        if result.get("is_error") or returncode != 0:
            why = text or result.get("subtype") or tail(stderr)
            return TurnResult("failed", session_id=sid, error=f"claude: {why} (exit {returncode})")
        context = last_assistant_context(lines)
        if context is None and sid:
            path = transcript_path(sid, request.cwd)
            if path.exists():
                context = last_assistant_context(path.read_text(encoding="utf-8", errors="replace").splitlines())
        usage = result.get("usage")
        return TurnResult(
            "ok", session_id=sid, text=text, usage=usage if isinstance(usage, dict) else {}, context_tokens=context
        )

    def follow_move(self, old: Path, new: Path) -> str:
        """Copy the transcripts of ``old`` into ``new``'s project folder (existing files are kept): Claude
        Code finds a session only under the directory it runs in."""
        source = transcript_path("x", old).parent
        target = transcript_path("x", new).parent
        if not source.is_dir():
            return ""
        copied = 0
        for path in sorted(source.glob("*.jsonl")):
            destination = target / path.name
            if not destination.exists():
                target.mkdir(parents=True, exist_ok=True)
                shutil.copy2(path, destination)
                copied += 1
        return f"{copied} Claude Code transcript(s) copied there" if copied else ""

    def attach_command(self, session_id: str, cwd: Path) -> list[str]:
        return [self.binary, "--resume", session_id]
