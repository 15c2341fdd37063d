"""``[hooks]`` in ``config.toml`` (SPEC N6): per event, a list of hooks, each a command, an optional tool
name glob and a timeout::

    [[hooks.pre_tool]]
    command = ["/home/me/.config/anyy/no-force-push.py"]
    matcher = "shell"
    timeout = 5

A command is an argv list, or a string split into words as a shell would (quotes honoured) but never run
by a shell: no pipes, variables or globs. ``~`` at the start of a word is the user's home. The program is
a bare name found on ``PATH`` or an absolute path: a relative path would name a file in the session's
working directory, which the agent can change.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Annotated, Literal

import msgspec

HookEvent = Literal["pre_tool", "post_tool", "session_start", "submission", "execution_end"]
EVENTS: tuple[HookEvent, ...] = ("pre_tool", "post_tool", "session_start", "submission", "execution_end")
TOOL_EVENTS: frozenset[str] = frozenset({"pre_tool", "post_tool"})
DEFAULT_TIMEOUT = 10.0  # seconds
MAX_TIMEOUT = 600.0


class HookSettings(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """One hook: what to run, for which tools (``pre_tool`` and ``post_tool`` only), for how long at most."""

    command: str | list[str]
    matcher: str = "*"  # a glob on the tool's name: "shell", "mcp_github_*", "write_file"
    timeout: Annotated[float, msgspec.Meta(gt=0, le=MAX_TIMEOUT)] = DEFAULT_TIMEOUT
    name: str = ""  # shown in notices and in `anyy hooks list`; default: the program's file name


class HooksSettings(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    pre_tool: list[HookSettings] = []
    post_tool: list[HookSettings] = []
    session_start: list[HookSettings] = []
    submission: list[HookSettings] = []
    execution_end: list[HookSettings] = []

    def of(self, event: HookEvent) -> list[HookSettings]:
        hooks: list[HookSettings] = getattr(self, event)
        return hooks

    def any(self) -> bool:
        return any(self.of(event) for event in EVENTS)


class HookError(ValueError):
    """A hook's table cannot be used; the message says which and why."""


def argv(hook: HookSettings) -> list[str]:
    """The hook's command as the words run, ``~`` expanded."""
    words = shlex.split(hook.command) if isinstance(hook.command, str) else list(hook.command)
    return [str(Path(word).expanduser()) if word.startswith("~") else word for word in words]


def label(hook: HookSettings) -> str:
    """How notices name the hook."""
    if hook.name:
        return hook.name
    words = argv(hook)
    if not words:
        return "(empty command)"
    # `python3 /x/guard.py`: the script says more than the interpreter
    named = next((word for word in words[1:] if word.startswith("/") and not word.startswith("-")), words[0])
    return Path(named).name or named


def check(settings: HooksSettings) -> None:
    """Refuse what cannot run as the user meant it: an empty command, a relative program path, a matcher
    on an event that concerns no tool."""
    for event in EVENTS:
        for index, hook in enumerate(settings.of(event)):
            where = f"[[hooks.{event}]] number {index + 1}"
            try:
                words = argv(hook)
            except ValueError as exc:  # shlex: an unclosed quote
                raise HookError(f"{where}: its command cannot be split into words ({exc})") from None
            if not words or not words[0]:
                raise HookError(f"{where}: 'command' is empty: give the program to run (an argv list or a path)")
            program = words[0]
            if "/" in program and not program.startswith("/"):
                raise HookError(
                    f"{where}: the program {program!r} is a relative path; give an absolute path (or ~/...): a "
                    "relative one would be read from the session's working directory, which the agent can change"
                )
            if event not in TOOL_EVENTS and hook.matcher != "*":
                raise HookError(f"{where}: 'matcher' selects tools, so it applies to pre_tool and post_tool only")
