"""``shell`` (M6): output and exit code, output cap, timeout and cancellation kill the whole process group."""

from __future__ import annotations

import asyncio
from pathlib import Path

import msgspec
import pytest

from anyy.tools.base import ToolContext, ToolOutcome
from anyy.tools.shell import ShellTool

from .support import make_fifo, process_ended, read_fifo

pytestmark = pytest.mark.anyio


async def test_m6_shell_runs_in_workdir_and_reports_the_exit_code(context: ToolContext, workdir: Path) -> None:
    outcome = await ShellTool().run({"command": "pwd; echo out; echo err >&2"}, context)
    assert outcome == ToolOutcome(text=f"{workdir}\nout\nerr\n[exit code 0]")
    failed = await ShellTool().run({"command": "echo partial; exit 3"}, context)
    assert failed == ToolOutcome(text="partial\n[exit code 3]", is_error=True)
    nothing = await ShellTool().run({"command": "true"}, context)
    assert nothing.text == "[exit code 0]"


async def test_m6_shell_reads_nothing_from_stdin(context: ToolContext) -> None:
    outcome = await ShellTool().run({"command": "cat; echo done"}, context)
    assert outcome.text == "done\n[exit code 0]"


async def test_m6_shell_output_is_capped_with_a_note_of_what_was_cut(context: ToolContext) -> None:
    small = msgspec.structs.replace(context, output_cap=100)
    outcome = await ShellTool().run({"command": "echo START; seq 1 100000; echo END"}, small)
    assert outcome.text.startswith("START\n")
    assert outcome.text.endswith("END\n[exit code 0]")
    assert "characters cut from the middle of the output" in outcome.text
    assert len(outcome.text) < 250
    total = len("START\n") + sum(len(f"{n}\n") for n in range(1, 100001)) + len("END\n")
    assert f"[... {total - 100} characters cut" in outcome.text


async def test_m6_shell_timeout_kills_process_group(context: ToolContext, workdir: Path) -> None:
    fifo = make_fifo(workdir / "ready")
    call = asyncio.create_task(
        ShellTool().run({"command": "echo begun; sleep 3600 & echo $$ $! > ready; wait", "timeout": 1}, context)
    )
    bash_pid, sleep_pid = map(int, (await read_fifo(fifo)).split())
    outcome = await asyncio.wait_for(call, 120)  # returns only because the 1 s limit killed it all
    assert outcome.is_error
    assert outcome.text == "begun\n[timed out after 1 s: the command and every process it started were killed]"
    assert process_ended(bash_pid)
    assert process_ended(sleep_pid)


async def test_m6_shell_timeout_is_at_most_the_contexts(context: ToolContext) -> None:
    short = msgspec.structs.replace(context, timeout=0.5)
    # A command that never ends by itself: the call returns only because the 0.5 s limit killed it
    # (the wait_for is a failure deadline, not a window).
    outcome = await asyncio.wait_for(ShellTool().run({"command": "sleep 3600", "timeout": 3600}, short), 120)
    assert "[timed out after 0.5 s" in outcome.text
    bad = await ShellTool().run({"command": "true", "timeout": 0}, context)
    assert bad.is_error
    assert "more than 0 seconds" in bad.text


async def test_m6_shell_cancellation_kills_process_group(context: ToolContext, workdir: Path) -> None:
    fifo = make_fifo(workdir / "ready")
    call = asyncio.create_task(ShellTool().run({"command": "sleep 30 & echo $$ $! > ready; wait"}, context))
    bash_pid, sleep_pid = map(int, (await read_fifo(fifo)).split())
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call
    assert process_ended(bash_pid)
    assert process_ended(sleep_pid)


async def test_m6_shell_cancellation_kills_a_session_the_command_started(context: ToolContext, workdir: Path) -> None:
    # What the sandbox's own init is to the group's leader (bubblewrap's --new-session): a child in a session
    # of its own, which a kill of the leader's group alone leaves running once the leader is gone.
    fifo = make_fifo(workdir / "ready")
    command = "setsid sleep 600 & echo $! > ready; wait"
    call = asyncio.create_task(ShellTool().run({"command": command}, context))
    (session_leader,) = map(int, (await read_fifo(fifo)).split())
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call
    assert process_ended(session_leader)


async def test_m6_shell_stops_background_processes_when_the_command_ends(context: ToolContext) -> None:
    # The background sleep holds the output pipe and never ends by itself: the call returns only because
    # the tool does not wait for it (the wait_for is a failure deadline, not a window).
    outcome = await asyncio.wait_for(ShellTool().run({"command": "sleep 3600 & echo $!"}, context), 120)
    assert outcome.text.endswith("[exit code 0]")
    assert process_ended(int(outcome.text.split()[0]))


async def test_m6_shell_without_a_working_directory_says_so(context: ToolContext, tmp_path: Path) -> None:
    gone = msgspec.structs.replace(context, workdir=tmp_path / "missing")
    outcome = await ShellTool().run({"command": "true"}, gone)
    assert outcome.is_error
    assert "cannot start bash" in outcome.text
    empty = await ShellTool().run({"command": ""}, context)
    assert empty.is_error
    assert "'command' must not be empty" in empty.text
