"""Codemode (SPEC M6): ``run_script``, one Python script that calls the session's tools.

The script runs in a child Python (:mod:`anyy.tools.codemode_bootstrap`) in its own process group, with a
wall-clock timeout and capped output like ``shell``. Each ``tools.NAME(...)`` call in the script travels as
a JSON line to this process, which runs it through ``ToolContext.call_tool`` -- the runtime's callback, so
every inner call is recorded as tool activity -- and sends the tool's text back.

A script runs like ``shell``: in the bubblewrap sandbox when the machine offers one (SPEC N3), else with
the Gateway's user rights. Its tool calls go through anyy (and their rules, such as the file tools'
working-directory confinement), so a sandboxed script still reaches what its tools may reach.

Approvals (N2, N7): Python starts programs in too many ways to gate each (``subprocess``, ``os.system``,
``os.exec*``, ``pty``, ``ctypes``, a file written then run), so the script as a whole is what is approved:
unless the shell rule allows everything, ``run_script`` asks, showing the script
(:func:`anyy.tools.approval_rules.decide`). Its ``tools.shell`` calls are decided by the parsed shell rules
like the model's own, and one that would ask fails at once: a script cannot wait.
"""

from __future__ import annotations

import asyncio
import io
import json
import os
import sys
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from anyy.domain.model_io import ToolSpec
from anyy.tools.base import Tool, ToolCallback, ToolContext, ToolOutcome
from anyy.tools.builtin import Arguments, BuiltinTool, object_schema
from anyy.tools.process import kill_process_group, run_in_process_group

BOOTSTRAP = Path(__file__).with_name("codemode_bootstrap.py")
RUN_SCRIPT = "run_script"
# Tools that cannot answer inside a script: asking the user suspends the whole execution for hours.
NOT_IN_SCRIPTS = frozenset({"ask_user", "delegate"})  # they suspend the execution
_MAX_REQUEST_BYTES = 64 * 1024 * 1024  # one call's arguments (write_file content) can be large


