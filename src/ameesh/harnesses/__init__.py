"""Harness adapters: one interface over Claude Code, Codex CLI, pi, anyy and our scripted fake.

``NAMES`` (:mod:`ameesh.names`) is the one table of harness names: ``ameesh add --harness``, ``ameesh --help``, the
registry's check and :func:`get` all read it. **Adding an adapter is one line there**
(``"name": "module:Class"``); the class implements :class:`Harness` and is built as ``Class(state_dir=…)``
(the agent's state directory, where an adapter may keep files; accept and ignore it if not needed).

A turn is one run of the harness's command line under a timeout counted from the moment its process
starts, in its own process group (killed whole on timeout), judged by what it printed — not only by its
exit code. Its output is read as it comes: a session id the harness announces (Codex's ``thread.started``)
is handed to the caller at once, so it is on record before the turn ends, even if the runner dies then.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

if TYPE_CHECKING:
    import asyncio

from ameesh.names import NAMES as NAMES  # the one table of harnesses (light: read by ameesh --help)

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
    rewind_to: str | None = None  # resume the session as it was at this point of its history (a Retry's)
    env: dict[str, str] = field(default_factory=dict)  # added to the harness's environment (H16: the turn's key)


@dataclass(frozen=True)
class Retry:
    """How to play a message again after an attempt that may have left its prompt in the harness's session
    (a failed turn, or a runner that died during one): never the same prompt twice in one session.

    resend    the prompt is not in the session: send it as it is
    rewind    resume the session at ``point`` (before the prompt) and send the prompt again
    fresh     the prompt opened the session and nothing good came after: a new session, the prompt again
    continue  the session keeps the prompt and the harness cannot rewind: send ``prompt`` (a cue to answer it)
    """

    kind: Literal["resend", "rewind", "fresh", "continue"]
    point: str | None = None
    prompt: str | None = None
    note: str = ""


CONTINUE_CUE = (
    "(Your previous turn on my last message was cut off before you answered: the message is above, answer it now.)"
)


def earlier_cue(prompt: str) -> str:
    """The cue for a prompt a session kept without an answer *before* other messages that were answered
    since (a message retried by ``ameesh retry`` after failing for good, in a harness that cannot drop
    the failed attempt): it names the message rather than sending it a second time."""
    head = " ".join(prompt.split())
    head = head if len(head) <= 80 else head[:79] + "…"
    return (
        f"(Your turn on an earlier message of mine, «{head}», was cut off before you answered: the message"
        " is above in this conversation, answer it now.)"
    )


def kept_unanswered(turns: list[tuple[str, str]], prompt: str) -> str | None:
    """How a harness's history keeps ``prompt`` (``turns``: ``(role, text)`` with role ``user`` or
    ``agent``, oldest first): ``"last"`` when nothing but cues came after it and no answer, ``"earlier"``
    when other messages came after it before any answer (it failed, then others were played), else None
    (answered, or not there). A cue is not a prompt: an answer to a cue answers the prompt it stands for."""
    wanted = prompt.strip()
    cues = {CONTINUE_CUE, earlier_cue(prompt)}
    for index in range(len(turns) - 1, -1, -1):
        role, text = turns[index]
        if role != "user" or text.strip() != wanted:
            continue
        after = turns[index + 1 :]
        roles = [r for r, _ in after]
        if any(r == "user" and t.strip() in cues and roles[i + 1 : i + 2] == ["agent"]
               for i, (r, t) in enumerate(after)):  # fmt: skip
            return None  # a cue for it was answered
        rest = [(r, t) for r, t in after if not (r == "user" and t.strip() in cues)]
        if not rest:
            return "last"
        return "earlier" if rest[0][0] == "user" else None
    return None


def cue_for(kept: str | None, prompt: str) -> Retry:
    """The retry of a prompt a harness kept and cannot drop: a cue to answer it (``kept_unanswered``)."""
    if kept == "last":
        return Retry("continue", prompt=CONTINUE_CUE, note="the session keeps the prompt: a cue to answer it")
    if kept == "earlier":
        note = "the session keeps the prompt, unanswered, before later messages: a cue that names it"
        return Retry("continue", prompt=earlier_cue(prompt), note=note)
    return Retry("resend")


@dataclass
class TurnResult:
    outcome: str  # ok | failed | timeout
    session_id: str | None = None
    text: str = ""
    usage: dict[str, Any] = field(default_factory=dict)
    context_tokens: int | None = None  # the context the harness re-read on its last model call
    error: str | None = None
    duration: float = 0.0
    notes: list[str] = field(default_factory=list)  # what the harness could not apply (an effort it lacks…)
    # The turn could not start for a cause in the set-up (no binary, anyy with no Gateway): retrying will
    # not help until a person fixes it, so it is no outage — no backoff, no attempt counted (H13).
    deterministic: bool = False

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

    def fatal_in(self, line: str) -> str | None:
        """The error an output line reports if it means the turn cannot succeed (the harness's own fatal
        error events: the turn is ended at once instead of waiting for its timeout), else None."""

    def prepare_retry(self, session_id: str, cwd: Path, prompt: str) -> Retry:
        """Before playing ``prompt`` again in ``session_id``: what the session recorded of the earlier
        attempt decides how (see :class:`Retry`); a harness may rewind files it owns here."""


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
    proc = await _start(harness, request, on_start)
    if isinstance(proc, str):
        return TurnResult("failed", error=proc, duration=time.monotonic() - started, deterministic=True)
    assert proc.stdout is not None
    assert proc.stderr is not None
    fatal: list[str] = []
    reading = asyncio.gather(_read_stdout(harness, request, proc, on_session, fatal), proc.stderr.read(), proc.wait())
    try:
        out, err, _ = await asyncio.wait_for(reading, max(0.0, request.timeout - (time.monotonic() - started)))
    except (TimeoutError, asyncio.CancelledError) as exc:
        kill_group(proc.pid)
        await proc.wait()
        if isinstance(exc, asyncio.CancelledError):
            raise
        why = f"{harness.name} gave no answer within {request.timeout:g} s (killed)"
        return TurnResult("timeout", session_id=request.session_id, error=why, duration=time.monotonic() - started)
    if fatal:
        why = f"{harness.name}: {fatal[0]} (ended at once)"
        return TurnResult("failed", session_id=request.session_id, error=why, duration=time.monotonic() - started)
    result = harness.parse(
        request, proc.returncode or 0, out.decode("utf-8", "replace"), err.decode("utf-8", "replace")
    )
    result.duration = time.monotonic() - started
    return result


async def _start(
    harness: Harness, request: TurnRequest, on_start: Callable[[int], None] | None
) -> asyncio.subprocess.Process | str:
    """The harness's process in a group of its own, told to ``on_start``; why it could not start."""
    from commons.processes import spawn_group

    env = {**os.environ, **harness.environment(), **request.env}
    try:
        proc = await spawn_group(harness.command(request), cwd=request.cwd, env=env)
    except OSError as exc:
        return f"cannot start {harness.name}: {exc} (check the harness's binary: AMEESH_*_BIN or PATH)"
    if on_start is not None:
        try:
            on_start(proc.pid)
        except BaseException:  # nothing may run that the caller does not know of
            kill_group(proc.pid)
            await proc.wait()
            raise
    return proc


