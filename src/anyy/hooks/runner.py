"""One run of one hook (SPEC N6): the event as JSON on stdin, the answer on stdout or in the exit status.

The protocol, as docs/tools.md gives it to hook writers:

- **exit 0**: the answer is stdout. A JSON object ``{"decision": "allow"|"deny"|"ask", "reason": "...",
  "context": "..."}`` (every key optional); any other text is taken as ``context``; nothing means "no
  opinion".
- **exit 2**: deny; the reason is what the hook wrote on stderr.
- **any other status, a signal, unreadable JSON, or no end within the timeout**: the hook *failed*; what
  that means depends on the event (``anyy.runtime.user_hooks``: a ``pre_tool`` failure denies the call).

A hook runs in its own process group (a timeout or a stop kills the group: the programs it started go
too), with the session's working directory as its current directory, and is awaited as an asyncio
subprocess: the event loop goes on serving everything else meanwhile.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Literal

import msgspec

Decision = Literal["allow", "deny", "ask"]
OUTPUT_CAP = 64 * 1024  # bytes of stdout and of stderr kept; more is read and dropped
TEXT_CAP = 4000  # characters of a reason or a context handed on
DENY_STATUS = 2


class Answer(msgspec.Struct, kw_only=True, forbid_unknown_fields=False):
    decision: Decision | None = None
    reason: str = ""
    context: str = ""


class Ran(msgspec.Struct, kw_only=True):
    """What became of one run: ``ok`` with an answer, or ``failed`` with why (for people)."""

    ok: bool
    answer: Answer = msgspec.field(default_factory=Answer)
    problem: str = ""
    seconds: float = 0.0


def local_file_in(words: Sequence[str], cwd: Path) -> str | None:
    """A relative word of the command that names a file in the working directory: the agent can write
    there, so a hook reading it would run the agent's code, unhashed. ``None`` when there is none."""
    for word in words[1:]:
        if word and not word.startswith(("/", "-")) and (cwd / word).is_file():
            return word
    return None


async def run_hook(words: Sequence[str], payload: bytes, *, cwd: Path, timeout: float, env: Mapping[str, str]) -> Ran:
    """Run the hook once and read its answer; never raises for the hook's own faults."""
    loop = asyncio.get_running_loop()
    began = loop.time()
    try:
        process = await asyncio.create_subprocess_exec(
            *words,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            cwd=cwd if cwd.is_dir() else None,
            env=dict(env),
            start_new_session=True,  # its own process group, killed whole
        )
    except OSError as exc:
        return Ran(ok=False, problem=f"it could not be started: {exc.strerror or exc}")
    try:
        out, err, status = await asyncio.wait_for(_exchange(process, payload), timeout)
    except TimeoutError:
        return Ran(ok=False, problem=f"it did not answer within {timeout:g} s and was killed", seconds=timeout)
    finally:
        if process.returncode is None:  # timed out, or the caller was cancelled (a stop)
            _kill_group(process.pid)
            with contextlib.suppress(Exception):
                await asyncio.shield(process.wait())
    seconds = loop.time() - began
    return _read_answer(status, out, err, seconds)


async def _exchange(process: asyncio.subprocess.Process, payload: bytes) -> tuple[bytes, bytes, int]:
    stdin, stdout, stderr = process.stdin, process.stdout, process.stderr
    assert stdin is not None
    assert stdout is not None
    assert stderr is not None
    _, out, err = await asyncio.gather(_write(stdin, payload), _read(stdout), _read(stderr))
    return out, err, await process.wait()


async def _write(stream: asyncio.StreamWriter, payload: bytes) -> None:
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # a hook that reads nothing
        stream.write(payload)
        await stream.drain()
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
        stream.close()


async def _read(stream: asyncio.StreamReader) -> bytes:
    kept = bytearray()
    while chunk := await stream.read(1 << 16):
        if len(kept) < OUTPUT_CAP:
            kept += chunk[: OUTPUT_CAP - len(kept)]
    return bytes(kept)


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def _read_answer(status: int, out: bytes, err: bytes, seconds: float) -> Ran:
    text = out.decode("utf-8", "replace").strip()
    said = err.decode("utf-8", "replace").strip()
    if status == DENY_STATUS:
        reason = said or text or "no reason given"
        return Ran(ok=True, answer=Answer(decision="deny", reason=_cap(reason)), seconds=seconds)
    if status != 0:
        how = f"was ended by signal {-status}" if status < 0 else f"exited with status {status}"
        detail = f": {_cap(said, 300)}" if said else ""
        return Ran(ok=False, problem=f"it {how}{detail}", seconds=seconds)
    if not text:
        return Ran(ok=True, seconds=seconds)
    if not text.startswith("{"):
        return Ran(ok=True, answer=Answer(context=_cap(text)), seconds=seconds)
    try:
        answer = msgspec.json.decode(text, type=Answer)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        return Ran(ok=False, problem=f"its answer is not valid JSON for a hook ({exc})", seconds=seconds)
    return Ran(
        ok=True,
        answer=Answer(decision=answer.decision, reason=_cap(answer.reason), context=_cap(answer.context)),
        seconds=seconds,
    )


def _cap(text: str, limit: int = TEXT_CAP) -> str:
    return text if len(text) <= limit else text[:limit] + "…"
