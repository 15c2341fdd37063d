"""The TUI application: one session of the profile's Gateway, driven only through its JSON-RPC API.

What the keys do (SPEC Q4, Q5, S2-S6):

- Enter: idle, sends the editor's text; busy, adds it as steering. Alt+Enter: a follow-up while busy.
- Alt+Up: every pending item back into the editor before the draft; each item is taken out of the
  queue with ``session.queue.cancel`` and its text used only once the Gateway acknowledged it.
- Ctrl+C: stops the execution this client saw running (``session.stop`` with that id); queues kept.
- Esc: during a retry wait, cancels only the wait (``session.retry.cancel``); while working, brings
  the pending items back into the editor, then stops the captured execution. Screens above the main
  one (pickers) take Esc first.
- Ctrl+T: the session's tree, like ``/tree`` (the editor's draft stays where it is).
- PageUp / PageDown: scroll the conversation; PageUp at its top shows the previous page of history.
- A question the agent asked (``ask_user``) is shown above the editor: Enter then answers it
  (``session.answer``) rather than sending a message; Ctrl+C stops its execution instead.
- Tab / Shift+Tab reach the tool activity in the conversation: Enter (or a click) shows a long result
  whole (with what a Codemode script's calls returned), or folds it again.

Commands typed alone in the editor (SPEC B2, T1, T2, M1, X2): ``/new``, ``/sessions``, ``/tree``,
``/provider``, ``/model``, ``/effort``, ``/help``. ``/sessions`` and ``/tree`` need an idle session.

Every stop names the execution captured when the key was pressed, so a late stop can never hit a
later turn (the Gateway ignores a stop whose execution already ended).

Resilience: when the connection drops (the Gateway stopped or restarted), the editor's draft and the
last queue view stay as they are, the status line says "reconnecting…", and the app tries again with
a growing delay, reading the profile's ``gateway.json`` before each try (a restarted Gateway has a new
port and token). Once connected it redraws the session from the Gateway's state and subscribes again.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import gc
import time
from collections.abc import Awaitable, Callable
from typing import Any, ClassVar

from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.css.query import NoMatches
from textual.message import Message

from anyy.profiles import anyy_home, get_profile
from anyy.profiles.gateway_address import Address, read_address
from anyy.tui import settings
from anyy.tui.client import GatewayClient, GatewayGone
from anyy.tui.conversation import ConversationView
from anyy.tui.editor import Editor
from anyy.tui.history import ASK_USER, HISTORY_PAGE, History, tool_outcome
from anyy.tui.pending import PendingQueue
from anyy.tui.question import QuestionPrompt, Waiting
from anyy.tui.retry import RetryCountdown
from anyy.tui.screens import COMMANDS, ConfirmScreen, HelpScreen, SessionPicker, TreeChoice, TreeScreen
from anyy.tui.status import StatusLine
from anyy.tui.tool_activity import ToolActivity
from commons.jsonrpc import CONFLICT, RpcError

WAIT_OR_STOP = "{command}: wait for the response to finish, or stop it (Ctrl+C) first."
ANSWER_OR_STOP = "{command}: answer the agent's question first, or stop its execution (Ctrl+C)."
RECONNECT_FIRST_DELAY = 0.1
RECONNECT_MAX_DELAY = 5.0
RECONNECTING = "reconnecting…"
ENDED = frozenset({"completed", "failed", "interrupted", "timed_out", "suspended", "cancelled"})


class GatewayEvent(Message):
    def __init__(self, params: dict[str, Any]) -> None:
        super().__init__()
        self.params = params


Locator = Callable[[], Address | None]


def address_locator(profile_name: str) -> Locator:
    """Reads the named profile's ``gateway.json`` under the anyy home (``$ANYY_HOME``) at each call."""

    def locate() -> Address | None:
        return read_address(get_profile(anyy_home(), profile_name))

    return locate


