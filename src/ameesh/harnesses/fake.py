"""The adapter for our scripted fake harness (``ameesh.harnesses.fakeprog``)."""

from __future__ import annotations

import json
import os
import sys
import uuid
from pathlib import Path
from typing import Any

from ameesh import paths
from ameesh.harnesses import Retry, TurnRequest, TurnResult, claude_style_flags, tail
from ameesh.harnesses.claude import fatal_event, rewind_plan


def fake_home() -> Path:
    value = os.environ.get("FAKE_HARNESS_HOME")
    return Path(value) if value else paths.home() / "fake-harness"


class FakeHarness:
    name = "fake"

    def __init__(self, *, state_dir: Path | None = None) -> None:
        pass

    def new_session_id(self) -> str | None:
        return str(uuid.uuid4())

    def session_exists(self, session_id: str, cwd: Path) -> bool:
        return (fake_home() / "sessions" / f"{session_id}.json").exists()

    def command(self, request: TurnRequest) -> list[str]:
        return [
            sys.executable,
            "-m",
            "ameesh.harnesses.fakeprog",
            "-p",
            request.prompt,
            *claude_style_flags(request),
        ]

    def environment(self) -> dict[str, str]:
        return {"FAKE_HARNESS_HOME": str(fake_home())}

    def session_in(self, line: str) -> str | None:
        return None

    def fatal_in(self, line: str) -> str | None:
        return fatal_event(line)

    def prepare_retry(self, session_id: str, cwd: Path, prompt: str) -> Retry:
        """Like Claude Code: a failed attempt is in the history; rewind, or a fresh session."""
        path = fake_home() / "sessions" / f"{session_id}.json"
        if not path.exists():
            return Retry("resend")
        history = json.loads(path.read_text(encoding="utf-8"))
        entries: list[dict[str, Any]] = []
        parent = None
        for n, turn in enumerate(history):  # the history as a Claude-style chain of entries
            entries.append(
                {"type": "user", "uuid": f"u{n}", "parentUuid": parent, "message": {"content": turn["prompt"]}}
            )
            failed = turn["answer"] is None
            entries.append(
                {"type": "assistant", "uuid": turn["uuid"], "parentUuid": f"u{n}", "isApiErrorMessage": failed}
            )
            parent = turn["uuid"]
        return rewind_plan(entries, prompt)

    def parse(self, request: TurnRequest, returncode: int, stdout: str, stderr: str) -> TurnResult:
        obj = None
        for line in stdout.splitlines():
            try:
                candidate = json.loads(line)
            except ValueError:
                continue
            if isinstance(candidate, dict) and candidate.get("type") == "result":
                obj = candidate
        if obj is None:
            return TurnResult("failed", error=f"fake: no result (exit {returncode}): {tail(stderr or stdout)}")
        sid = obj.get("session_id") if isinstance(obj.get("session_id"), str) else request.session_id
        if obj.get("is_error") or returncode != 0:
            return TurnResult("failed", session_id=sid, error=f"fake: {obj.get('result') or tail(stderr)}")
        context = obj.get("context_tokens")
        return TurnResult(
            "ok",
            session_id=sid,
            text=str(obj.get("result") or ""),
            usage=obj.get("usage") or {},
            context_tokens=context if isinstance(context, int) else None,
        )

    def follow_move(self, old: Path, new: Path) -> str:
        return ""  # the fake harness keys nothing by directory

    def attach_command(self, session_id: str, cwd: Path) -> list[str]:
        return [sys.executable, "-m", "ameesh.harnesses.fakeprog", "-p", "", "--resume", session_id]
