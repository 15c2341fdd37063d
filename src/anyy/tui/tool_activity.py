"""One tool call in the conversation: the call and its arguments, whether it finished, what it returned.

A long result (more than ``PREVIEW_LINES`` lines, or a line or an argument longer than fits a preview) is
collapsed to its first lines with a line saying how much more there is; a click, or Enter or Space when
the activity has the focus (Tab / Shift+Tab from the editor), shows all of it and folds it again. It is
one ``Static`` (no child widgets), as cheap to mount as a line of text.

A Codemode script (``run_script``) lists the tools it called under its own line, one line each
(``↳ read_file(path=notes.txt) → ok``): live from the Gateway's events, then, once its result is
recorded, from the result's ``inner_calls``, which also hold the beginning of what each call returned;
those results are folded like the script's own and shown with it. While folded, only the newest
``INNER_PREVIEW`` calls are listed."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from rich.text import Text
from textual import events
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.widgets import Static

from anyy.api.entries import InnerCall

PREVIEW_LINES = 3  # result lines shown while collapsed
PREVIEW_CHARS = 200  # characters of a result line shown while collapsed
ARGUMENT_CHARS = 80  # characters of an argument's value shown on the call's line
EXPANDED_LINES = 2000  # even expanded, a huge result shows this many lines (the session keeps it all)
INNER_PREVIEW = 8  # calls of a Codemode script listed while collapsed (the newest ones)
INNER_RESULT_LINES = 200  # lines of an inner call's result shown expanded (the history keeps its beginning)
RUNNING = "running…"


def _shorten(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _clip(line: str, limit: int) -> str:
    return line if len(line) <= limit else line[: limit - 1] + "…"


def call_text(name: str, arguments: dict[str, Any]) -> str:
    shown = ", ".join(f"{key}={_shorten(str(value), ARGUMENT_CHARS)}" for key, value in arguments.items())
    return f"{name}({shown})"


def tool_call_line(name: str, arguments: dict[str, Any]) -> str:
    return f"⚙ {call_text(name, arguments)}"


def _cut(arguments: dict[str, Any]) -> bool:
    """Whether the call's line leaves part of an argument out."""
    return any(len(str(value)) > ARGUMENT_CHARS or "\n" in str(value) for value in arguments.values())


def _argument_lines(arguments: dict[str, Any], indent: str) -> list[str]:
    lines: list[str] = []
    for key, value in arguments.items():
        first, *rest = str(value).splitlines() or [""]
        lines += [f"{indent}{key}: {first}", *(f"{indent}{' ' * len(key)}  {line}" for line in rest)]
    return lines


@dataclass
class InnerCallLine:
    """A tool a Codemode script called: ``outcome`` is running…, ok or error; ``result`` the beginning of
    what it returned (known once the script's result is recorded)."""

    call_id: str
    name: str
    arguments: dict[str, Any]
    outcome: str = RUNNING
    result: str = ""

    def line(self) -> str:
        return f"  ↳ {call_text(self.name, self.arguments)} → {self.outcome}"


def _result_lines(text: str, prefix: str, count: int, width: int | None, kept: str = "") -> list[str]:
    result = text.splitlines()
    shown = [f"{prefix}{line if width is None else _clip(line, width)}" for line in result[:count]]
    if width is None and len(result) > count:
        shown.append(f"{prefix}… {len(result) - count} more lines not shown{kept}")
    return shown


