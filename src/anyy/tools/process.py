"""Running a program in its own process group, with a deadline and capped output.

The program is started as a session leader (``start_new_session``), so it and everything it starts share a
process group that can be killed in one call. The group is killed on every way out: normal exit (so that
nothing left running in the background outlives the call), timeout, and cancellation of the awaiting task
(a Gateway stopping a session).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import Callable, Coroutine, Sequence
from pathlib import Path
from typing import Any

import msgspec

from anyy.tools.builtin import ToolFailure
from anyy.tools.output import CappedOutput

# After the group is killed, output still buffered in the pipe is read until end of file. Only a process
# that left the group (setsid, a daemon) and kept the pipe open can hold it longer: it is not waited for.
_DRAIN_SECONDS = 2.0

Companion = Callable[[asyncio.subprocess.Process], Coroutine[Any, Any, None]]


class ProcessResult(msgspec.Struct, kw_only=True, frozen=True):
    output: str  # stdout and stderr interleaved, capped
    returncode: int | None
    timed_out: bool
    timeout: float

    @property
    def failed(self) -> bool:
        return self.timed_out or self.returncode != 0

    def ending(self, what: str = "the command") -> str:
        """A line saying how the program ended, to follow its output."""
        if self.timed_out:
            return f"[timed out after {self.timeout:g} s: {what} and every process it started were killed]"
        if self.returncode is not None and self.returncode < 0:
            return f"[killed by signal {-self.returncode}]"
        return f"[exit code {self.returncode}]"


def process_start_ticks(pid: int) -> int | None:
    """When process ``pid`` started, in clock ticks after boot (``/proc/PID/stat``, field 22); None when
    no such process runs (none, or a zombie). With the pid, it names one process even once the pid is
    reused."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2 :].split()  # from field 3, the state, on
    return None if fields[0] in ("Z", "X") else int(fields[19])


def end_leftover(pid: int, started: int | None) -> bool:
    """Kill the process group a tool started, if its leader is still the process that was recorded (D3)."""
    if started is None or process_start_ticks(pid) != started:
        return False  # gone, or the pid now names another process
    kill_process_group(pid)
    return True


def kill_process_group(pgid: int) -> None:
    """Kill the group led by ``pgid``, and the sessions its leader started beneath it.

    The sandbox's own init (bubblewrap's ``--new-session``) runs in a session of its own, a child of the
    group's leader. It is meant to die with the leader (``--die-with-parent``), but a leader killed before
    that holds leaves it running, orphaned: with the tool inside, or waiting forever for a set-up step the
    leader never did. So while the leader still runs, the group is stopped first (a stopped leader starts
    nothing more), its children and the groups they lead are killed (the sandbox's init takes its whole pid
    namespace with it), then the group.
    """
    # The group may already be gone (everything exited); that is the outcome we wanted anyway.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        if process_start_ticks(pgid) is not None:  # the leader runs: it may have children of its own
            os.killpg(pgid, signal.SIGSTOP)
            for child, leads_group in _children(pgid):
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(child, signal.SIGKILL)
                    if leads_group:
                        os.killpg(child, signal.SIGKILL)
        os.killpg(pgid, signal.SIGKILL)


