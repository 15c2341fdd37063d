"""What a tool is to the runtime: a spec for the model and an async ``run``.

A tool never raises for a failure the model should see (a missing file, a command that failed): it
returns an outcome with ``is_error``. ``suspend`` is how ``ask_user`` asks a clarifying question: the
runtime records the question, suspends the execution, and the answer becomes the tool's result.

``ToolContext.call_tool`` is how Codemode's ``run_script`` reaches the other tools: the runtime passes a
callback that records each inner call as tool activity (M6) and runs it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any, Protocol

import msgspec

from anyy.domain.delegation import TaskRequest
from anyy.domain.model_io import ToolSpec
from anyy.tools.policy import ToolPolicy


class ToolContext(msgspec.Struct, kw_only=True):
    workdir: Path  # file tools stay under it
    memory_dir: Path  # the profile's memory/ (USER.md, MEMORY.md)
    session_id: str
    timeout: float = 120.0  # seconds, for tools that run programs
    output_cap: int = 32_000  # characters of output kept; the rest is cut with a note
    # The environment programs run with (shell, Codemode); None: the Gateway's own. The runtime passes one
    # without the providers' API keys, so that a command the model writes cannot read them.
    env: dict[str, str] | None = None
    # Runs one tool by name for a Codemode script and records it; None runs it unrecorded (tests).
    call_tool: ToolCallback | None = None
    # What the profile allows beyond the enabled tools: private addresses, the sandbox (SPEC N3).
    policy: ToolPolicy = msgspec.field(default_factory=ToolPolicy)
    # The call being run and its execution (the delegate tool links its children to them).
    call_id: str = ""
    execution_id: str = ""
    # What the approval gate decided this call on (N2): for the file tools the canonical path, which they
    # check again at write time; None when no gate ran (a tool used on its own).
    approved: str | None = None
    # Starts a delegate call's child sessions (K2); None where delegation is not offered.
    delegate: Delegator | None = None
    # Hear of a program a tool runs (its process group's pid) and of its output, so that a crash can end
    # it and keep what it printed (D3); None: nobody listens.
    on_process: Callable[[int], None] | None = None
    on_output: Callable[[bytes], None] | None = None


class ToolOutcome(msgspec.Struct, kw_only=True):
    text: str
    is_error: bool = False
    suspend: str | None = None  # a question for the user (ask_user): the execution waits for an answer
    waits: bool = False  # the result comes later (delegate): the execution is suspended until it does


class Tool(Protocol):
    @property
    def spec(self) -> ToolSpec: ...

    async def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolOutcome: ...


# ``async (name, arguments) -> ToolOutcome``: the runtime's way of running (and recording) one tool call.
ToolCallback = Callable[[str, dict[str, Any]], Awaitable[ToolOutcome]]
# ``async (tasks) -> note``: records a delegate call's tasks and starts their children (K2); raises
# :class:`anyy.domain.errors.AnyyError` for what the model should correct (depth, unknown role...).
Delegator = Callable[[Sequence[TaskRequest]], Awaitable[str]]
