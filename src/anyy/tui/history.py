"""The session's history in the conversation view, read by pages of ``session.history`` (newest first):
the newest page when the session opens, the page before it each time the user asks for older messages
(PageUp at the top), and the entries the Gateway says were appended while the TUI shows the session.

Each entry kind has its look: messages as Markdown; the agent's question and the user's answer as
messages of their own; tool calls and their results as one collapsible activity (``ask_user`` calls
are left out: the question and the answer say it), a Codemode script's with the calls it made
(``inner_calls`` of its result) listed under it; anything else as a notice line. A recorded answer's
usage goes to the session state (the status line shows it)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from anyy.api import methods as m
from anyy.api.entries import AssistantData, EntryView, ToolCallData, ToolResultData, Usage
from anyy.api.params import PageParams
from anyy.api.usage import UsageParams
from anyy.tui.conversation import ConversationView
from anyy.tui.state import ContextFill, SessionState, Spend

HISTORY_PAGE = 50
ASK_USER = "ask_user"  # the tool whose call is shown as the question entry, and its result as the answer

Call = Callable[..., Awaitable[Any]]
# How the other entries read, as a notice line (live and from history alike).
NOTICE_LABELS = {
    "model_change": "Model",
    "compaction": "Earlier messages summarised",
    "branch_summary": "Summary of the branch left",
    "label": "Label",
}


def screenful(entries: list[EntryView], width: int, height: int) -> int:
    """How many of ``entries`` (newest first) fill a ``height``-row screen, by a rough count of their rows.

    Those are shown as Textual Markdown; older ones as Rich's Markdown, much cheaper to mount and lay out
    (docs/benchmarks.md, TUI), and alike but for details (spacing in lists, the look of code)."""
    rows = 0
    for count, entry in enumerate(entries):
        if rows >= height:
            return count
        rows += 1  # the margin below
        if entry.kind in ("user", "assistant"):
            lines = entry.text.splitlines() or [""]
            rows += sum(1 + len(line) // max(width - 4, 20) for line in lines)
        else:
            rows += 1
    return len(entries)


def usage_of(entry: EntryView) -> Usage | None:
    """An assistant entry's reported usage, if any."""
    return entry.data.usage if isinstance(entry.data, AssistantData) else None


def tool_outcome(*, is_error: bool, synthetic: bool) -> str:
    return "skipped" if synthetic else "error" if is_error else "done"