async def _read_stdout(
    harness: Harness,
    request: TurnRequest,
    proc: asyncio.subprocess.Process,
    on_session: Callable[[str], None] | None,
    fatal: list[str],
) -> bytes:
    """The whole output, watched line by line: a new session id is told to ``on_session``; a line that
    says the turn cannot succeed ends it at once (the group is killed, its error put in ``fatal``)."""
    assert proc.stdout is not None
    chunks: list[bytes] = []
    pending = b""  # the start of a line not yet complete
    announced = on_session is None
    while chunk := await proc.stdout.read(65536):
        chunks.append(chunk)
        *lines, pending = (pending + chunk).split(b"\n")
        for raw in lines:
            line = raw.decode("utf-8", "replace")
            if not announced and on_session is not None:
                sid = harness.session_in(line)
                if sid and sid != request.session_id:
                    on_session(sid)
                    announced = True
            why = harness.fatal_in(line)
            if why is not None:  # fail fast: the harness said the turn cannot succeed
                fatal.append(why)
                kill_group(proc.pid)
                break
        if fatal:
            break
    return b"".join(chunks)


def claude_style_flags(request: TurnRequest) -> list[str]:
    """Session, model and effort flags as Claude Code takes them (and the fake harness, which copies it):
    ``--session-id`` creates the session on its first turn, ``--resume`` continues it; model and effort
    are passed on every turn because a resumed session does not keep them (effort on Claude Code's scale:
    ``minimal`` becomes ``low``)."""
    flags: list[str] = []
    if request.session_id:
        flags += ["--session-id" if request.new_session else "--resume", request.session_id]
        if request.rewind_to and not request.new_session:
            flags += ["--resume-session-at", request.rewind_to]
    if request.model:
        flags += ["--model", request.model]
    if request.effort:
        flags += ["--effort", nearest_effort(request.effort, CLAUDE_EFFORTS)]
    return flags


def json_objects(text: str) -> list[dict[str, Any]]:
    """The JSON objects of a JSON-lines text (an event stream, a transcript); other lines are skipped."""
    found = []
    for line in text.splitlines():
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict):
            found.append(value)
    return found


def tail(text: str, limit: int = 400) -> str:
    text = text.strip()
    return text if len(text) <= limit else "…" + text[-limit:]


def kill_group(pgid: int) -> None:
    from commons.processes import kill_group as kill

    with contextlib.suppress(ProcessLookupError):
        kill(pgid)


def get(name: str, state_dir: Path | None = None) -> Harness:
    """The adapter for a harness name (``NAMES``); ``state_dir`` is the agent's state directory."""
    target = NAMES.get(name)
    if target is None:
        raise NotImplementedError(f"unknown harness {name!r} (available: {', '.join(NAMES)})")
    module_name, _, class_name = target.partition(":")
    factory = getattr(importlib.import_module(module_name), class_name)
    harness: Harness = factory(state_dir=state_dir)
    return harness
