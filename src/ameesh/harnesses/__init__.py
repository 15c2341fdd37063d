"""Harness adapters: one interface over Claude Code, Codex CLI, pi, anyy and our scripted fake.

A turn is one run of the harness's command line under a timeout counted from the moment its process
starts, in its own process group (killed whole on timeout), judged by what it printed — not only by its
exit code. Its output is read as it comes: a session id the harness announces (Codex's ``thread.started``)
is handed to the caller at once, so it is on record before the turn ends, even if the runner dies then.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

# ameesh's effort scale (the canon's); each harness takes part of it: ``nearest_effort`` maps onto that part.
EFFORTS = ("minimal", "low", "medium", "high", "xhigh", "max")
CLAUDE_EFFORTS = ("low", "medium", "high", "xhigh", "max")  # `claude --effort`; others are ignored with a warning


def nearest_effort(effort: str, supported: tuple[str, ...]) -> str:
    """``effort`` if the harness takes it, else the nearest level it takes (a harness warns and ignores a
    value it does not know: the agent would run on the harness's default instead of near what was set)."""
    if effort in supported or effort not in EFFORTS:
        return effort
    rank = EFFORTS.index(effort)
    return min(supported, key=lambda level: (abs(EFFORTS.index(level) - rank), EFFORTS.index(level)))


@dataclass(frozen=True)
class TurnRequest:
    prompt: str
    cwd: Path
    session_id: str | None  # the session to resume or to create (a pre-allocated id), or None
    new_session: bool  # True: create session_id (or let the harness choose one); False: resume it
    model: str | None = None
    effort: str | None = None
    timeout: float = 3600.0


@dataclass
class TurnResult:
    outcome: str  # ok | failed | timeout
    session_id: str | None = None
    text: str = ""
    usage: dict[str, Any] = field(default_factory=dict)
    context_tokens: int | None = None  # the context the harness re-read on its last model call
    error: str | None = None
    duration: float = 0.0

    @property
    def ok(self) -> bool:
        return self.outcome == "ok"


class Harness(Protocol):
    name: str

    def new_session_id(self) -> str | None:
        """An id to create the next session with, or None when the harness chooses it."""

    def session_exists(self, session_id: str, cwd: Path) -> bool:
        """Whether the harness can resume ``session_id`` from ``cwd`` (after a crash during a first turn)."""

    def command(self, request: TurnRequest) -> list[str]: ...

    def environment(self) -> dict[str, str]: ...

    def session_in(self, line: str) -> str | None:
        """The session id an output line announces, if any (read while the turn runs)."""

    def parse(self, request: TurnRequest, returncode: int, stdout: str, stderr: str) -> TurnResult: ...

    def attach_command(self, session_id: str, cwd: Path) -> list[str]:
        """The command that opens ``session_id`` interactively (H3)."""

    def follow_move(self, old: Path, new: Path) -> str:
        """Make the sessions kept for working directory ``old`` resumable from ``new`` (H9); a note for
        the thread saying what was done, or ``""``."""


async def play(
    harness: Harness,
    request: TurnRequest,
    *,
    on_start: Callable[[int], None] | None = None,
    on_session: Callable[[str], None] | None = None,
) -> TurnResult:
    """Run one turn of ``harness`` under ``request.timeout``; never raises for the harness's failures.

    ``on_start(pid)`` is called once the process runs (its pid is also its process group), and
    ``on_session(id)`` as soon as the output announces a session id other than the request's.
    """
    import asyncio  # here, not at the top: the fake harness program imports this package and starts 3x faster

    started = time.monotonic()
    env = {**os.environ, **harness.environment()}
    try:
        proc = await asyncio.create_subprocess_exec(
            *harness.command(request),
            cwd=request.cwd,
            env=env,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            start_new_session=True,
        )
    except OSError as exc:
        return TurnResult("failed", error=f"cannot start {harness.name}: {exc}", duration=time.monotonic() - started)
    if on_start is not None:
        try:
            on_start(proc.pid)
        except BaseException:  # nothing may run that the caller does not know of
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            await proc.wait()
            raise
    assert proc.stdout is not None
    assert proc.stderr is not None
    stdout, stderr = proc.stdout, proc.stderr

    async def read_stdout() -> bytes:
        chunks: list[bytes] = []
        pending = b""  # the start of a line not yet complete, while a session id may still be announced
        announced = on_session is None
        while chunk := await stdout.read(65536):
            chunks.append(chunk)
            if announced:
                continue
            *lines, pending = (pending + chunk).split(b"\n")
            for line in lines:
                sid = harness.session_in(line.decode("utf-8", "replace"))
                if sid and sid != request.session_id and on_session is not None:
                    on_session(sid)
                    announced = True
                    break
        return b"".join(chunks)

    reading = asyncio.gather(read_stdout(), stderr.read(), proc.wait())
    try:
        out, err, _ = await asyncio.wait_for(reading, max(0.0, request.timeout - (time.monotonic() - started)))
    except (TimeoutError, asyncio.CancelledError) as exc:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        await proc.wait()
        if isinstance(exc, asyncio.CancelledError):
            raise
        return TurnResult(
            "timeout",
            session_id=request.session_id,
            error=f"{harness.name} gave no answer within {request.timeout:g} s (killed)",
            duration=time.monotonic() - started,
        )
    result = harness.parse(
        request, proc.returncode or 0, out.decode("utf-8", "replace"), err.decode("utf-8", "replace")
    )
    result.duration = time.monotonic() - started
    return result


def claude_style_flags(request: TurnRequest) -> list[str]:
    """Session, model and effort flags as Claude Code takes them (and the fake harness, which copies it):
    ``--session-id`` creates the session on its first turn, ``--resume`` continues it; model and effort
    are passed on every turn because a resumed session does not keep them (effort on Claude Code's scale:
    ``minimal`` becomes ``low``)."""
    flags: list[str] = []
    if request.session_id:
        flags += ["--session-id" if request.new_session else "--resume", request.session_id]
    if request.model:
        flags += ["--model", request.model]
    if request.effort:
        flags += ["--effort", nearest_effort(request.effort, CLAUDE_EFFORTS)]
    return flags


def tail(text: str, limit: int = 400) -> str:
    text = text.strip()
    return text if len(text) <= limit else "…" + text[-limit:]


def get(name: str, state_dir: Path | None = None) -> Harness:
    """The adapter for a harness name; ``state_dir`` is the agent's state directory (pi keeps its files there)."""
    if name == "fake":
        from ameesh.harnesses.fake import FakeHarness

        return FakeHarness()
    if name == "claude":
        from ameesh.harnesses.claude import ClaudeHarness

        return ClaudeHarness()
    if name == "codex":
        from ameesh.harnesses.codex import CodexHarness

        return CodexHarness()
    if name == "pi":
        from ameesh.harnesses.pi import PiHarness

        return PiHarness(state_dir / "pi-sessions" if state_dir else None)
    if name == "anyy":
        from ameesh.harnesses.anyy import AnyyHarness

        return AnyyHarness()
    raise NotImplementedError(f"unknown harness {name!r} (available: fake, claude, codex, pi, anyy)")