class AnyyApp(App[None]):
    TITLE = "anyy"
    CSS = "Screen { layout: vertical; }"
    AUTO_FOCUS = "#editor"  # focused straight away: not the conversation first (its blur restyles every message)
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+c", "interrupt", "Stop", priority=True),
        Binding("alt+up", "recall", "Pending back to the editor", priority=True),
        Binding("escape", "escape", "Stop / cancel the retry", show=False),
        Binding("ctrl+t", "tree", "Tree"),
    ]

    def __init__(
        self,
        address: Address,
        *,
        session_id: str | None = None,
        role: str | None = None,
        note: str | None = None,
        locate: Locator | None = None,
        history_page: int = HISTORY_PAGE,
    ) -> None:
        super().__init__()
        self.address = address
        self.locate = locate if locate is not None else address_locator(address.profile)
        self.requested_session = session_id
        self.role = role
        self.start_note = note
        self.client: GatewayClient | None = None
        self.session: dict[str, Any] = {}
        self.running: str | None = None  # the execution seen running, captured by stops
        self.retry_waiting: str | None = None
        self.failure: str | None = None  # why the app could not open its session
        self.notices: list[str] = []
        self.history_page = history_page
        self.subscription: str | None = None
        self._changed = asyncio.Event()
        self._generation = 0  # which connection events belong to: a replaced one's are dropped
        self.reconnecting = False
        self.reconnect_attempts = 0
        self.reconnections = 0
        self.first_paint_at: float | None = None  # perf_counter() of the first frame after opening

    # -- layout ----------------------------------------------------------------------------------
    history: History  # made with the widgets it fills

    def compose(self) -> ComposeResult:
        conversation, status = ConversationView(), StatusLine()
        self.history = History(self.call, conversation, status, self.history_page)
        yield conversation
        yield RetryCountdown(self.touch)
        yield PendingQueue()
        yield QuestionPrompt()
        yield Editor()
        yield status

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
    def retry(self) -> RetryCountdown:
        return self.query_one(RetryCountdown)

    @property
    def question(self) -> QuestionPrompt:
        return self.query_one(QuestionPrompt)

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
        self.call_after_refresh(self._painted)
        self.touch()

    def _painted(self) -> None:
        self.first_paint_at = time.perf_counter()
        # What exists now (modules, the opened screen) lives as long as the app: out of the collector's
        # full passes, which otherwise take 20-30 ms each while an answer streams (docs/benchmarks.md).
        # Garbage is collected first, so that none of it is kept for good.
        gc.collect()
        gc.freeze()
        self.touch()

    async def _open(self) -> None:
        self.client = await self._connect(self.address)
        if self.start_note:
            await self.say(self.start_note)
        if self.requested_session is None:
            params = {} if self.role is None else {"role": self.role}
            await self.open_session(await self.call("session.create", params), live=None)
        else:
            view = await self.call("session.get", {"session_id": self.requested_session})
            await self.open_session(view["session"], live=view)

    async def open_session(self, session: dict[str, Any], live: dict[str, Any] | None) -> None:
        """Show ``session``: subscribe to its events, then its latest page of history, its queue, how full
        its context is, the question it waits on and a retry wait in progress (``live``, its
        ``session.get``, read here if None)."""
        if self.subscription is not None:
            with contextlib.suppress(RpcError):
                await self.call("events.unsubscribe", {"subscription": self.subscription})
        self.session = session
        self._forget_work()
        self.subscription = (await self.call("events.subscribe", {"session_id": self.session_id}))["subscription"]
        if live is None:
            live = await self.call("session.get", {"session_id": self.session_id})
        await self.show_history(live)
        if live.get("running_execution"):
            self.running = str(live["running_execution"])
            if live.get("live_text"):
                await self.conversation.stream_delta(self.running, str(live["live_text"]))
        waiting = Waiting.parse(live.get("waiting_question"))
        if waiting is not None:
            self.question.ask(waiting)
        retry = live.get("retry_wait")
        if isinstance(retry, dict):  # opened (or reconnected) during a retry wait: its countdown, from what is left
            self.retry_waiting = str(retry["execution_id"])
            self.retry.start(
                self.retry_waiting,
                delay=float(retry.get("seconds_left") or 0),
                attempt=int(retry.get("attempt") or 0),
                of=int(retry.get("of") or 0),
                error=str(retry.get("error") or ""),
            )
        await self.refresh_queue()
        self.show_state()

    async def switch_session(self, session: dict[str, Any], live: dict[str, Any] | None) -> None:
        """Show another session in place of this one (``/new``, ``/sessions``)."""
        await self.conversation.clear()
        await self.open_session(session, live)

    async def show_history(self, live: dict[str, Any]) -> None:
        """From scratch: how full the context is (``live``: ``session.get``), the newest page of history."""
        self.status.clear_usage()
        self.status.show_context(live.get("context_tokens"), int(live.get("context_budget") or 0))
        self.history.reset(self.session_id)
        await self.history.open(self.size.width, self.size.height)

    def _forget_work(self) -> None:
        """Nothing seen running, waiting for a retry or for an answer (until the Gateway says so again)."""
        self.running, self.retry_waiting = None, None
        self.retry.stop()
        self.question.clear()

    # -- talking to the Gateway ------------------------------------------------------------------
    async def _connect(self, address: Address) -> GatewayClient:
        self._generation += 1
        generation = self._generation

        def post(params: dict[str, Any]) -> None:
            if generation == self._generation:
                self.post_message(GatewayEvent(params))

        return await GatewayClient.connect(address, post)

    # -- resilience ------------------------------------------------------------------------------
    async def _connection_lost(self, text: str) -> None:
        """Keep the draft and the queue view; say so, and reconnect in the background."""
        self._forget_work()
        self.subscription = None
        await self.conversation.end_stream(note=" *(connection lost)*")
        await self.say(f"{text}; reconnecting (the draft and the queue view are kept).")
        self.reconnecting = True
        self.status.show(state=RECONNECTING)
        self.touch()
        self.run_worker(self._reconnect(), name="anyy-reconnect", group="reconnect", exclusive=True)

    async def _reconnect(self) -> None:
        delay = RECONNECT_FIRST_DELAY
        while True:
            self.reconnect_attempts += 1
            if await self._try_reconnect():
                return
            self.status.show(state=f"{RECONNECTING} (next try in {delay:.1f} s)")
            self.touch()
            await asyncio.sleep(delay)  # backoff between tries
            delay = min(delay * 2, RECONNECT_MAX_DELAY)

    async def _try_reconnect(self) -> bool:
        """One try: True once connected and redrawn (or when there is nothing left to redraw)."""
        address = self.locate()
        if address is None:
            return False
        old = self.client
        try:
            self.client = await self._connect(address)
        except GatewayGone:
            return False
        if old is not None:
            with contextlib.suppress(Exception):
                await old.close()
        self.address = address
        try:
            view = await self.call("session.get", {"session_id": self.session_id})
            await self.switch_session(view["session"], live=view)
        except GatewayGone:
            return False
        except RpcError as exc:
            self.reconnecting = False
            await self.say(f"Reconnected to the Gateway, but session {self.session_id} could not be reopened: {exc}")
            self.show_state()
            return True
        self.reconnecting = False
        self.reconnections += 1
        await self.say(f"Reconnected to the Gateway at {address.url}.")
        self.show_state()
        return True

    async def call(self, method: str, params: dict[str, Any] | None = None) -> Any:
        if self.client is None:
            raise GatewayGone("not connected to the Gateway")
        return await self.client.call(method, params)

    async def say(self, text: str) -> None:
        """A line for the user in the conversation (not recorded in the session)."""
        self.notices.append(text)
        await self.conversation.add_notice(text)
        self.touch()

    async def refresh_queue(self) -> None:
        items = await self.call("session.queue.list", {"session_id": self.session_id})
        self.pending.show(items)

    def show_state(self) -> None:
        waiting = self.question.waiting
        if self.retry_waiting is not None:
            state = f"retry wait ({self.retry_waiting}) · Esc cancels the wait"
        elif self.running is not None:
            state = f"working ({self.running}) · Ctrl+C stops"
        elif waiting is not None:
            state = "waiting for your answer"
        else:
            state = "idle"
        self.status.show(self.session, state)
        self.touch()

    # -- events ----------------------------------------------------------------------------------
    async def on_gateway_event(self, message: GatewayEvent) -> None:
        params = message.params
        kind = params.get("type")
        if kind == "connection_lost":
            await self._connection_lost(str(params.get("text")))
            return
        if params.get("session_id") != self.session_id or not self.is_running:
            return
        try:
            await self._handle(kind, params)
        except GatewayGone:
            return
        except RpcError as exc:  # e.g. the session was deleted by another client meanwhile: say it, go on
            await self.say(f"The Gateway refused a request made for a {kind} event: {exc}")
            return
        except NoMatches:
            if self.is_running:
                raise
            return  # the app closed while the event was handled: its widgets are gone
        self.touch()

    async def _handle(self, kind: Any, params: dict[str, Any]) -> None:
        execution = params.get("execution_id")
        if kind == "text_delta":
            self.retry_waiting = None
            self.retry.stop()
            await self.conversation.stream_delta(str(execution), str(params.get("text", "")))
        elif kind == "execution_state":
            await self._execution_state(str(execution), params)
        elif kind == "retry_wait":
            self.retry_waiting = str(execution)
            self.retry.start(
                str(execution),
                delay=float(params.get("delay") or 0),
                attempt=int(params.get("attempt") or 0),
                of=int(params.get("of") or 0),
                error=str(params.get("error") or ""),
            )
            await self.say(f"The model call failed ({params.get('error')}): retry {params.get('attempt')}.")
            self.show_state()
        elif kind == "tool_started" and params.get("name") != ASK_USER:  # the question entry says it
            arguments = params.get("arguments")
            await self.conversation.end_stream()
            name, call_id = str(params.get("name")), str(params.get("call_id"))
            parent = str(params.get("parent_call_id") or "")
            await self.conversation.tool_started(
                call_id, name, arguments if isinstance(arguments, dict) else {}, parent=parent
            )
        elif kind == "tool_finished":
            call_id, parent = str(params.get("call_id")), str(params.get("parent_call_id") or "")
            self.conversation.tool_finished(
                call_id, tool_outcome(params), is_error=bool(params.get("is_error")), parent=parent
            )
        elif kind == "entries_appended":
            await self.history.appended([int(i) for i in params.get("entry_ids", [])])
        elif kind == "queue_changed":
            await self.refresh_queue()
        elif kind == "notice":
            await self.say(str(params.get("text", "")))

    async def _execution_state(self, execution: str, params: dict[str, Any]) -> None:
        state = params.get("state")
        if state != "retry_wait" and self.retry.execution == execution:
            self.retry.stop()
        asked = self.question.waiting
        if state != "suspended" and asked is not None and asked.execution_id == execution:
            self.question.clear()
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
        elif state == "interrupted" and asked is not None and asked.execution_id == execution:
            await self.say(f"Execution {execution} stopped; its question is left unanswered.")
        if state == "suspended":
            await self._show_question()
        self.show_state()

    async def _show_question(self) -> None:
        """The question the suspended execution waits on, above the editor (``session.get`` says which)."""
        view = await self.call("session.get", {"session_id": self.session_id})
        waiting = Waiting.parse(view.get("waiting_question"))
        if waiting is not None:
            self.question.ask(waiting)

    # -- keys ------------------------------------------------------------------------------------
    async def on_editor_submitted(self, message: Editor.Submitted) -> None:
        text = message.text.strip()
        if not text or not self.session:
            return
        if text.startswith("/") and "\n" not in text:
            await self.run_command(text)
            return
        waiting = self.question.waiting
        if waiting is not None and not message.follow_up and not self.busy:
            await self.answer(waiting, text)
            return
        if self.busy or waiting is not None:
            kind = "follow_up" if message.follow_up else "steering"
        else:
            kind = "prompt"
        try:
            await self.call("session.send", {"session_id": self.session_id, "text": text, "kind": kind})
        except (RpcError, GatewayGone) as exc:
            await self.say(f"Not sent: {exc}")
            return
        self.editor.clear()
        self.touch()

    async def answer(self, waiting: Waiting, text: str) -> None:
        """Enter while a question waits: the editor's text is its answer (``session.answer``), not a message."""
        params = {"session_id": self.session_id, "execution_id": waiting.execution_id, "text": text}
        try:
            await self.call("session.answer", params)
        except (RpcError, GatewayGone) as exc:
            await self.say(f"Not answered (the draft is kept): {exc}")
            if isinstance(exc, RpcError) and exc.code == CONFLICT:  # answered elsewhere, or stopped
                self.question.clear()
                self.show_state()
            return
        self.question.clear()
        self.editor.clear()
        self.show_state()

    def action_conversation_page(self, direction: str) -> None:
        """PageUp / PageDown in the editor scroll the conversation (PageUp at its top: older history)."""
        if direction == "up":
            self.conversation.page_up()
        else:
            self.conversation.scroll_page_down(animate=False)

    async def on_conversation_view_older_wanted(self) -> None:
        try:
            if not await self.history.older():
                await self.say("This is the start of the conversation.")
        except (RpcError, GatewayGone) as exc:
            await self.say(f"Older messages could not be read: {exc}")
        self.touch()

    def on_conversation_view_older_shown(self) -> None:
        self.touch()

    def on_tool_activity_toggled(self, message: ToolActivity.Toggled) -> None:
        if message.by_mouse:
            self.editor.focus()  # a click shows or folds; typing still goes to the editor
        self.touch()

    # -- commands --------------------------------------------------------------------------------
    async def run_command(self, line: str) -> None:
        name, _, argument = line.partition(" ")
        handlers: dict[str, Callable[[str], Awaitable[None]]] = {
            "/new": self.command_new,
            "/help": self.command_help,
            "/sessions": self.command_sessions,
            "/tree": self.command_tree,
            "/provider": functools.partial(settings.command_provider, self),
            "/model": functools.partial(settings.command_model, self),
            "/effort": functools.partial(settings.command_effort, self),
        }
        handler = handlers.get(name)
        if handler is None:
            await self.say(f"Unknown command {name}; known: {', '.join(COMMANDS)} (/help explains them).")
            return
        self.editor.clear()
        try:
            await handler(argument.strip())
        except (RpcError, GatewayGone) as exc:
            await self.say(f"{name} failed: {exc}")
        self.touch()

    async def command_new(self, argument: str) -> None:
        params = {} if self.role is None else {"role": self.role}
        await self.switch_session(await self.call("session.create", params), live=None)
        await self.say(f"New session {self.session_id}.")

    async def command_help(self, argument: str) -> None:
        await self.push_screen(HelpScreen(), lambda _: self.touch())

    async def command_sessions(self, argument: str) -> None:
        if self.busy:
            await self.say(WAIT_OR_STOP.format(command="/sessions"))
            return
        await self.push_screen(SessionPicker(self.call, self.touch), self.session_chosen)

    async def session_chosen(self, session_id: str | None) -> None:
        if session_id is not None and session_id != self.session_id:
            try:
                view = await self.call("session.get", {"session_id": session_id})
                await self.switch_session(view["session"], live=view)
            except (RpcError, GatewayGone) as exc:
                await self.say(f"Could not open session {session_id}: {exc}")
        self.touch()

    async def action_tree(self) -> None:
        await self.command_tree("")

    async def command_tree(self, argument: str) -> None:
        if self.busy:
            await self.say(WAIT_OR_STOP.format(command="/tree"))
            return
        if self.question.waiting is not None:
            await self.say(ANSWER_OR_STOP.format(command="/tree"))
            return
        tree = await self.call("session.tree", {"session_id": self.session_id})
        await self.push_screen(TreeScreen(tree), self.tree_chosen)

    async def tree_chosen(self, choice: TreeChoice | None) -> None:
        if choice is None:
            self.touch()
            return
        if choice.node.get("kind") == "user" and self.editor.text.strip():
            question = (
                "The editor holds a draft: moving before this message puts the message's text in the "
                "editor in its place. Replace the draft?"
            )

            async def answered(yes: bool | None) -> None:
                if yes:
                    await self.navigate(choice)
                else:
                    await self.say("Nothing moved; the draft is kept.")

            await self.push_screen(ConfirmScreen(question), answered)
            self.touch()
            return
        await self.navigate(choice)

    async def navigate(self, choice: TreeChoice) -> None:
        """T2: a user message moves to just before it, its text into the editor; any other entry is the head."""
        node = choice.node
        before = node.get("kind") == "user"
        params = {
            "session_id": self.session_id,
            "entry_id": node["id"],
            "summarize": choice.summarize,
            "before": before,
        }
        try:
            result = await self.call("session.navigate", params)
        except (RpcError, GatewayGone) as exc:
            await self.say(f"Could not move in the tree: {exc}")
            return
        self.session = result["session"]
        await self.conversation.clear()
        await self.show_history(await self.call("session.get", {"session_id": self.session_id}))
        if result.get("draft") is not None:
            self.editor.set_draft(str(result["draft"]))
        where = "before that message (its text is in the editor)" if before else f"to entry {node['id']}"
        summary = ""
        if choice.summarize:
            summary = "; the branch left is summarized" if result.get("summary_applied") else "; no summary was made"
        await self.say(f"Moved {where}{summary}.")
        if result.get("note"):
            await self.say(str(result["note"]))
        self.show_state()

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
        self.touch()
        return recalled

    async def action_interrupt(self) -> None:
        """Ctrl+C (S2): stop the captured execution (or the one waiting for an answer); pending items stay."""
        waiting = self.question.waiting
        captured = self.running or (waiting.execution_id if waiting is not None else None)
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
    def on_text_area_changed(self) -> None:
        self.touch()  # the editor's text changed (a key typed while nothing else happens)

    def touch(self) -> None:
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
