"""The conversation: messages as Markdown, the assistant's answer streamed as it comes, tool activity
and notices as one-line entries. Oldest at the top; the view follows the bottom while it grows.

Cost (docs/benchmarks.md, TUI): a Textual ``Markdown`` widget mounts one widget per block (each
paragraph, list, list item, bullet), so 50 of them cost about 0.5 s to mount and lay out. Opening a
session therefore shows only its newest messages that way (``rich``); older ones of the page are one
``Static`` each, rendering Rich's Markdown of the same text, and the page is mounted in one batch."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

from rich.markdown import Markdown as RichMarkdown
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widget import Widget
from textual.widgets import Markdown, Static

TOOL_PREVIEW = 200
STREAM_INTERVAL = 0.05  # the streamed answer is appended to its Markdown at most this often (seconds)


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


class Message(Widget):
    """One message: Textual ``Markdown`` when ``rich``, else one ``Static`` rendering Rich's Markdown."""

    DEFAULT_CSS = """
    Message { height: auto; margin: 0 0 1 0; padding: 0 1; }
    Message.user { background: $boost; border-left: thick $accent; }
    Message > Markdown { padding: 0; }
    """

    def __init__(self, role: str, text: str, *, rich: bool = True) -> None:
        super().__init__(classes=role)
        self.role = role
        self.text = text
        self.markdown: Markdown | None = Markdown(text) if rich else None
        self._plain: Static | None = None if rich else Static(RichMarkdown(text))

    def compose(self) -> ComposeResult:
        if self.markdown is not None:
            yield self.markdown
        if self._plain is not None:
            yield self._plain

    async def update(self, text: str) -> None:
        self.text = text
        if self.markdown is not None:
            await self.markdown.update(text)
        elif self._plain is not None:
            self._plain.update(RichMarkdown(text))


class MarkdownStream:
    """Appends the fragments written to a ``Markdown`` widget, what came since the last append at once,
    at most every ``STREAM_INTERVAL``: each append re-parses the answer's last block and lays it out again,
    so Textual's own stream (an append per fragment, as fast as it can) competes with the keys at 200
    tokens/s. ``stop`` appends what is left."""

    def __init__(self, widget: Markdown) -> None:
        self.widget = widget
        self._pending: list[str] = []
        self._wake = asyncio.Event()
        self._appending: asyncio.Future[None] | None = None
        self._task = asyncio.create_task(self._run())

    async def write(self, fragment: str) -> None:
        if fragment:
            self._pending.append(fragment)
            self._wake.set()

    async def stop(self) -> None:
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task
        if self._appending is not None:
            await self._appending  # the append under way ends first: appends must not overlap
        await self._flush()

    async def _flush(self) -> None:
        text = "".join(self._pending)
        self._pending.clear()
        self._wake.clear()
        if text:
            await self.widget.append(text)

    async def _run(self) -> None:
        while True:
            await self._wake.wait()
            self._appending = asyncio.ensure_future(self._flush())
            await asyncio.shield(self._appending)
            await asyncio.sleep(STREAM_INTERVAL)


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
        self._batch: list[Widget] | None = None

    def on_mount(self) -> None:
        self.anchor()  # kept at the bottom as entries come, until the user scrolls up

    @contextlib.asynccontextmanager
    async def batch(self) -> AsyncIterator[None]:
        """Entries added (at the bottom) inside are mounted together when it ends: one layout, not one each."""
        self._batch = []
        try:
            yield
        finally:
            widgets, self._batch = self._batch, None
            if widgets:
                await self.mount_all(widgets)
                self._follow()

    async def _add(self, widget: Widget, before: Any = None) -> None:
        if self._batch is not None and before is None:
            self._batch.append(widget)
            return
        await self.mount(widget, before=before)
        self._follow()

    async def add_message(self, role: str, text: str, *, before: Any = None, rich: bool = True) -> Message:
        widget = Message(role, text, rich=rich)
        await self._add(widget, before)
        return widget

    async def add_notice(self, text: str) -> None:
        await self._add(NoticeLine(text, markup=False))

    async def add_tool(self, call_id: str, text: str, *, before: Any = None) -> ToolLine:
        line = ToolLine(text)
        self._tools[call_id] = line
        await self._add(line, before)
        return line

    def tool(self, call_id: str) -> ToolLine | None:
        return self._tools.get(call_id)

    async def stream_delta(self, execution_id: str, text: str) -> None:
        if self.stream_execution != execution_id or self._stream_widget is None:
            await self.end_stream()
            self.stream_execution = execution_id
            self.streamed = ""
            self._stream_widget = widget = Message("assistant", "")
            await self.mount(widget)  # at once, even in a batch: the stream writes into it
            self._follow()
            assert widget.markdown is not None
            self._stream = MarkdownStream(widget.markdown)
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