class History:
    """What of one session's path the conversation shows, and the cursor to the part before it."""

    def __init__(self, call: Call, view: ConversationView, state: SessionState, page: int = HISTORY_PAGE) -> None:
        self.call = call
        self.view = view
        self.state = state
        self.page = page
        self.session_id = ""
        self.cursor: str | None = None  # of the page before the oldest shown; None once the root is shown
        self.shown: set[int] = set()

    def reset(self, session_id: str) -> None:
        """Forget what was shown (another session, or another place in the tree)."""
        self.session_id, self.cursor, self.shown = session_id, None, set()

    async def open(self, width: int, height: int) -> None:
        """The newest page, mounted in one batch; the newest screenful as Textual Markdown."""
        page = await self.call(m.SESSION_HISTORY, PageParams(session_id=self.session_id, limit=self.page))
        self.cursor = page.next_cursor
        items: list[EntryView] = page.items  # newest first
        self.state.usage = next((u for u in map(usage_of, items) if u is not None), None)
        await self._read_spend(items)
        await self.view.show_older_marker(self.cursor is not None)
        rich = screenful(items, width, height)
        async with self.view.batch():
            for age in reversed(range(len(items))):
                await self.show(items[age], live=False, rich=age < rich)

    async def older(self) -> bool:
        """The page before the oldest shown, above it (the view keeps its place); False when none is left."""
        if self.cursor is None:
            return False
        params = PageParams(session_id=self.session_id, limit=self.page, cursor=self.cursor)
        page = await self.call(m.SESSION_HISTORY, params)
        self.cursor = page.next_cursor
        await self.view.show_older_marker(self.cursor is not None)
        async with self.view.batch(older=True):
            for entry in reversed(page.items):
                await self.show(entry, live=False, rich=False)
        return True

    async def appended(self, entries: list[EntryView]) -> None:
        """Entries the Gateway appended (``entries_appended`` carries them), in order, each shown once."""
        for entry in entries:
            if entry.id not in self.shown:
                await self.show(entry, live=True)

    async def show(self, entry: EntryView, *, live: bool, rich: bool = True) -> None:
        self.shown.add(entry.id)
        kind, text, view = entry.kind, entry.text, self.view
        if kind == "user":
            await view.end_stream()
            await view.add_message("user", text, rich=rich)
        elif kind == "assistant":
            await self._assistant(entry, live=live, rich=rich)
        elif isinstance(entry.data, ToolCallData):
            await self._tool_call(entry.data)
        elif isinstance(entry.data, ToolResultData):
            await self._tool_result(entry.text, entry.data)
        elif kind == "question":
            await view.end_stream()
            await view.add_message("question", f"**The agent asks:** {text}", rich=rich)
        elif kind == "answer":
            await view.add_message("answer", f"**Your answer:** {text}", rich=rich)
        elif kind == "notice" and text.strip():
            await view.add_notice(text, unless_said=live)  # live, its event may have said it already
        elif text.strip():
            await view.add_notice(f"{NOTICE_LABELS.get(kind, kind)}: {text}")

    async def _read_spend(self, items: list[EntryView]) -> None:
        """The session's cost so far (its tree's, from the store's sums) and its last answer's."""
        try:
            report = await self.call(m.USAGE_REPORT, UsageParams(by="session", session_id=self.session_id))
        except Exception:  # an older Gateway without usage.report: the status line goes without it
            return
        last = next((e.data for e in items if isinstance(e.data, AssistantData) and e.data.usage), None)
        self.state.spend = Spend(
            total=report.total.cost,
            last=None if last is None else last.cost,
            unpriced=report.total.unpriced,
            calls=report.total.calls,
        )

    async def _assistant(self, entry: EntryView, *, live: bool, rich: bool) -> None:
        usage = usage_of(entry)
        if live and usage is not None and isinstance(entry.data, AssistantData):
            cost, spent = entry.data.cost, self.state.spend
            self.state.spend = Spend(
                total=spent.total + (cost or 0),
                last=cost,
                unpriced=spent.unpriced + (cost is None),
                calls=spent.calls + 1,
            )
        if live and usage is not None:
            self.state.usage = usage
            self.state.context = ContextFill(usage.context_tokens, self.state.context.budget)
        if live and self.view.stream_execution is not None:
            await self.view.end_stream(entry.text)
        elif entry.text.strip() and not (live and await self.view.claim_streamed(entry.text)):
            await self.view.add_message("assistant", entry.text, rich=rich)

    async def _tool_call(self, data: ToolCallData) -> None:
        if data.name == ASK_USER:
            return
        activity = self.view.tool(data.call_id)
        if activity is None:  # from history: the live one was made by tool_started
            (await self.view.add_tool(data.call_id, data.name, data.arguments)).finish("called")
        else:  # its result, on a newer page, was shown first
            activity.set_call(data.name, data.arguments)

    async def _tool_result(self, text: str, data: ToolResultData) -> None:
        if data.name == ASK_USER:
            return
        activity = self.view.tool(data.call_id)
        if activity is None:  # the call is on an older page, not shown yet
            activity = await self.view.add_tool(data.call_id, data.name, {})
        activity.set_result(text)
        activity.finish(tool_outcome(is_error=data.is_error, synthetic=data.synthetic))
        if data.inner_calls:
            await self.view.set_inner_calls(data.call_id, data.inner_calls)
