"""The TUI application: one session of the profile's Gateway, driven only through its JSON-RPC API.

What the keys do (SPEC Q4, Q5, S2-S6):

- Enter: idle, sends the editor's text; busy, adds it as steering. Alt+Enter: a follow-up while busy.
- Alt+Up: every pending item back into the editor before the draft; each item is taken out of the
  queue with ``session.queue.cancel`` and its text used only once the Gateway acknowledged it.
- Ctrl+C: stops the execution this client saw running (``session.stop`` with that id); queues kept.
- Esc: during a retry wait, cancels only the wait (``session.retry.cancel``); while working, brings
  the pending items back into the editor, then stops the captured execution. Screens above the main
  one (pickers) take Esc first.

Every stop names the execution captured when the key was pressed, so a late stop can never hit a
later turn (the Gateway ignores a stop whose execution already ended).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, ClassVar

from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.message import Message

from anyy.profiles.gateway_address import Address
from anyy.tui.client import GatewayClient, GatewayGone
from anyy.tui.conversation import ConversationView, tool_call_line
from anyy.tui.editor import Editor
from anyy.tui.pending import PendingQueue
from anyy.tui.status import StatusLine
from commons.jsonrpc import CONFLICT, RpcError

HISTORY_PAGE = 50
ENDED = frozenset({"completed", "failed", "interrupted", "timed_out", "suspended", "cancelled"})


class GatewayEvent(Message):
    def __init__(self, params: dict[str, Any]) -> None:
        super().__init__()
        self.params = params


class AnyyApp(App[None]):
    TITLE = "anyy"
    CSS = "Screen { layout: vertical; }"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+c", "interrupt", "Stop", priority=True),
        Binding("alt+up", "recall", "Pending back to the editor", priority=True),
        Binding("escape", "escape", "Stop / cancel the retry", show=False),
    ]

    def __init__(
        self,
        address: Address,
        *,
        session_id: str | None = None,
        role: str | None = None,
        note: str | None = None,
    ) -> None:
        super().__init__()
        self.address = address
        self.requested_session = session_id
        self.role = role
        self.start_note = note
        self.client: GatewayClient | None = None
        self.session: dict[str, Any] = {}
        self.running: str | None = None  # the execution seen running, captured by stops
        self.retry_waiting: str | None = None
        self.failure: str | None = None  # why the app could not open its session
        self.notices: list[str] = []
        self.history_cursor: str | None = None
        self._shown_entries: set[int] = set()
        self._changed = asyncio.Event()

    # -- layout ----------------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        yield ConversationView()
        yield PendingQueue()
        yield Editor()
        yield StatusLine()

    @property
    def conversation(self) -> ConversationView:
        return self.query_one(ConversationView)

    @property
    def editor(self) -> Editor:
        return self.query_one(Editor)

    @property
    def pending(self) -> PendingQueue:
        return self.query_one(PendingQueue)

    @property
    def status(self) -> StatusLine:
        return self.query_one(StatusLine)

    @property
    def session_id(self) -> str:
        return str(self.session.get("id", ""))

    @property
    def busy(self) -> bool:
        return self.running is not None

    # -- start -----------------------------------------------------------------------------------
    async def on_mount(self) -> None:
        self.editor.focus()
        try:
            await self._open()
        except (GatewayGone, RpcError) as exc:
            self.failure = str(exc)
            self.exit()
        self._touch()

    async def _open(self) -> None:
        self.client = await GatewayClient.connect(self.address, self._post_event)
        if self.start_note:
            await self.say(self.start_note)
        if self.requested_session is None:
            params = {} if self.role is None else {"role": self.role}
            await self.open_session(await self.call("session.create", params), live=None)
        else:
            view = await self.call("session.get", {"session_id": self.requested_session})
            await self.open_session(view["session"], live=view)

    async def open_session(self, session: dict[str, Any], live: dict[str, Any] | None) -> None:
        """Show ``session``: subscribe to its events, then its latest page of history and its queue."""
        self.session = session
        self.running, self.retry_waiting = None, None
        await self.call("events.subscribe", {"session_id": self.session_id})
        page = await self.call("session.history", {"session_id": self.session_id, "limit": HISTORY_PAGE})
        self.history_cursor = page.get("next_cursor")
        if self.history_cursor:
            await self.say("Older messages are not shown (PageUp at the top loads them: not yet).")
        for entry in reversed(page["items"]):
            await self.show_entry(entry, live=False)
        if live is not None and live.get("running_execution"):
            self.running = str(live["running_execution"])
            if live.get("live_text"):
                await self.conversation.stream_delta(self.running, str(live["live_text"]))
        await self.refresh_queue()
        self._show_state()

    # -- talking to the Gateway ------------------------------------------------------------------
    def _post_event(self, params: dict[str, Any]) -> None:
        self.post_message(GatewayEvent(params))

    async def call(self, method: str, params: dict[str, Any] | None = None) -> Any:
        if self.client is None:
            raise GatewayGone("not connected to the Gateway")
        return await self.client.call(method, params)

    async def say(self, text: str) -> None:
        """A line for the user in the conversation (not recorded in the session)."""
        self.notices.append(text)
        await self.conversation.add_notice(text)
        self._touch()

    async def refresh_queue(self) -> None:
        items = await self.call("session.queue.list", {"session_id": self.session_id})
        self.pending.show(items)

    def _show_state(self) -> None:
        if self.retry_waiting is not None:
            state = f"retry wait ({self.retry_waiting}) · Esc cancels the wait"
        elif self.running is not None:
            state = f"working ({self.running}) · Ctrl+C stops"
        else:
            state = "idle"
        self.status.show(self.session, state)
        self._touch()

    # -- events ----------------------------------------------------------------------------------
    async def on_gateway_event(self, message: GatewayEvent) -> None:
        params = message.params
        kind = params.get("type")
        if kind == "connection_lost":
            self.running, self.retry_waiting = None, None
            self.status.show(state="disconnected from the Gateway")
            await self.say(f"{params.get('text')}: restart the TUI once the Gateway is back.")
            return
        if params.get("session_id") != self.session_id:
            return
        try:
            await self._handle(kind, params)
        except GatewayGone:
            return
        self._touch()

    async def _handle(self, kind: Any, params: dict[str, Any]) -> None:
        execution = params.get("execution_id")
        if kind == "text_delta":
            self.retry_waiting = None
            await self.conversation.stream_delta(str(execution), str(params.get("text", "")))
        elif kind == "execution_state":
            await self._execution_state(str(execution), params)
        elif kind == "retry_wait":
            self.retry_waiting = str(execution)
            await self.say(
                f"Retry {params.get('attempt')}/{params.get('of')} in {params.get('delay')} s "
                f"({params.get('error')}); Esc cancels the wait."
            )
            self._show_state()
        elif kind == "tool_started":
            arguments = params.get("arguments")
            line = tool_call_line(str(params.get("name")), arguments if isinstance(arguments, dict) else {})
            await self.conversation.end_stream()
            await self.conversation.add_tool(str(params.get("call_id")), line)
        elif kind == "tool_finished":
            tool = self.conversation.tool(str(params.get("call_id")))
            if tool is not None:
                outcome = "skipped" if params.get("synthetic") else "error" if params.get("is_error") else "done"
                tool.finish(outcome)
        elif kind == "entries_appended":
            await self._entries_appended([int(i) for i in params.get("entry_ids", [])])
        elif kind == "queue_changed":
            await self.refresh_queue()
        elif kind == "notice":
            await self.say(str(params.get("text", "")))

    async def _execution_state(self, execution: str, params: dict[str, Any]) -> None:
        state = params.get("state")
        if state == "running":
            self.running = execution
            self.retry_waiting = None
        elif state == "retry_wait":
            self.running = execution
            self.retry_waiting = execution
        elif state in ENDED and execution == self.running:
            self.running, self.retry_waiting = None, None
            note = " *(interrupted)*" if state == "interrupted" else ""
            await self.conversation.end_stream(note=note)
            if state == "failed":
                await self.say(f"The response failed: {params.get('error')}")
            elif state == "interrupted":
                await self.say(f"Execution {execution} stopped; pending items are kept.")
            elif state == "suspended":
                await self.say("The agent asked a question: answer it in the editor (not yet supported here).")
        self._show_state()

    async def _entries_appended(self, ids: list[int]) -> None:
        wanted = set(ids) - self._shown_entries
        if not wanted:
            return
        page = await self.call("session.history", {"session_id": self.session_id, "limit": len(ids) + HISTORY_PAGE})
        for entry in reversed(page["items"]):
            if entry["id"] in wanted:
                await self.show_entry(entry, live=True)

    async def show_entry(self, entry: dict[str, Any], *, live: bool) -> None:
        self._shown_entries.add(int(entry["id"]))
        kind, text, data = entry["kind"], str(entry.get("text", "")), entry.get("data") or {}
        view = self.conversation
        if kind == "user":
            await view.end_stream()
            await view.add_message("user", text)
        elif kind == "assistant":
            if live and view.stream_execution is not None:
                await view.end_stream(text)
            elif text.strip():
                await view.add_message("assistant", text)
        elif kind == "tool_call":
            call_id = str(data.get("call_id", ""))
            if view.tool(call_id) is None:
                arguments = data.get("arguments")
                line = tool_call_line(str(data.get("name")), arguments if isinstance(arguments, dict) else {})
                (await view.add_tool(call_id, line)).finish("done")
        elif kind == "tool_result":
            tool = view.tool(str(data.get("call_id", "")))
            if tool is not None:
                tool.set_result(text)
        elif text.strip():
            await view.add_notice(f"[{kind}] {text}")

    # -- keys ------------------------------------------------------------------------------------
    async def on_editor_submitted(self, message: Editor.Submitted) -> None:
        text = message.text.strip()
        if not text or not self.session:
            return
        if self.busy:
            kind = "follow_up" if message.follow_up else "steering"
        else:
            kind = "prompt"
        try:
            await self.call("session.send", {"session_id": self.session_id, "text": text, "kind": kind})
        except (RpcError, GatewayGone) as exc:
            await self.say(f"Not sent: {exc}")
            return
        self.editor.clear()
        self._touch()

    async def action_recall(self) -> None:
        """Alt+Up (Q5): each pending item leaves its queue, acknowledged, before its text is used."""
        await self.recall_pending()

    async def recall_pending(self) -> list[str]:
        recalled: list[str] = []
        for item in list(self.pending.items):
            try:
                await self.call("session.queue.cancel", {"submission_id": item["id"], "version": item["version"]})
            except RpcError as exc:
                if exc.code == CONFLICT:
                    await self.say(f"«{item['text']}» was already taken by the agent: it stays where it is.")
                else:
                    await self.say(f"«{item['text']}» could not be taken back: {exc}")
                continue
            recalled.append(str(item["text"]))
        if recalled:
            draft = self.editor.text
            parts = [*recalled, draft] if draft.strip() else recalled
            self.editor.set_draft("\n\n".join(parts))
        await self.refresh_queue()
        self._touch()
        return recalled

    async def action_interrupt(self) -> None:
        """Ctrl+C (S2): stop the captured execution; pending items stay."""
        captured = self.running
        if captured is None:
            await self.say("Nothing is running. Ctrl+Q quits.")
            return
        await self.stop(captured)

    async def action_escape(self) -> None:
        waiting = self.retry_waiting
        if waiting is not None:
            result = await self.call("session.retry.cancel", {"session_id": self.session_id, "execution_id": waiting})
            if result.get("stopped"):
                await self.say(f"Retry wait of execution {waiting} cancelled; the queue is unchanged.")
            else:
                await self.say(f"Execution {waiting} was no longer waiting for a retry.")
            return
        captured = self.running
        if captured is None:
            return
        await self.recall_pending()
        await self.stop(captured)

    async def stop(self, execution: str) -> None:
        try:
            result = await self.call("session.stop", {"session_id": self.session_id, "execution_id": execution})
        except (RpcError, GatewayGone) as exc:
            await self.say(f"Could not stop execution {execution}: {exc}")
            return
        if result.get("stopped"):
            await self.say(f"Stopping execution {execution}…")
        else:
            await self.say(f"Execution {execution} had already ended: nothing stopped.")

    # -- for tests and callers that wait on the app ------------------------------------------------
    def _touch(self) -> None:
        self._changed.set()
        self._changed = asyncio.Event()

    async def wait_until(self, condition: Callable[[], bool], timeout: float = 30.0) -> None:
        """Return once ``condition()`` holds, checked after each change the app makes."""

        async def watch() -> None:
            while not condition():
                await self._changed.wait()

        await asyncio.wait_for(watch(), timeout)

    async def on_unmount(self) -> None:
        if self.client is not None:
            await self.client.close()
