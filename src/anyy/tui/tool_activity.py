"""One tool call in the conversation: the call and its arguments, whether it finished, what it returned.

A long result (more than ``PREVIEW_LINES`` lines, or a line or an argument longer than fits a preview) is
collapsed to its first lines with a line saying how much more there is; a click, or Enter or Space when
the activity has the focus (Tab / Shift+Tab from the editor), shows all of it and folds it again. It is
one ``Static`` (no child widgets), as cheap to mount as a line of text."""

from __future__ import annotations

from typing import Any, ClassVar

from rich.text import Text
from textual import events
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.widgets import Static

PREVIEW_LINES = 3  # result lines shown while collapsed
PREVIEW_CHARS = 200  # characters of a result line shown while collapsed
ARGUMENT_CHARS = 80  # characters of an argument's value shown on the call's line
EXPANDED_LINES = 2000  # even expanded, a huge result shows this many lines (the session keeps it all)


def _shorten(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _clip(line: str, limit: int) -> str:
    return line if len(line) <= limit else line[: limit - 1] + "…"


def tool_call_line(name: str, arguments: dict[str, Any]) -> str:
    shown = ", ".join(f"{key}={_shorten(str(value), ARGUMENT_CHARS)}" for key, value in arguments.items())
    return f"⚙ {name}({shown})"


class ToolActivity(Static, can_focus=True):
    DEFAULT_CSS = """
    ToolActivity { color: $text-muted; padding: 0 1; margin: 0 0 1 0; }
    ToolActivity:focus { background: $boost; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "fold", "Show / fold the result", show=False),
        Binding("space", "fold", "Show / fold the result", show=False),
    ]

    class Toggled(Message):
        """Shown or folded; ``by_mouse`` when clicked (the app gives the focus back to the editor)."""

        def __init__(self, activity: ToolActivity, *, by_mouse: bool) -> None:
            super().__init__()
            self.activity = activity
            self.by_mouse = by_mouse

    def __init__(self, name: str, arguments: dict[str, Any]) -> None:
        super().__init__("", markup=False)
        self.tool_name = name
        self.arguments = arguments
        self.outcome = "running…"
        self.result = ""
        self.expanded = False
        self._redraw()

    # -- what it shows ---------------------------------------------------------------------------
    def set_call(self, name: str, arguments: dict[str, Any]) -> None:
        self.tool_name, self.arguments = name, arguments
        self._redraw()

    def finish(self, outcome: str) -> None:
        self.outcome = outcome
        self._redraw()

    def set_result(self, text: str) -> None:
        self.result = text.rstrip("\n")
        self._redraw()

    @property
    def collapsible(self) -> bool:
        """Whether the collapsed view leaves anything out."""
        lines = self.result.splitlines()
        return (
            len(lines) > PREVIEW_LINES
            or any(len(line) > PREVIEW_CHARS for line in lines)
            or any(len(str(value)) > ARGUMENT_CHARS or "\n" in str(value) for value in self.arguments.values())
        )

    @property
    def collapsed(self) -> bool:
        return self.collapsible and not self.expanded

    def describe(self) -> str:
        """The text shown now: the call on one line, the result's first lines; expanded, every argument
        and the whole result."""
        if not self.expanded:
            lines = [f"{tool_call_line(self.tool_name, self.arguments)} [{self.outcome}]"]
            lines += self._result_lines(PREVIEW_LINES, PREVIEW_CHARS)
            if self.collapsible:
                hidden = max(0, len(self.result.splitlines()) - PREVIEW_LINES)
                more = f"{hidden} more line{'s' * (hidden != 1)}" if hidden else "cut short"
                lines.append(f"  ▸ {more} · click, or Enter when focused, shows all")
            return "\n".join(lines)
        lines = [f"⚙ {self.tool_name} [{self.outcome}]"]
        for key, value in self.arguments.items():
            first, *rest = str(value).splitlines() or [""]
            lines += [f"  {key}: {first}", *(f"  {' ' * len(key)}  {line}" for line in rest)]
        lines += self._result_lines(EXPANDED_LINES, None)
        lines.append("  ▾ click, or Enter when focused, folds it")
        return "\n".join(lines)

    def _result_lines(self, count: int, width: int | None) -> list[str]:
        result = self.result.splitlines()
        shown = [f"  │ {line if width is None else _clip(line, width)}" for line in result[:count]]
        if width is None and len(result) > count:
            shown.append(f"  │ … {len(result) - count} more lines not shown (the session keeps them)")
        return shown

    def _redraw(self) -> None:
        self.update(Text(self.describe()))

    # -- showing and folding ---------------------------------------------------------------------
    def toggle(self, *, by_mouse: bool = False) -> None:
        if not self.collapsible:
            return
        self.expanded = not self.expanded
        self._redraw()
        self.post_message(self.Toggled(self, by_mouse=by_mouse))

    def action_fold(self) -> None:
        self.toggle()

    def on_click(self, event: events.Click) -> None:
        event.stop()
        self.toggle(by_mouse=True)
