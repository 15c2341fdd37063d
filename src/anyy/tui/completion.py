"""``/`` command completion and the first screen's hint.

While the editor holds a command being typed (one line, starting with ``/``, no space yet), the line above
it lists the commands that match with what each does; Tab completes the name (to the longest common
beginning of the matches, and a space after a unique one). Nothing else changes in the editor.
"""

from __future__ import annotations

from textual.widgets import Static

FIRST_HINT = (
    "Type a message and press Enter to send it · while the agent works, Enter steers and Alt+Enter (or Ctrl+F) "
    "queues a follow-up · / for commands (/help lists keys and commands) · Ctrl+C stops · Ctrl+Q quits"
)


def matches(text: str, commands: dict[str, str]) -> list[str]:
    """The commands ``text`` may be the beginning of (none when it is not a command being typed)."""
    if not text.startswith("/") or any(ch.isspace() for ch in text):
        return []
    return [name for name in commands if name.startswith(text)]


def complete(text: str, commands: dict[str, str]) -> str | None:
    """What Tab makes of ``text``: the longest common beginning of its matches (with a space when only one
    is left); None when there is nothing to complete."""
    found = matches(text, commands)
    if not found:
        return None
    if len(found) == 1:
        return found[0] + " "
    common = found[0]
    for name in found[1:]:
        while not name.startswith(common):
            common = common[:-1]
    return common if len(common) > len(text) else None


class CommandHint(Static):
    """The matching commands, above the editor, while a command is typed."""

    DEFAULT_CSS = """
    CommandHint { height: auto; max-height: 10; color: $text-muted; padding: 0 1; display: none; }
    CommandHint.shown { display: block; }
    """

    def __init__(self, commands: dict[str, str]) -> None:
        super().__init__("", id="command-hint", markup=False)
        self.commands = commands
        self.shown: list[str] = []

    def follow(self, text: str) -> None:
        self.shown = matches(text, self.commands)
        width = max((len(name) for name in self.shown), default=0)
        lines = [f"{name.ljust(width)}  {self.commands[name]}" for name in self.shown]
        if self.shown:
            lines.append("Tab completes · Enter runs it")
        self.update("\n".join(lines))
        self.set_class(bool(self.shown), "shown")


class FirstHint(Static):
    """What to do, on the screen of a session with nothing in it yet; gone with the first message."""

    DEFAULT_CSS = "FirstHint { color: $text-muted; padding: 0 1; margin: 0 0 1 0; }"

    def __init__(self) -> None:
        super().__init__(FIRST_HINT, markup=False)
