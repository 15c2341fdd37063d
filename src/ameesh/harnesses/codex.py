"""Codex CLI: ``codex exec --json [-m MODEL] [-c model_reasoning_effort="E"] PROMPT`` with stdin closed.

Codex chooses the thread id: it comes in the first event, ``thread.started``. Later turns resume it with
``codex exec resume --json [-m] [-c] THREAD_ID PROMPT`` (options after ``resume``); model and effort are
passed every turn because a resumed thread keeps neither. A turn is failed on an ``error`` or
``turn.failed`` event, or when no ``turn.completed`` came (e.g. killed while printing "Reconnecting...").
``turn.completed.usage`` is cumulative over the thread, so the context re-read is taken from the rollout
file (``$CODEX_HOME/sessions/YYYY/MM/DD/rollout-*-THREAD_ID.jsonl``): its last ``token_count`` event's
``info.last_token_usage.input_tokens``; only without a rollout, the turn's usage. The command is
``AMEESH_CODEX_BIN`` (default ``codex``).
"""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ameesh.harnesses import (
    Retry,
    TurnRequest,
    TurnResult,
    cue_for,
    json_objects,
    kept_unanswered,
    nearest_effort,
    tail,
)

# Codex's refusals to start for a cause in the set-up (no retry helps): a working directory outside a git
# repository it trusts, a CODEX_HOME that does not exist
SET_UP_ERRORS = ("Not inside a trusted directory", "Error finding codex home")
CODEX_EFFORTS = ("minimal", "low", "medium", "high", "xhigh")  # the Responses API's reasoning.effort


def codex_home() -> Path:
    value = os.environ.get("CODEX_HOME")
    return Path(value) if value else Path.home() / ".codex"


def rollout_path(thread_id: str) -> Path | None:
    """The newest rollout file of ``thread_id``, or None."""
    sessions = codex_home() / "sessions"
    if not sessions.is_dir():
        return None
    found = sorted(sessions.glob(f"*/*/*/rollout-*-{thread_id}.jsonl"))
    return found[-1] if found else None


def rollout_context(path: Path) -> int | None:
    """The input tokens of the last model call recorded in a rollout file (its last ``token_count``)."""
    found = None
    for event in json_objects(path.read_text(encoding="utf-8", errors="replace")):
        payload = event.get("payload") if event.get("type") == "event_msg" else event
        if not isinstance(payload, dict) or payload.get("type") != "token_count":
            continue
        info = payload.get("info")
        last = info.get("last_token_usage") if isinstance(info, dict) else None
        tokens = last.get("input_tokens") if isinstance(last, dict) else None
        if isinstance(tokens, int):
            found = tokens
    return found


def _user_turns(events: list[dict[str, Any]]) -> list[list[tuple[str, str]]]:
    """The thread's turns as Codex replays them: each a user prompt and what answered it (``agent``),
    rollback markers applied; the context Codex adds as user messages (``<environment_context>`` …) skipped."""
    turns: list[list[tuple[str, str]]] = []
    for event in events:
        payload = event.get("payload")
        if not isinstance(payload, dict):
            continue
        if event.get("type") == "event_msg" and payload.get("type") == "thread_rolled_back":
            count = payload.get("num_turns")
            if isinstance(count, int) and count > 0:
                del turns[-count:]
            continue
        if event.get("type") != "response_item" or payload.get("type") != "message":
            continue
        content = payload.get("content")
        parts = content if isinstance(content, list) else []
        text = "".join(str(p.get("text") or "") for p in parts if isinstance(p, dict))
        if payload.get("role") == "user" and not (text.startswith("<") and text.rstrip().endswith(">")):
            turns.append([("user", text)])
        elif payload.get("role") == "assistant" and turns:
            turns[-1].append(("agent", text))
    return turns


def _api_message(message: str) -> str:
    """Codex passes an API's error body through as JSON text: its ``error.message`` is what a person reads."""
    try:
        body = json.loads(message)
    except ValueError:
        return message
    error = body.get("error") if isinstance(body, dict) else None
    inner = error.get("message") if isinstance(error, dict) else None
    return inner if isinstance(inner, str) and inner else message