def _children(parent: int) -> list[tuple[int, bool]]:
    """The children of ``parent``, each with whether it leads a process group of its own."""
    found: list[tuple[int, bool]] = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            stat = Path(entry.path, "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()  # from field 3, the state, on
        pid = int(entry.name)
        if int(fields[1]) == parent:  # the parent's pid; field 5 is the process group
            found.append((pid, int(fields[2]) == pid))
    return found


async def run_in_process_group(
    argv: Sequence[str],
    *,
    cwd: Path,
    timeout: float,
    output_cap: int,
    stdin: int = asyncio.subprocess.DEVNULL,
    pass_fds: Sequence[int] = (),
    companion: Companion | None = None,
    env: dict[str, str] | None = None,
    on_start: Callable[[int], None] | None = None,
    on_output: Callable[[bytes], None] | None = None,
) -> ProcessResult:
    """Run ``argv`` to its end or its deadline; ``companion(process)`` runs beside it (Codemode's server).

    Cancelling the caller kills the process group before the cancellation propagates. A program that
    cannot be started (a missing working directory) is a :class:`ToolFailure`. ``on_start(pid)`` hears of
    the process (its group) as soon as it runs, ``on_output`` of its output as it comes (D3).
    """
    transport, protocol = await _started(argv, cwd=cwd, stdin=stdin, pass_fds=pass_fds, env=env)
    loop = asyncio.get_running_loop()
    process = asyncio.subprocess.Process(transport, protocol, loop)
    if on_start is not None:
        on_start(process.pid)
    output = CappedOutput(output_cap)
    if process.stdout is None:  # cannot happen: asked for with PIPE just above
        raise RuntimeError("the process has no output pipe")
    reader = asyncio.create_task(_pump(process.stdout, output, on_output))
    helper = asyncio.create_task(companion(process)) if companion is not None else None
    try:
        try:
            timed_out = await _to_the_end(process, protocol, reader, helper, output, timeout=timeout)
        except BaseException:
            kill_process_group(process.pid)
            reader.cancel()
            if helper is not None:
                helper.cancel()
            # Killed, it exits at once; seeing it exit keeps asyncio from reporting a child closed running.
            with contextlib.suppress(asyncio.CancelledError, TimeoutError):
                await asyncio.wait_for(asyncio.shield(protocol.exited), _DRAIN_SECONDS)
            raise
    finally:
        transport.close()
    return ProcessResult(
        output=output.text(), returncode=transport.get_returncode(), timed_out=timed_out, timeout=timeout
    )


async def _started(
    argv: Sequence[str], *, cwd: Path, stdin: int, pass_fds: Sequence[int], env: dict[str, str] | None
) -> tuple[asyncio.SubprocessTransport, _ExitAwareProtocol]:
    """The program, started. A cancellation while it starts waits for the start to finish, then kills the
    group as every other way out does (asyncio's own clean-up would kill the leader alone)."""
    spawning = asyncio.ensure_future(_spawn(argv, cwd=cwd, stdin=stdin, pass_fds=pass_fds, env=env))
    try:
        return await asyncio.shield(spawning)
    except asyncio.CancelledError:
        with contextlib.suppress(Exception):
            transport, protocol = await spawning
            kill_process_group(transport.get_pid())
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(protocol.exited), _DRAIN_SECONDS)
            transport.close()
        raise


async def _spawn(
    argv: Sequence[str], *, cwd: Path, stdin: int, pass_fds: Sequence[int], env: dict[str, str] | None
) -> tuple[asyncio.SubprocessTransport, _ExitAwareProtocol]:
    loop = asyncio.get_running_loop()
    try:
        return await loop.subprocess_exec(
            lambda: _ExitAwareProtocol(loop),
            *argv,
            cwd=cwd,
            stdin=stdin,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            start_new_session=True,
            pass_fds=tuple(pass_fds),
            env=env,
        )
    except OSError as error:
        raise ToolFailure(f"cannot start {argv[0]} in {cwd}: {error.strerror or error}") from None


async def _to_the_end(
    process: asyncio.subprocess.Process,
    protocol: _ExitAwareProtocol,
    reader: asyncio.Task[None],
    helper: asyncio.Task[None] | None,
    output: CappedOutput,
    *,
    timeout: float,
) -> bool:
    """Wait for the exit or the deadline, kill the group, settle the companion, drain the output;
    whether the deadline passed."""
    timed_out = False
    try:
        async with asyncio.timeout(timeout):
            await asyncio.shield(protocol.exited)
    except TimeoutError:
        timed_out = True
    kill_process_group(process.pid)
    if helper is not None:
        helper.cancel()
        await asyncio.wait([helper])  # unlike awaiting it, never mistakes our own cancellation for its
        failure = None if helper.cancelled() else helper.exception()
        if failure is not None:
            raise failure
    await asyncio.shield(protocol.exited)
    try:
        await asyncio.wait_for(reader, _DRAIN_SECONDS)
    except TimeoutError:
        output.feed(b"\n[output of a process that left the process group was not read to its end]\n")
    return timed_out


class _ExitAwareProtocol(asyncio.subprocess.SubprocessStreamProtocol):
    """The protocol ``create_subprocess_exec`` uses, plus a future set as soon as the process exits.

    ``Process.wait()`` also waits for the output pipe to close (Python 3.11), which a background process
    that inherited it can hold open long after the command itself ended.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(limit=2**16, loop=loop)
        self.exited: asyncio.Future[None] = loop.create_future()

    def process_exited(self) -> None:
        super().process_exited()
        if not self.exited.done():
            self.exited.set_result(None)


async def _pump(stream: asyncio.StreamReader, output: CappedOutput, on_output: Callable[[bytes], None] | None) -> None:
    while chunk := await stream.read(65536):
        output.feed(chunk)
        if on_output is not None:
            on_output(chunk)
