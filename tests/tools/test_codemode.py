"""Codemode (M6): one script calls the tools through the runtime's callback; timeouts and stops kill it."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import msgspec
import pytest

from anyy.tools.base import ToolContext, ToolOutcome
from anyy.tools.toolset import ToolSet, build_tools

from .support import make_fifo, process_ended, read_fifo

pytestmark = pytest.mark.anyio

DEFAULT_TOOLS = ["read_file", "write_file", "shell", "ask_user", "memory"]


class Recorder:
    """Stands in for the runtime: records each inner call, then runs it through the tool set."""

    def __init__(self, tools: ToolSet, context: ToolContext) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.outcomes: list[ToolOutcome] = []
        self._tools = tools
        self._context = context

    async def __call__(self, name: str, arguments: dict[str, Any]) -> ToolOutcome:
        self.calls.append((name, arguments))
        outcome = await self._tools.run(name, arguments, self._context)
        self.outcomes.append(outcome)
        return outcome


@pytest.fixture
def tools() -> ToolSet:
    return build_tools(DEFAULT_TOOLS, codemode=True)


@pytest.fixture
def recorder(tools: ToolSet, context: ToolContext) -> Recorder:
    return Recorder(tools, context)


@pytest.fixture
def script_context(context: ToolContext, recorder: Recorder) -> ToolContext:
    return msgspec.structs.replace(context, call_tool=recorder)


async def run_script(tools: ToolSet, context: ToolContext, script: str, **extra: Any) -> ToolOutcome:
    return await tools.run("run_script", {"script": script, **extra}, context)


async def test_m6_codemode_script_calls_tools_through_the_runtime_callback(
    tools: ToolSet, context: ToolContext, recorder: Recorder, workdir: Path
) -> None:
    script = (
        'tools.write_file(path="notes/todo.txt", content="buy milk\\n")\n'
        'text = tools.read_file(path="notes/todo.txt")\n'
        'print("read back:", text.strip())\n'
    )
    # As the runtime calls it: the callback beside the context.
    outcome = await tools.run("run_script", {"script": script}, context, recorder)
    assert outcome == ToolOutcome(
        text="read back: buy milk\n[2 tool calls: write_file x1, read_file x1]\n[exit code 0]"
    )
    assert recorder.calls == [
        ("write_file", {"path": "notes/todo.txt", "content": "buy milk\n"}),
        ("read_file", {"path": "notes/todo.txt"}),
    ]
    assert (workdir / "notes" / "todo.txt").read_text() == "buy milk\n"


async def test_m6_codemode_tool_errors_raise_in_the_script(
    tools: ToolSet, script_context: ToolContext, recorder: Recorder
) -> None:
    script = (
        "try:\n"
        '    tools.read_file(path="../etc/passwd")\n'
        "except ToolError as error:\n"
        '    print("refused:", error)\n'
        'tools.read_file(path="missing.txt")\n'
    )
    outcome = await run_script(tools, script_context, script)
    assert outcome.is_error
    assert "refused: '../etc/passwd' is outside the working directory" in outcome.text
    assert 'File "<script>", line 5, in <module>' in outcome.text  # the traceback shows the script's lines
    assert "ToolError: there is no file 'missing.txt'" in outcome.text
    assert "codemode_bootstrap" not in outcome.text
    assert "[2 tool calls: read_file x2 (2 failed)]\n[exit code 1]" in outcome.text
    assert [name for name, _ in recorder.calls] == ["read_file", "read_file"]


async def test_m6_codemode_refuses_ask_user_in_a_script(
    tools: ToolSet, script_context: ToolContext, recorder: Recorder
) -> None:
    script = 'try:\n    tools.ask_user(question="Which one?")\nexcept ToolError as error:\n    print(error)\n'
    outcome = await run_script(tools, script_context, script)
    assert outcome.text.startswith(
        "ask_user cannot be called from a script: a script cannot wait for the user's answer. "
        "End the script, then call the ask_user tool directly."
    )
    assert recorder.calls == []  # never reached the runtime: nothing was suspended
    unknown = await run_script(tools, script_context, 'tools.web_fetch(url="http://127.0.0.1/")')
    assert "there is no tool 'web_fetch' in scripts; available: memory, read_file, shell, write_file" in unknown.text
    assert recorder.calls == []


async def test_m6_codemode_offers_run_script_and_ask_user_only(tools: ToolSet) -> None:
    assert [spec.name for spec in tools.specs()] == ["run_script", "ask_user"]
    description = tools.specs()[0].description
    for line in ("tools.read_file(path, offset=..., limit=...)", "tools.shell(command, timeout=...)"):
        assert line in description
    assert "tools.ask_user" not in description
    assert [spec.name for spec in build_tools(["shell"], codemode=True).specs()] == ["run_script"]


async def test_m6_codemode_script_timeout_kills_it(tools: ToolSet, script_context: ToolContext, workdir: Path) -> None:
    fifo = make_fifo(workdir / "ready")
    script = (
        "import os, subprocess, time\n"
        'child = subprocess.Popen(["sleep", "3600"])\n'
        'with open("ready", "w") as ready:\n'
        '    ready.write(f"{os.getpid()} {child.pid}")\n'
        'print("started", flush=True)\n'
        "time.sleep(3600)\n"
    )
    call = asyncio.create_task(run_script(tools, script_context, script, timeout=1))
    script_pid, child_pid = map(int, (await read_fifo(fifo)).split())
    outcome = await asyncio.wait_for(call, 120)  # returns only because the 1 s limit killed it all
    assert outcome.is_error
    assert outcome.text == (
        "started\n[no tool calls]\n[timed out after 1 s: the script and every process it started were killed]"
    )
    assert process_ended(script_pid)
    assert process_ended(child_pid)


async def test_m6_codemode_cancellation_kills_the_script_and_its_tool_call(
    tools: ToolSet, script_context: ToolContext, workdir: Path
) -> None:
    fifo = make_fifo(workdir / "ready")
    script = 'import os\ntools.shell(command=f"sleep 30 & echo {os.getpid()} $! > ready; wait")\n'
    call = asyncio.create_task(run_script(tools, script_context, script))
    script_pid, sleep_pid = map(int, (await read_fifo(fifo)).split())
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call
    assert process_ended(script_pid)
    assert process_ended(sleep_pid)  # the inner shell call, run by the parent, was cancelled too


async def test_m6_codemode_output_is_capped_and_large_arguments_travel(
    tools: ToolSet, script_context: ToolContext, workdir: Path
) -> None:
    small = msgspec.structs.replace(script_context, output_cap=200)
    script = 'big = "x" * 3_000_000\ntools.write_file(path="big.txt", content=big)\nprint("y" * 100_000)\n'
    outcome = await run_script(tools, small, script)
    assert not outcome.is_error
    assert "characters cut from the middle of the output" in outcome.text
    assert outcome.text.endswith("[1 tool call: write_file x1]\n[exit code 0]")
    assert (workdir / "big.txt").stat().st_size == 3_000_000


async def test_m6_codemode_reports_syntax_errors_and_runs_without_a_callback(
    tools: ToolSet, context: ToolContext, workdir: Path
) -> None:
    broken = await run_script(tools, context, "print('unclosed'\n")
    assert broken.is_error
    assert "SyntaxError" in broken.text
    (workdir / "a.txt").write_text("direct\n")
    direct = await run_script(tools, context, 'print(tools.read_file(path="a.txt"), end="")\nimport sys\nsys.exit(0)')
    assert direct.text == "direct\n[1 tool call: read_file x1]\n[exit code 0]"
    stdin = await run_script(tools, context, "import sys\nprint(repr(sys.stdin.read()))")
    assert stdin.text.startswith("''\n")  # the reply channel is not the script's stdin


async def test_m6_codemode_a_failing_runtime_callback_ends_the_script(tools: ToolSet, context: ToolContext) -> None:
    async def broken(name: str, arguments: dict[str, Any]) -> ToolOutcome:
        raise RuntimeError("the store is gone")

    failing = msgspec.structs.replace(context, call_tool=broken)
    script = 'tools.shell(command="true")\nimport time\ntime.sleep(3600)'
    outcome = await asyncio.wait_for(run_script(tools, failing, script), 120)  # ended by the failure, not the sleep
    assert outcome == ToolOutcome(text="run_script failed unexpectedly: RuntimeError: the store is gone", is_error=True)
