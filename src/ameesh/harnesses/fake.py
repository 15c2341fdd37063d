"""The adapter for our scripted fake harness (``ameesh.harnesses.fakeprog``)."""

from __future__ import annotations

import json
import os
import sys
import uuid
from pathlib import Path

from ameesh import paths
from ameesh.harnesses import TurnRequest, TurnResult, claude_style_flags, tail


def fake_home() -> Path:
    value = os.environ.get("FAKE_HARNESS_HOME")
    return Path(value) if value else paths.home() / "fake-harness"


class FakeHarness:
    name = "fake"

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