class RunScriptTool(BuiltinTool):
    """``run_script`` over ``inner``, the session's other enabled tools, by name."""

    def __init__(self, inner: Mapping[str, Tool]) -> None:
        self._inner = {name: tool for name, tool in inner.items() if name not in NOT_IN_SCRIPTS}
        self.spec = ToolSpec(
            name=RUN_SCRIPT,
            description=_describe(self._inner),
            parameters=object_schema(
                {
                    "script": {"type": "string", "description": "Python 3 source, run as a program."},
                    "timeout": {
                        "type": "number",
                        "description": "Seconds before the script is killed; at most the session's limit, "
                        "which is also the default.",
                    },
                },
                required=("script",),
            ),
        )

    async def execute(self, args: Arguments, context: ToolContext) -> ToolOutcome:
        script = args.string("script")
        timeout = min(args.optional_seconds("timeout", context.timeout), context.timeout)
        call_tool = context.call_tool or self._unrecorded(context)
        calls: list[tuple[str, bool]] = []  # (tool name, failed), in order
        request_read, request_write = os.pipe()
        request_file = os.fdopen(request_read, "rb", buffering=0)
        write_end_open = True
        try:

            async def serve(process: asyncio.subprocess.Process) -> None:
                nonlocal write_end_open
                os.close(request_write)  # the child has its copy: end of file comes when it exits
                write_end_open = False
                await self._serve(process, request_file, script, call_tool, calls)

            interpreter = [sys.executable, "-I", "-u", str(BOOTSTRAP), str(request_write)]
            with context.policy.sandbox.confine(interpreter, context.workdir) as confined:
                result = await run_in_process_group(
                    confined.argv,
                    cwd=context.workdir,
                    timeout=timeout,
                    output_cap=context.output_cap,
                    stdin=asyncio.subprocess.PIPE,
                    pass_fds=(request_write, *confined.pass_fds),
                    companion=serve,
                    env=context.env,
                    on_start=context.on_process,
                    on_output=context.on_output,
                )
        finally:
            request_file.close()
            if write_end_open:  # the child never started, or its server never ran
                os.close(request_write)
        text = result.output
        if text and not text.endswith("\n"):
            text += "\n"
        ending = _summary(calls) + result.ending("the script")
        return ToolOutcome(text=confined.annotate(text + ending), is_error=result.failed)

    def _unrecorded(self, context: ToolContext) -> ToolCallback:
        # Without a runtime (tests, tools used on their own) inner calls run directly.
        async def call(name: str, arguments: dict[str, Any]) -> ToolOutcome:
            return await self._inner[name].run(arguments, context)

        return call

    async def _serve(
        self,
        process: asyncio.subprocess.Process,
        request_file: io.FileIO,
        script: str,
        call_tool: ToolCallback,
        calls: list[tuple[str, bool]],
    ) -> None:
        """Hand the script to the child, then answer its tool calls until it closes the channel."""
        if process.stdin is None:  # cannot happen: started with stdin=PIPE
            raise RuntimeError("the script's process has no input pipe")
        loop = asyncio.get_running_loop()
        requests = asyncio.StreamReader(limit=_MAX_REQUEST_BYTES)
        transport, _ = await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(requests), request_file)
        try:
            await _send(process.stdin, {"script": script, "tools": sorted(self._inner)})
            while line := await requests.readline():
                call_id, outcome = await self._answer(line, call_tool, calls)
                await _send(process.stdin, {"id": call_id, "text": outcome.text, "is_error": outcome.is_error})
        except (BrokenPipeError, ConnectionResetError):
            pass  # the script ended (or was killed) without reading its answer
        except Exception:
            # The runtime could not run or record a call: end the script now rather than at its timeout.
            kill_process_group(process.pid)
            raise
        finally:
            transport.close()

    async def _answer(
        self, line: bytes, call_tool: ToolCallback, calls: list[tuple[str, bool]]
    ) -> tuple[int, ToolOutcome]:
        try:
            request = json.loads(line)
            call_id, name, arguments = int(request["id"]), str(request["name"]), request["arguments"]
        except (ValueError, KeyError, TypeError):
            # Only a script writing on the channel by hand gets here; its next call will fail too.
            return 0, ToolOutcome(text="malformed tool call on the Codemode channel", is_error=True)
        outcome = await self._call(name, arguments, call_tool)
        calls.append((name, outcome.is_error))
        return call_id, outcome

    async def _call(self, name: str, arguments: Any, call_tool: ToolCallback) -> ToolOutcome:
        if name in NOT_IN_SCRIPTS:
            return ToolOutcome(
                text=f"{name} cannot be called from a script: a script cannot wait for the user's answer. "
                f"End the script, then call the {name} tool directly.",
                is_error=True,
            )
        if name not in self._inner:
            known = ", ".join(sorted(self._inner)) or "none"
            return ToolOutcome(text=f"there is no tool {name!r} in scripts; available: {known}", is_error=True)
        if not isinstance(arguments, dict):
            return ToolOutcome(text=f"tools.{name} takes keyword arguments only", is_error=True)
        outcome = await call_tool(name, arguments)
        if outcome.suspend is not None:  # a tool outside NOT_IN_SCRIPTS that still wants an answer
            return ToolOutcome(text=f"{name} needs the user's answer, which a script cannot wait for", is_error=True)
        return outcome


async def _send(stream: asyncio.StreamWriter, message: dict[str, Any]) -> None:
    stream.write(json.dumps(message).encode() + b"\n")
    await stream.drain()


def _summary(calls: list[tuple[str, bool]]) -> str:
    if not calls:
        return "[no tool calls]\n"
    counts = Counter(name for name, _ in calls)
    failures = Counter(name for name, failed in calls if failed)
    parts = [
        f"{name} x{count}" + (f" ({failures[name]} failed)" if failures[name] else "") for name, count in counts.items()
    ]
    return f"[{len(calls)} tool call{'s' if len(calls) > 1 else ''}: {', '.join(parts)}]\n"


def _describe(inner: Mapping[str, Tool]) -> str:
    """The model's manual for run_script: the calling convention and every tool it can call."""
    lines = [
        "Run a Python 3 script that calls the session's tools, instead of calling them one at a time. Call a "
        "tool as tools.NAME(argument=value, ...): it returns the tool's text result, or raises ToolError "
        "(available without import) with the tool's error message. Use print() to report what you need to "
        "see: the printed output (stdout and stderr, capped like shell's) and a summary of the tool calls are "
        "this tool's result. The script runs in the working directory with a timeout; it cannot ask the "
        "user anything.",
        "",
        "Tools available in scripts:",
    ]
    for name, tool in sorted(inner.items()):
        parameters = tool.spec.parameters
        required = parameters.get("required", [])
        names = [*required, *(f"{p}=..." for p in parameters.get("properties", {}) if p not in required)]
        lines.append(f"- tools.{name}({', '.join(names)}): {tool.spec.description}")
    lines += ["", 'Example:\ntext = tools.read_file(path="README.md")\nprint(text.splitlines()[0])']
    return "\n".join(lines)
