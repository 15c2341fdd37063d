"""The tools of a session: built from the names the profile or ``session.tools.configure`` enables (M3, M4).

With Codemode on, the model sees ``run_script`` (plus ``ask_user`` when enabled, since a script cannot
wait for the user's answer) and the other enabled tools are reachable only from scripts; the runtime still
runs those inner calls through :meth:`ToolSet.run`, which knows every enabled tool.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import msgspec

from anyy.domain.errors import InvalidInput
from anyy.domain.model_io import ToolSpec
from anyy.tools.ask_user import AskUserTool
from anyy.tools.base import Tool, ToolCallback, ToolContext, ToolOutcome
from anyy.tools.codemode import NOT_IN_SCRIPTS, RUN_SCRIPT, RunScriptTool
from anyy.tools.delegate import DelegateTool
from anyy.tools.files import EditFileTool, ListDirTool, ReadFileTool, WriteFileTool
from anyy.tools.mcp_servers import PREFIX as MCP_PREFIX
from anyy.tools.mcp_servers import McpServers
from anyy.tools.memory import MemoryTool
from anyy.tools.shell import ShellTool
from anyy.tools.skills import SkillTool, find_skills, skill_dirs
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
    "delegate": DelegateTool,
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


def _names_server(pattern: str, server: str) -> bool:
    """Whether ``pattern`` (a name or glob of MCP tool names) can match tools of ``server``."""
    prefix = f"{MCP_PREFIX}{server}_"
    return fnmatch.fnmatchcase(prefix, pattern[: len(prefix)]) or fnmatch.fnmatchcase(prefix, pattern)


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
    """Tool sets of the built-in tools and the profile's MCP servers' tools, for the runtime (its
    ``ToolSource``).

    An MCP tool is enabled by its name (``mcp_files_read_file``) or a glob of names (``mcp_files_*``). A
    name for a server that is not configured is refused; one for a configured server that does not offer
    it now (not started yet, down, or its list changed) is left out, so that a session outlives them.
    """

    def __init__(
        self, servers: McpServers | None = None, skill_dirs: Sequence[Path] = (), *, profile_skills: Path | None = None
    ) -> None:
        self.servers = servers
        self.skill_dirs = tuple(skill_dirs)
        self.profile_skills = profile_skills  # with a workspace: its skill folders, then these (W1)

    def tools_for(self, enabled: Sequence[str], *, codemode: bool, workspace: Path | None = None) -> ToolSet:
        """The session's tools; ``skill`` joins them whenever there are skills (N4): those of the session's
        ``workspace`` and the profile's."""
        if isinstance(enabled, str):
            enabled = [enabled]
        wanted = [name for name in enabled if name.startswith(MCP_PREFIX)]
        builtin: list[Tool] = [
            BUILTIN_TOOLS[name]() for name in check_tool_names([n for n in enabled if n not in wanted and n != "skill"])
        ]
        dirs = self.skill_dirs
        if workspace is not None and self.profile_skills is not None:
            dirs = skill_dirs(self.profile_skills, workspace)
        if dirs and find_skills(dirs):
            builtin.append(SkillTool(dirs))
        return ToolSet([*builtin, *self._mcp_tools(wanted)], codemode=codemode)

    def _mcp_tools(self, wanted: Sequence[str]) -> list[Tool]:
        if not wanted:
            return []
        offered = self.servers.server_tools() if self.servers is not None else {}
        chosen: list[Tool] = []
        for pattern in dict.fromkeys(wanted):
            servers = [
                name
                for name in offered
                if fnmatch.fnmatchcase(f"{MCP_PREFIX}{name}_", pattern[: len(MCP_PREFIX) + len(name) + 1])
            ]
            if not servers:
                known = ", ".join(offered) or "none configured"
                raise InvalidInput(
                    f"{pattern!r} names no configured MCP server (MCP tools are mcp_<server>_<tool>; servers: {known})"
                )
            for name in servers:
                chosen += [tool for tool in offered[name] if fnmatch.fnmatchcase(tool.spec.name, pattern)]
        unique = {tool.spec.name: tool for tool in chosen}
        return list(unique.values())