class CodexHarness:
    name = "codex"

    def __init__(self, binary: str | None = None, *, state_dir: Path | None = None) -> None:
        self.binary = binary or os.environ.get("AMEESH_CODEX_BIN") or "codex"

    def new_session_id(self) -> str | None:
        return None  # Codex chooses the thread id (thread.started)

    def session_exists(self, session_id: str, cwd: Path) -> bool:
        return rollout_path(session_id) is not None

    def command(self, request: TurnRequest) -> list[str]:
        resume = request.session_id is not None and not request.new_session
        argv = [self.binary, "exec", *(["resume"] if resume else []), "--json"]
        if request.model:
            argv += ["-m", request.model]
        if request.effort:  # Codex passes the value to the API unchecked: the API's levels stop at xhigh
            argv += ["-c", f'model_reasoning_effort="{nearest_effort(request.effort, CODEX_EFFORTS)}"']
        if resume and request.session_id:
            argv.append(request.session_id)
        argv.append(request.prompt)
        return argv

    def environment(self) -> dict[str, str]:
        return {}

    def session_in(self, line: str) -> str | None:
        """``thread.started`` carries the thread id Codex chose: the first line of a new thread."""
        if '"thread.started"' not in line:
            return None
        event = json_objects(line)
        thread = event[0].get("thread_id") if event else None
        return thread if isinstance(thread, str) and thread else None

    def fatal_in(self, line: str) -> str | None:
        """An ``error`` event (Codex prints "Reconnecting... n/5" ones while it retries a dead server, for
        minutes) or ``turn.failed``: ameesh's backoff decides instead."""
        if '"error"' not in line and '"turn.failed"' not in line:
            return None
        events = json_objects(line)
        event = events[0] if events else {}
        if event.get("type") == "error":
            return _api_message(str(event.get("message") or "error"))
        if event.get("type") == "turn.failed":
            error = event.get("error")
            return str(error.get("message") if isinstance(error, dict) else error or "turn failed")
        return None

    def prepare_retry(self, session_id: str, cwd: Path, prompt: str) -> Retry:
        """A failed turn leaves its prompt in the rollout (a user message, no answer) and ``codex exec``
        has no rewind; but Codex replays a rollout through its rollback markers (``thread_rolled_back``
        events, which its own ``thread/rollback`` writes): one appended after the failed turn drops it from
        the thread, and the prompt is sent again as if the attempt never happened. A prompt kept *before*
        later answered turns (a thread from an older ameesh) cannot be dropped alone: a cue names it."""
        path = rollout_path(session_id)
        if path is None:
            return Retry("resend")
        events = json_objects(path.read_text(encoding="utf-8", errors="replace"))
        turns = _user_turns(events)
        kept = kept_unanswered([entry for turn in turns for entry in turn], prompt)
        if kept != "last":
            return cue_for(kept, prompt)
        dropped = 1 + next(i for i, turn in enumerate(reversed(turns)) if turn[0][1].strip() == prompt.strip())
        ordinal = max((e["ordinal"] for e in events if isinstance(e.get("ordinal"), int)), default=len(events) - 1)
        marker = {
            "timestamp": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z",
            "ordinal": ordinal + 1,
            "type": "event_msg",
            "payload": {"type": "thread_rolled_back", "num_turns": dropped},
        }
        with path.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(marker) + "\n")
        return Retry("resend", note=f"the failed attempt rolled back out of thread {session_id} ({dropped} turn(s))")

    def parse(self, request: TurnRequest, returncode: int, stdout: str, stderr: str) -> TurnResult:
        sid = request.session_id
        texts: list[str] = []
        usage: dict[str, Any] | None = None
        errors: list[str] = []
        for event in json_objects(stdout):
            kind = event.get("type")
            if kind == "thread.started" and isinstance(event.get("thread_id"), str):
                sid = event["thread_id"]
            elif kind == "item.completed":
                item = event.get("item")
                if isinstance(item, dict) and item.get("type") == "agent_message":
                    texts.append(str(item.get("text") or ""))
            elif kind == "turn.completed":
                usage = event.get("usage") if isinstance(event.get("usage"), dict) else {}
            elif kind == "error":
                errors.append(_api_message(str(event.get("message") or "error")))
            elif kind == "turn.failed":
                error = event.get("error")
                errors.append(str(error.get("message") if isinstance(error, dict) else error or "turn failed"))
        if errors:
            return TurnResult("failed", session_id=sid, error=f"codex: {errors[-1]} (exit {returncode})")
        if usage is None:
            return TurnResult(
                "failed",
                session_id=sid,
                error=f"codex: no turn.completed (exit {returncode}): {tail(stderr or stdout)}",
                deterministic=any(words in stderr for words in SET_UP_ERRORS),  # no outage: a person fixes it
            )
        if returncode != 0:
            return TurnResult("failed", session_id=sid, error=f"codex exited {returncode}: {tail(stderr or stdout)}")
        context = None
        path = rollout_path(sid) if sid else None
        if path is not None:
            context = rollout_context(path)
        if context is None and isinstance(usage.get("input_tokens"), int):
            context = usage["input_tokens"]
        return TurnResult("ok", session_id=sid, text=texts[-1] if texts else "", usage=usage, context_tokens=context)

    def follow_move(self, old: Path, new: Path) -> str:
        return ""  # Codex resumes a thread by id from any directory

    def attach_command(self, session_id: str, cwd: Path) -> list[str]:
        return [self.binary, "resume", session_id]
