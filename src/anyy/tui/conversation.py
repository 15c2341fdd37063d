"""The conversation: messages as Markdown, the assistant's answer streamed as it comes, tool activity
and notices as one-line entries. Oldest at the top; the view follows the bottom while it grows."""

from __future__ import annotations

from typing import Any

from textual.containers import VerticalScroll
from textual.widgets import Markdown, Static
from textual.widgets._markdown import MarkdownStream

TOOL_PREVIEW = 200


def _shorten(text: str, limit: int = TOOL_PREVIEW) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def tool_call_line(name: str, arguments: dict[str, Any]) -> str:
    shown = ", ".join(f"{key}={_shorten(str(value), 80)}" for key, value in arguments.items())
    return f"⚙ {name}({shown})"


class ToolLine(Static):
    """One tool call: its arguments, then whether it finished and what it returned."""

    DEFAULT_CSS = "ToolLine { color: $text-muted; padding: 0 1; }"

    def __init__(self, call: str) -> None:
        super().__init__(call, markup=False)
        self.call = call
        self.outcome = "running…"
        self.result = ""
        self._refresh()

    def finish(self, outcome: str) -> None:
        self.outcome = outcome
        self._refresh()

    def set_result(self, text: str) -> None:
        self.result = _shorten(text)
        self._refresh()

    def _refresh(self) -> None:
        tail = f" → {self.result}" if self.result else ""
        self.update(f"{self.call} [{self.outcome}]{tail}")


class Message(Markdown):
    DEFAULT_CSS = """
    Message { margin: 0 0 1 0; padding: 0 1; }
    Message.user { background: $boost; border-left: thick $accent; }
    """

    def __init__(self, role: str, text: str) -> None:
        super().__init__(text, classes=role)
        self.role = role
        self.text = text


class NoticeLine(Static):
    DEFAULT_CSS = "NoticeLine { color: $warning; padding: 0 1; }"


class ConversationView(VerticalScroll):
    """What the session says, in order; the streamed answer is replaced by its recorded entry."""

    DEFAULT_CSS = "ConversationView { height: 1fr; }"

    def __init__(self) -> None:
        super().__init__(id="conversation")
        self.stream_execution: str | None = None
        self.streamed = ""
        self._stream_widget: Message | None = None
        self._stream: MarkdownStream | None = None
        self._tools: dict[str, ToolLine] = {}

    def on_mount(self) -> None:
        self.anchor()  # kept at the bottom as entries come, until the user scrolls up

    async def add_message(self, role: str, text: str, *, before: Any = None) -> Message:
        widget = Message(role, text)
        await self.mount(widget, before=before)
        self._follow()
        return widget

    async def add_notice(self, text: str) -> None:
        await self.mount(NoticeLine(text, markup=False))
        self._follow()

    async def add_tool(self, call_id: str, text: str, *, before: Any = None) -> ToolLine:
        line = ToolLine(text)
        self._tools[call_id] = line
        await self.mount(line, before=before)
        self._follow()
        return line

    def tool(self, call_id: str) -> ToolLine | None:
        return self._tools.get(call_id)

    async def stream_delta(self, execution_id: str, text: str) -> None:
        if self.stream_execution != execution_id or self._stream_widget is None:
            await self.end_stream()
            self.stream_execution = execution_id
            self.streamed = ""
            self._stream_widget = await self.add_message("assistant", "")
            self._stream = Markdown.get_stream(self._stream_widget)
        self.streamed += text
        assert self._stream is not None
        await self._stream.write(text)  # the anchored view follows the bottom by itself

    async def end_stream(self, recorded: str | None = None, *, note: str = "") -> None:
        """Close the streamed answer; ``recorded`` (its entry's text) replaces it, or ``note`` marks it."""
        widget, stream = self._stream_widget, self._stream
        self._stream_widget, self._stream, self.stream_execution = None, None, None
        if stream is not None:
            await stream.stop()
        if widget is None:
            return
        text = recorded if recorded is not None else self.streamed + note
        self.streamed = ""
        if not text.strip():
            await widget.remove()
            return
        widget.text = text
        await widget.update(text)

    async def clear(self) -> None:
        """Forget everything shown (another session, or the same one after moving in its tree)."""
        if self._stream is not None:
            await self._stream.stop()
        self._stream_widget, self._stream, self.stream_execution, self.streamed = None, None, None, ""
        self._tools.clear()
        await self.remove_children()

    def _follow(self) -> None:
        self.scroll_end(animate=False)
