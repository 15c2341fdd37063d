"""The conversation: messages as Markdown, the assistant's answer streamed as it comes, the agent's
questions and the user's answers, tool activity (collapsible, :mod:`anyy.tui.tool_activity`; the calls a
Codemode script makes are listed under it) and notices. Oldest at the top; the view follows the bottom
while it grows, and older pages are put above on demand.

Cost (docs/benchmarks.md, TUI): a Textual ``Markdown`` widget mounts one widget per block (each
paragraph, list, list item, bullet), so 50 of them cost about 0.5 s to mount and lay out. Opening a
session therefore shows only its newest messages that way (``rich``); older ones of the page are one
``Static`` each, rendering Rich's Markdown of the same text, and the page is mounted in one batch."""

from __future__ import annotations

import asyncio
import collections
import contextlib
from collections.abc import AsyncIterator
from typing import Any

from rich.markdown import Markdown as RichMarkdown
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.message import Message as TextualMessage
from textual.widget import Widget
from textual.widgets import Markdown, Static

from anyy.api.entries import InnerCall
from anyy.tui.completion import FirstHint
from anyy.tui.tool_activity import ToolActivity

STREAM_INTERVAL = 0.05  # the streamed answer is appended to its Markdown at most this often (seconds)


class Message(Widget):
    """One message: Textual ``Markdown`` when ``rich``, else one ``Static`` rendering Rich's Markdown."""

    DEFAULT_CSS = """
    Message { height: auto; margin: 0 0 1 0; padding: 0 1; }
    Message.user { background: $boost; border-left: thick $accent; }
    Message.question { border-left: thick $warning; }
    Message.answer { background: $boost; border-left: thick $warning; }
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


class OlderMarker(Static):
    """At the top while older entries of the path are not shown: PageUp there (or a click) loads them."""

    DEFAULT_CSS = "OlderMarker { color: $text-muted; padding: 0 1; margin: 0 0 1 0; text-style: italic; }"
    TEXT = "↑ older messages: PageUp at the top (or a click here) shows them"

    def __init__(self) -> None:
        super().__init__(self.TEXT, markup=False)

    def on_click(self) -> None:
        self.post_message(ConversationView.OlderWanted())


class ConversationView(VerticalScroll):
    """What the session says, in order; the streamed answer is replaced by its recorded entry.

    It follows the bottom as entries come while the user is there (a message of theirs brings it
    back); scrolled up, reading older entries, the view stays put. Older pages of history are put above
    what is shown (``batch(older=True)``) with what the user was looking at kept in its place."""

    DEFAULT_CSS = "ConversationView { height: 1fr; }"
    # Never focused itself (Tab would leave the editor for an invisible place): the editor's PageUp/PageDown
    # and the mouse scroll it, Tab reaches the tool activities in it.
    can_focus = False

    class OlderWanted(TextualMessage):
        """PageUp at the top, or a click on the marker: the app loads the previous page of history."""

    def __init__(self) -> None:
        super().__init__(id="conversation")
        self.stream_execution: str | None = None
        self.streamed = ""
        self._stream_widget: Message | None = None
        self._unclaimed: Message | None = None  # a closed stream whose recorded entry has not come yet
        self._stream: MarkdownStream | None = None
        self._tools: dict[str, ToolActivity] = {}
        self._batch: list[Widget] | None = None
        self.older: OlderMarker | None = None
        self.older_pages = 0  # older pages put in place, their scroll position restored
        self._said: collections.deque[str] = collections.deque(maxlen=6)  # the newest notices, for add_notice

    def on_mount(self) -> None:
        self.anchor()  # kept at the bottom as entries come, until the user scrolls up

    @contextlib.asynccontextmanager
    async def batch(self, *, older: bool = False) -> AsyncIterator[None]:
        """Entries added inside are mounted together when it ends: one layout, not one each. At the bottom,
        or, ``older``, above everything shown (below the marker of older messages)."""
        self._batch = []
        try:
            yield
        finally:
            widgets, self._batch = self._batch, None
            if older:
                await self._prepend(widgets)
            elif widgets:
                following = self.is_vertical_scroll_end
                await self.mount_all(widgets)
                self._follow(following)

    async def show_first_hint(self) -> None:
        """What to do, on the screen of an empty session."""
        await self.mount(FirstHint())

    async def _add(self, widget: Widget, *, follow: bool = False) -> None:
        for hint in self.query(FirstHint):
            await hint.remove()
        if self._batch is not None:
            self._batch.append(widget)
            return
        following = follow or self.is_vertical_scroll_end
        await self.mount(widget)
        self._follow(following)

    async def add_message(self, role: str, text: str, *, rich: bool = True) -> Message:
        if role == "user":  # a new turn: what earlier turns said never hides what this one says
            self._said.clear()
        widget = Message(role, text, rich=rich)
        await self._add(widget, follow=role == "user")
        return widget

    async def add_notice(self, text: str, *, unless_said: bool = False) -> None:
        """A notice line; ``unless_said``: not when a notice just shown says it already (a recorded notice
        entry after the live event that announced it, a failure's error after "The response failed")."""
        if unless_said and any(text in said or (len(said) >= 20 and said in text) for said in self._said):
            return
        self._said.append(text)
        await self._add(NoticeLine(text, markup=False))

    def said_already(self, text: str) -> bool:
        """Whether one of the newest notices says ``text``."""
        return any(text in said for said in self._said)

    def remember_said(self, text: str) -> None:
        """Count ``text`` as said (a recorded notice saying it is not shown again)."""
        self._said.append(text)

    async def add_tool(self, call_id: str, name: str, arguments: dict[str, Any]) -> ToolActivity:
        activity = ToolActivity(name, arguments)
        self._tools[call_id] = activity
        await self._add(activity)
        return activity

    def tool(self, call_id: str) -> ToolActivity | None:
        return self._tools.get(call_id)

    def _script_of(self, parent: str) -> ToolActivity | None:
        """The activity of the Codemode script that made a call (the event's ``parent_call_id``), if shown."""
        return self._tools.get(parent) if parent else None

    async def tool_started(self, call_id: str, name: str, arguments: dict[str, Any], *, parent: str = "") -> None:
        """A call announced live: a line under the script that made it, or an activity of its own."""
        script = self._script_of(parent)
        if script is not None:
            script.start_inner(call_id, name, arguments)
        elif call_id not in self._tools:  # once: the session opened as it started says it too (session.get)
            await self.add_tool(call_id, name, arguments)

    def tool_finished(self, call_id: str, outcome: str, *, is_error: bool, parent: str = "") -> None:
        script = self._script_of(parent)
        if script is not None and script.finish_inner(call_id, is_error=is_error):
            return
        tool = self._tools.get(call_id)
        if tool is not None:
            tool.finish(outcome)

    async def set_inner_calls(self, call_id: str, calls: list[InnerCall]) -> None:
        """A script's recorded calls under its activity. Calls of it that were shown as activities of their
        own (the TUI opened while the script ran, before it was announced) go: the list says them."""
        activity = self._tools.get(call_id)
        if activity is None:
            return
        for number in range(1, len(calls) + 1):
            alone = self._tools.pop(f"{call_id}.{number}", None)
            if alone is not None and self._batch is not None and alone in self._batch:
                self._batch.remove(alone)
            elif alone is not None:
                await alone.remove()
        activity.set_inner(calls)

    # -- older history -----------------------------------------------------------------------------
    async def show_older_marker(self, shown: bool) -> None:
        """The line at the top saying that older entries exist (``shown``), or its removal."""
        if shown and self.older is None:
            self.older = OlderMarker()
            if self.children:
                await self.mount(self.older, before=0)
            else:
                await self.mount(self.older)
        elif not shown and self.older is not None:
            marker, self.older = self.older, None
            await marker.remove()

    def page_up(self) -> None:
        """PageUp: a page up; at the top, the previous page of history when there is one."""
        if self.scroll_y <= 0 and self.older is not None:
            self.post_message(self.OlderWanted())
        else:
            self.scroll_page_up(animate=False)

    def action_page_up(self) -> None:
        self.page_up()

    async def _prepend(self, widgets: list[Widget]) -> None:
        first = next((child for child in self.children if child is not self.older), None)
        # What the user looks at keeps its place: its distance from the top of the view, after the layout.
        offset = first.virtual_region.y - self.scroll_y if first is not None else 0
        if widgets and self.older is not None:
            await self.mount_all(widgets, after=self.older)
        elif widgets:
            await self.mount_all(widgets, before=first)  # None: the view was empty

        def restore() -> None:
            if first is not None:
                self.scroll_to(y=first.virtual_region.y - offset, animate=False, immediate=True)
            self.older_pages += 1

        self.call_after_refresh(restore)

    # -- the streamed answer ---------------------------------------------------------------------
    async def stream_delta(self, execution_id: str, text: str) -> None:
        if self.stream_execution != execution_id or self._stream_widget is None:
            await self.end_stream()
            self.stream_execution = execution_id
            self.streamed = ""
            self._stream_widget = widget = Message("assistant", "")
            following = self.is_vertical_scroll_end
            await self.mount(widget)  # at once, even in a batch: the stream writes into it
            self._follow(following)
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
        if recorded is None:  # closed before its entry came (a tool call started first): the entry claims it
            self._unclaimed = widget
        await widget.update(text)

    async def claim_streamed(self, recorded: str) -> bool:
        """The recorded answer of a stream already closed takes that stream's place (rather than being shown
        a second time, after the tool activity that closed it); False when no stream waits for its entry."""
        widget, self._unclaimed = self._unclaimed, None
        if widget is None or not widget.is_attached:
            return False
        await widget.update(recorded)
        return True

    async def clear(self) -> None:
        """Forget everything shown (another session, or the same one after moving in its tree)."""
        if self._stream is not None:
            await self._stream.stop()
        self._stream_widget, self._stream, self.stream_execution, self.streamed = None, None, None, ""
        self._unclaimed = None
        self._tools.clear()
        self._said.clear()
        self.older = None
        await self.remove_children()

    def _follow(self, following: bool) -> None:
        if following:
            self.scroll_end(animate=False)