class ToolActivity(Static, can_focus=True):
    DEFAULT_CSS = """
    ToolActivity { color: $text-muted; padding: 0 1; margin: 0 0 1 0; }
    ToolActivity:focus { background: $accent 30%; color: $text; text-style: bold; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "fold", "Show / fold the result", show=False),
        Binding("space", "fold", "Show / fold the result", show=False),
        Binding("escape", "leave", "Back to the editor", show=False),
    ]

    class Toggled(Message):
        """Shown or folded; ``by_mouse`` when clicked (the app gives the focus back to the editor)."""

        def __init__(self, activity: ToolActivity, *, by_mouse: bool) -> None:
            super().__init__()
            self.activity = activity
            self.by_mouse = by_mouse

    class Left(Message):
        """Esc on the focused activity: the editor takes the focus back."""

    def __init__(self, name: str, arguments: dict[str, Any]) -> None:
        super().__init__("", markup=False)
        self.tool_name = name
        self.arguments = arguments
        self.outcome = RUNNING
        self.result = ""
        self.inner: list[InnerCallLine] = []  # the calls of a Codemode script, in order
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

    def start_inner(self, call_id: str, name: str, arguments: dict[str, Any]) -> None:
        """A call the script made, announced live (``tool_started``), once."""
        if any(call.call_id == call_id for call in self.inner):
            return
        self.inner.append(InnerCallLine(call_id, name, arguments))
        self._redraw()

    def finish_inner(self, call_id: str, *, is_error: bool) -> bool:
        """The end of a call the script made (``tool_finished``); False if it is not one of them."""
        for call in reversed(self.inner):
            if call.call_id == call_id:
                call.outcome = "error" if is_error else "ok"
                self._redraw()
                return True
        return False

    def set_inner(self, calls: list[InnerCall]) -> None:
        """The script's calls as its recorded result holds them (``inner_calls``): they replace what was
        seen live, and bring what each call returned."""
        self.inner = [
            InnerCallLine("", call.name, call.arguments, "error" if call.is_error else "ok", call.result.rstrip("\n"))
            for call in calls
        ]
        self._redraw()

    @property
    def collapsible(self) -> bool:
        """Whether the collapsed view leaves anything out."""
        lines = self.result.splitlines()
        return (
            len(lines) > PREVIEW_LINES
            or any(len(line) > PREVIEW_CHARS for line in lines)
            or _cut(self.arguments)
            or len(self.inner) > INNER_PREVIEW
            or any(call.result or _cut(call.arguments) for call in self.inner)
        )

    @property
    def collapsed(self) -> bool:
        return self.collapsible and not self.expanded

    def describe(self) -> str:
        """The text shown now: the call on one line, the result's first lines; expanded, every argument
        and the whole result."""
        if not self.expanded:
            lines = [f"{tool_call_line(self.tool_name, self.arguments)} [{self.outcome}]"]
            lines += self._inner_preview()
            lines += _result_lines(self.result, "  │ ", PREVIEW_LINES, PREVIEW_CHARS)
            if self.collapsible:
                hidden = max(0, len(self.result.splitlines()) - PREVIEW_LINES)
                parts = [f"{hidden} more line{'s' * (hidden != 1)}"] if hidden else []
                if any(call.result for call in self.inner):
                    parts.append("what the calls returned")
                more = ", ".join(parts) or "cut short"
                lines.append(f"  ▸ {more} · click, or Enter when focused, shows all")
            return "\n".join(lines)
        lines = [f"⚙ {self.tool_name} [{self.outcome}]", *_argument_lines(self.arguments, "  ")]
        budget = EXPANDED_LINES  # of the calls' results together: a script may make hundreds of calls
        for call in self.inner:
            lines.append(call.line())
            if _cut(call.arguments):
                lines += _argument_lines(call.arguments, "      ")
            shown = _result_lines(call.result, "    │ ", min(INNER_RESULT_LINES, budget), None)
            budget = max(0, budget - len(shown))
            lines += shown
        lines += _result_lines(self.result, "  │ ", EXPANDED_LINES, None, " (the session keeps them)")
        lines.append("  ▾ click, or Enter when focused, folds it")
        return "\n".join(lines)

    def _inner_preview(self) -> list[str]:
        shown = self.inner[-INNER_PREVIEW:]
        earlier = len(self.inner) - len(shown)
        lines = [f"  ↳ … {earlier} earlier call{'s' * (earlier != 1)}"] if earlier else []
        return lines + [call.line() for call in shown]

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

    def action_leave(self) -> None:
        """Esc: back to the editor (typing a character does the same, and the character is kept)."""
        self.post_message(self.Left())

    def on_click(self, event: events.Click) -> None:
        event.stop()
        self.toggle(by_mouse=True)
