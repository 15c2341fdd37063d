"""The tools of a session: built from the names the profile or ``session.tools.configure`` enables (M3, M4).

With Codemode on, the model sees ``run_script`` (plus ``ask_user`` when enabled, since a script cannot
wait for the user's answer) and the other enabled tools are reachable only from scripts; the runtime still
runs those inner calls through :meth:`ToolSet.run`, which knows every enabled tool.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import msgspec

from anyy.domain.errors import InvalidInput
from anyy.domain.model_io import ToolSpec
from anyy.tools.ask_user import AskUserTool
from anyy.tools.base import Tool, ToolCallback, ToolContext, ToolOutcome
from anyy.tools.codemode import NOT_IN_SCRIPTS, RUN_SCRIPT, RunScriptTool
from anyy.tools.files import EditFileTool, ListDirTool, ReadFileTool, WriteFileTool
from anyy.tools.memory import MemoryTool
from anyy.tools.shell import ShellTool
from anyy.tools.web_fetch import WebFetchTool

# Every built-in tool by name, in the order the model is shown them.
BUILTIN_TOOLS: dict[str, Callable[[], Tool]] = {
    "read_file": ReadFileTool,
    "write_file": WriteFileTool,
    "edit_file": EditFileTool,
    "list_dir": ListDirTool,
    "shell": ShellTool,
    "web_fetch": WebFetchTool,
    "memory": MemoryTool,
    "ask_user": AskUserTool,
}
KNOWN_TOOL_NAMES: tuple[str, ...] = tuple(BUILTIN_TOOLS)


class ToolSet:
    """The enabled tools of one session; what the model is offered and what the runtime can run."""

    def __init__(self, tools: Sequence[Tool], *, codemode: bool) -> None:
        self.codemode = codemode
        self._enabled: dict[str, Tool] = {tool.spec.name: tool for tool in tools}
        self._offered: dict[str, Tool]
        if codemode:
            self._offered = {RUN_SCRIPT: RunScriptTool(self._enabled)}
            self._offered.update({name: tool for name, tool in self._enabled.items() if name in NOT_IN_SCRIPTS})
        else:
            self._offered = dict(self._enabled)

    def names(self) -> tuple[str, ...]:
        """The tools the model may call: ``run_script`` (and ask_user) in Codemode, else every enabled one."""
        return tuple(self._offered)

    @property
    def enabled_names(self) -> tuple[str, ...]:
        """Every enabled tool (in Codemode, those scripts can call, and ask_user), in stable order."""
        return tuple(self._enabled)

    def specs(self) -> tuple[ToolSpec, ...]:
        """The tools for the model request, in stable order."""
        return tuple(tool.spec for tool in self._offered.values())

    def get(self, name: str) -> Tool | None:
        return self._offered.get(name) or self._enabled.get(name)

    async def run(
        self, name: str, arguments: dict[str, Any], context: ToolContext, call_tool: ToolCallback | None = None
    ) -> ToolOutcome:
        """Run one call: an offered tool (the model's call) or, in Codemode, an enabled one (a script's call).

        ``call_tool`` (else ``context.call_tool``) is how a Codemode script's inner calls reach the runtime.

        A name that is neither (a model inventing a tool) is an ``is_error`` outcome listing the right ones.
        An unexpected exception in a tool becomes an ``is_error`` outcome too, so that one broken call
        cannot end the execution; cancellation still propagates.
        """
        tool = self.get(name)
        if tool is None:
            offered = ", ".join(self._offered) or "none"
            return ToolOutcome(text=f"there is no tool {name!r}; the tools you can call are: {offered}", is_error=True)
        if call_tool is not None:
            context = msgspec.structs.replace(context, call_tool=call_tool)
        try:
            return await tool.run(arguments, context)
        except Exception as error:
            return ToolOutcome(text=f"{name} failed unexpectedly: {type(error).__name__}: {error}", is_error=True)


def check_tool_names(names: Sequence[str]) -> tuple[str, ...]:
    """``names`` without repeats, in the built-in order; :class:`InvalidInput` for a name that is not a tool."""
    if isinstance(names, str):  # a lone name would be read as a list of letters
        names = [names]
    if RUN_SCRIPT in names:
        raise InvalidInput(f"{RUN_SCRIPT} is not enabled by name: turn Codemode on instead")
    unknown = [name for name in dict.fromkeys(names) if name not in BUILTIN_TOOLS]
    if unknown:
        raise InvalidInput(
            f"unknown tool name{'s' if len(unknown) > 1 else ''} {', '.join(map(repr, unknown))}: "
            f"the known tools are {', '.join(KNOWN_TOOL_NAMES)}"
        )
    wanted = set(names)
    return tuple(name for name in KNOWN_TOOL_NAMES if name in wanted)


def build_tools(enabled: Sequence[str], *, codemode: bool) -> ToolSet:
    """The session's tool set from enabled tool names (``ToolSettings.enabled``) and the Codemode switch."""
    return ToolSet([BUILTIN_TOOLS[name]() for name in check_tool_names(enabled)], codemode=codemode)


class BuiltinToolSource:
    """Tool sets of the built-in tools, for the runtime (its ``ToolSource``)."""

    def tools_for(self, enabled: Sequence[str], *, codemode: bool) -> ToolSet:
        return build_tools(enabled, codemode=codemode)
