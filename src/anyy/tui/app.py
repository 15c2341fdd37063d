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

Commands typed alone in the editor (SPEC B2, T1, T2, M1, X2) are :mod:`anyy.tui.commands`; the
Gateway's events go to the part that owns what they change (:mod:`anyy.tui.routes`); what the session
is doing lives in one :class:`SessionState` whose fields the widgets watch.

Every stop names the execution captured when the key was pressed, so a late stop can never hit a
later turn (the Gateway ignores a stop whose execution already ended).

Resilience: when the connection drops (the Gateway stopped or restarted), the editor's draft and the
last queue view stay as they are, the status line says "reconnecting…", and the app tries again with
a growing delay, reading the profile's ``gateway.json`` before each try (a restarted Gateway has a new
port and token). Once connected it redraws the session from the Gateway's state and subscribes again.
"""

from __future__ import annotations

import contextlib
import gc
import time
import uuid
from typing import Any, ClassVar, TypeVar, overload

import msgspec
from textual import events, on
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.css.query import NoMatches

from anyy.api import methods as m
from anyy.api.methods import MethodSpec
from anyy.api.params import (
    AnswerParams,
    ApproveParams,
    ExecutionRef,
    ItemRef,
    Params,
    SendParams,
    SessionRef,
    SubscribeParams,
    UnsubscribeParams,
)
from anyy.api.sessions import Session, SessionView, SubmissionKind
from anyy.client.errors import CallFailed, ConflictError, GatewayError
from anyy.client.gateway import Locator, address_locator
from anyy.client.protocol import Method
from anyy.domain.errors import AnyyError
from anyy.profiles.gateway_address import Address
from anyy.profiles.home import anyy_home
from anyy.profiles.profile import Profile, get_profile
from anyy.tui.attachments import AttachmentsBar
from anyy.tui.commands import Commands
from anyy.tui.completion import CommandHint
from anyy.tui.conversation import ConversationView
from anyy.tui.draft import DRAFT_ID, creation, draft_session, is_draft
from anyy.tui.editor import Editor
from anyy.tui.history import ASK_USER, HISTORY_PAGE, History
from anyy.tui.keys import NO_ALT_ENTER, read_alt_enter, tmux_advice
from anyy.tui.link import ConnectionLost, GatewayEvent, GatewayLink
from anyy.tui.pending import PendingQueue
from anyy.tui.question import QuestionPrompt, decision, is_approval
from anyy.tui.retry import RetryCountdown
from anyy.tui.routes import EventRoutes
from anyy.tui.screens import COMMANDS
from anyy.tui.state import ContextFill, SessionState, Spend, Waiting
from anyy.tui.status import StatusLine
from anyy.tui.tool_activity import ToolActivity

P = TypeVar("P", bound=Params)
R = TypeVar("R")
RECONNECTING = "reconnecting…"


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
        profile: Profile | None = None,
        workspace: str | None = None,
    ) -> None:
        super().__init__()
        self.workspace = workspace  # a new session's (W1): the directory the TUI was started in, or --cwd
        self.alt_enter = read_alt_enter()  # ESC CR (tmux, xterm) is Alt+Enter, not Enter
        self.link = GatewayLink(address, locate or address_locator(address.profile), self.post_message)
        self.requested_session = session_id
        self.role = role
        self.start_note = note
        self.state = SessionState()
        self.failure: str | None = None  # why the app could not open its session
        self.history_page = history_page
        self.subscription: str | None = None
        self.first_paint_at: float | None = None  # perf_counter() of the first frame after opening
        self.routes = EventRoutes(self)
        self.commands = Commands(self)
        self.profile = profile or get_profile(anyy_home(), address.profile)  # its roles and defaults (drafts)
        self.draft_defaults: Session | None = None  # a draft as first shown: the profile's model settings

    # -- layout ----------------------------------------------------------------------------------
    history: History  # made with the widgets it fills

    def compose(self) -> ComposeResult:
        conversation = ConversationView()
        self.history = History(self.call, conversation, self.state, self.history_page)
        yield conversation
        yield RetryCountdown(self.state)
        yield PendingQueue(self.state)
        yield QuestionPrompt(self.state)
        yield AttachmentsBar(self.state)
        yield CommandHint(COMMANDS)
        yield Editor(COMMANDS)
        yield StatusLine(self.state)

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
    def address(self) -> Address:
        """Where the Gateway is (a restarted one has a new port and token)."""
        return self.link.address

    @property
    def session_id(self) -> str:
        return self.state.session_id

    @property
    def busy(self) -> bool:
        return self.state.busy

    # -- start -----------------------------------------------------------------------------------
    async def on_mount(self) -> None:
        self.editor.focus()
        try:
            await self._open()
        except AnyyError as exc:  # no Gateway, an unknown session or role
            self.failure = str(exc)
            self.exit()
        self.call_after_refresh(self._painted)

    def _painted(self) -> None:
        self.first_paint_at = time.perf_counter()
        # What exists now (modules, the opened screen) lives as long as the app: out of the collector's
        # full passes, which otherwise take 20-30 ms each while an answer streams (docs/benchmarks.md).
        # Garbage is collected first, so that none of it is kept for good.
        gc.collect()
        gc.freeze()

    async def _open(self) -> None:
        await self.link.connect(self.address)
        if self.start_note:
            await self.say(self.start_note)
        advice = tmux_advice()
        if not self.alt_enter:
            await self.say(NO_ALT_ENTER)
        if advice:
            await self.say(advice)
        if self.requested_session is None:
            await self.open_draft()
        else:
            view = await self.call(m.SESSION_GET, SessionRef(session_id=self.requested_session))
            await self.open_session(view.session)
        self.state.link = None

    async def open_draft(self) -> None:
        """A new session, shown but not created until its first message (U1): :mod:`anyy.tui.draft`."""
        draft, budget = draft_session(self.profile, self.role, self.workspace)
        await self._unsubscribe()
        self.draft_defaults = draft
        self.state.session = draft
        self.state.forget_work()
        self.state.queue, self.state.usage, self.state.context = [], None, ContextFill(None, budget)
        self.state.spend = Spend()
        self.history.reset(DRAFT_ID)
        await self.conversation.show_first_hint()

    @property
    def drafting(self) -> bool:
        return is_draft(self.state.session)

    def first_send(self, params: SendParams) -> SendParams:
        """A draft's first send (U1): ``session.send`` creates the session with its role and model choices
        and takes the message at once, or, refused, creates nothing (the draft stays as it is)."""
        draft = self.state.session
        assert draft is not None
        new = creation(draft, self.draft_defaults or draft)
        return msgspec.structs.replace(params, session_id=None, new=new)

    async def follow_created(self, session_id: str) -> None:
        """Show the session the first send made in place of the draft: its events from now on, and what
        happened before they were followed (its history, its running execution)."""
        made = await self.call(m.SESSION_GET, SessionRef(session_id=session_id))
        await self.conversation.clear()
        await self.open_session(made.session)

    async def _unsubscribe(self) -> None:
        if self.subscription is not None:
            with contextlib.suppress(GatewayError):
                await self.call(m.EVENTS_UNSUBSCRIBE, UnsubscribeParams(subscription=self.subscription))
            self.subscription = None

    async def open_session(self, session: Session) -> None:
        """Show ``session``: subscribe to its events, then read it (``session.get``: nothing falls between
        the two) and show its latest page of history, its queue, how full its context is, what runs now
        (the streamed text, the tool calls started), the question it waits on and a retry wait."""
        await self._unsubscribe()
        self.state.session = session
        self.state.forget_work()
        subscribed = await self.call(m.EVENTS_SUBSCRIBE, SubscribeParams(session_id=session.id))
        self.subscription = subscribed.subscription
        live = await self.call(m.SESSION_GET, SessionRef(session_id=session.id))
        self.state.session = live.session  # as it is now, a rename made meanwhile included
        await self.show_history(live)
        await self._show_running(live)
        self.state.waiting = live.waiting_question
        if live.retry_wait is not None:  # opened (or reconnected) during a retry wait: its countdown, from what is left
            self.state.retrying = live.retry_wait.execution_id
            self.state.retry = live.retry_wait
        await self.refresh_queue()

    async def _show_running(self, live: SessionView) -> None:
        """The execution running as the session opens: what it streamed, then the tool calls it started."""
        running = live.running_execution
        if not running:
            return
        self.state.running = running
        if live.live_text:
            await self.conversation.stream_delta(running, live.live_text)
        tools = [tool for tool in live.running_tools if tool.name != ASK_USER]  # a question says itself
        conversation = self.conversation
        if tools:
            await conversation.end_stream()  # as a live tool_started does: the calls come after the text
        for tool in tools:
            await conversation.tool_started(tool.call_id, tool.name, tool.arguments, parent=tool.parent_call_id)

    async def switch_session(self, session: Session) -> None:
        """Show another session in place of this one (``/sessions``)."""
        await self.conversation.clear()
        await self.open_session(session)

    async def show_history(self, live: SessionView) -> None:
        """From scratch: how full the context is (``live``: ``session.get``), the newest page of history."""
        self.state.usage = None
        self.state.spend = Spend()
        self.state.context = ContextFill(live.context_tokens, live.context_budget)
        self.history.reset(self.session_id)
        await self.history.open(self.size.width, self.size.height)
        if not self.history.shown:
            await self.conversation.show_first_hint()

    # -- talking to the Gateway ------------------------------------------------------------------
    @overload
    async def call(self, method: MethodSpec[P, R], params: P) -> R: ...
    @overload
    async def call(self, method: str, params: Any = None) -> Any: ...
    async def call(self, method: Method, params: Any = None) -> Any:
        return await self.link.call(method, params)

    async def say(self, text: str) -> None:
        """A line for the user in the conversation (not recorded in the session)."""
        await self.conversation.add_notice(text)

    async def refresh_queue(self) -> None:
        if self.drafting:
            return  # nothing sent yet: nothing queued
        self.state.queue = await self.call(m.QUEUE_LIST, SessionRef(session_id=self.session_id))

    # -- resilience ------------------------------------------------------------------------------
    async def on_connection_lost(self, message: ConnectionLost) -> None:
        """Keep the draft and the queue view; say so, and reconnect in the background."""
        self.state.forget_work()
        self.state.link = RECONNECTING
        self.subscription = None
        await self.conversation.end_stream(note=" *(connection lost)*")
        await self.say(f"{message.why}; reconnecting (the draft and the queue view are kept).")
        self.run_worker(self._reconnect(), name="anyy-reconnect", group="reconnect", exclusive=True)

    async def _reconnect(self) -> None:
        def waiting(delay: float) -> None:
            self.state.link = f"{RECONNECTING} (next try in {delay:.1f} s)"

        refused = await self.link.reconnect(self._reopen, waiting)
        self.state.link = None
        if refused is not None:
            await self.say(
                f"Reconnected to the Gateway, but session {self.session_id} could not be reopened: {refused}"
            )
        else:
            await self.say(f"Reconnected to the Gateway at {self.address.url}.")

    async def _reopen(self) -> None:
        if self.drafting:
            return  # nothing to reopen: the draft is created by its first message, on this connection
        view = await self.call(m.SESSION_GET, SessionRef(session_id=self.session_id))
        await self.switch_session(view.session)

    # -- events ----------------------------------------------------------------------------------
    async def on_gateway_event(self, message: GatewayEvent) -> None:
        event = message.event
        if getattr(event, "session_id", None) != self.session_id or not self.is_running:
            return
        try:
            await self.routes.route(event)  # events carry what they change: no request to the Gateway here
        except NoMatches:
            if self.is_running:
                raise
            # else the app closed while the event was handled: its widgets are gone

    # -- keys ------------------------------------------------------------------------------------
    async def on_editor_submitted(self, message: Editor.Submitted) -> None:
        text = message.text.strip()
        if not text or self.state.session is None:
            return
        if text.startswith("/") and "\n" not in text:
            await self.commands.run(text)
            return
        waiting = self.state.waiting
        if waiting is not None and not message.follow_up and not self.busy:
            await self.answer(waiting, text)
            return
        kind: SubmissionKind = "prompt"
        if self.busy or waiting is not None:
            kind = "follow_up" if message.follow_up else "steering"
        first = self.drafting
        files = self.state.attachments
        # A key of its own (D8): a send retried after a lost reply is never queued twice.
        params = SendParams(
            session_id=self.session_id, text=text, kind=kind, attachments=files, idempotency_key=uuid.uuid4().hex
        )
        if first:
            params = self.first_send(params)
        try:
            sent = await self.call(m.SESSION_SEND, params)
        except GatewayError as exc:
            await self.say(f"Not sent (the draft and the attached files are kept): {exc}")
            return
        self.editor.clear()
        self.state.attachments = []
        if first:
            await self.follow_created(sent.session_id)

    async def answer(self, waiting: Waiting, text: str) -> None:
        """Enter while a question waits: the editor's text is its answer (``session.answer``), not a message;
        for a tool's approval, o, s or d (``session.approve``)."""
        try:
            if is_approval(waiting):
                chosen = decision(text)
                if chosen is None:
                    await self.say("Approval: type o (once), s (for this session) or d (deny), then Enter.")
                    return
                await self.call(
                    m.SESSION_APPROVE,
                    ApproveParams(session_id=self.session_id, execution_id=waiting.execution_id, decision=chosen),
                )
            else:
                params = AnswerParams(session_id=self.session_id, execution_id=waiting.execution_id, text=text)
                await self.call(m.SESSION_ANSWER, params)
        except GatewayError as exc:
            await self.say(f"Not answered (the draft is kept): {exc}")
            if isinstance(exc, ConflictError):  # answered elsewhere, or stopped
                self.state.waiting = None
            return
        self.state.waiting = None
        self.editor.clear()

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
        except GatewayError as exc:
            await self.say(f"Older messages could not be read: {exc}")

    def on_tool_activity_toggled(self, message: ToolActivity.Toggled) -> None:
        if message.by_mouse:
            self.editor.focus()  # a click shows or folds; typing still goes to the editor

    def on_tool_activity_left(self, message: ToolActivity.Left) -> None:
        self.editor.focus()

    @on(Editor.Changed, "#editor")
    def follow_command(self, message: Editor.Changed) -> None:
        """The commands matching what is typed, above the editor."""
        self.query_one(CommandHint).follow(self.editor.text)

    def on_key(self, event: events.Key) -> None:
        """A character typed while a tool activity has the focus goes to the editor, focused again: typing
        is never lost."""
        if len(self.screen_stack) > 1 or self.focused is self.editor or not event.is_printable:
            return
        if event.character and event.key != "space":
            event.stop()
            self.editor.focus()
            self.editor.insert(event.character)

    async def action_tree(self) -> None:
        await self.commands.tree("")

    async def action_recall(self) -> None:
        """Alt+Up (Q5): each pending item leaves its queue, acknowledged, before its text and its attachments
        are used."""
        await self.recall_pending()

    async def recall_pending(self) -> list[str]:
        recalled: list[str] = []
        for item in list(self.pending.items):
            try:
                await self.call(m.QUEUE_CANCEL, ItemRef(submission_id=item.id, version=item.version))
            except ConflictError:
                await self.say(f"«{item.text}» was already taken by the agent: it stays where it is.")
                continue
            except CallFailed as exc:
                await self.say(f"«{item.text}» could not be taken back: {exc}")
                continue
            recalled.append(item.text)
            if item.attachments:  # Q5: the files come back with the text, listed above the editor again
                self.state.attachments = [*self.state.attachments, *item.attachments]
        if recalled:
            draft = self.editor.text
            parts = [*recalled, draft] if draft.strip() else recalled
            self.editor.set_draft("\n\n".join(parts))
        await self.refresh_queue()
        return recalled

    async def action_interrupt(self) -> None:
        """Ctrl+C (S2): stop the captured execution (or the one waiting for an answer); pending items stay."""
        waiting = self.state.waiting
        captured = self.state.running or (waiting.execution_id if waiting is not None else None)
        if captured is None:
            await self.say("Nothing is running. Ctrl+Q quits.")
            return
        await self.stop(captured)

    async def action_escape(self) -> None:
        waiting = self.state.retrying
        if waiting is not None:
            result = await self.call(
                m.SESSION_RETRY_CANCEL, ExecutionRef(session_id=self.session_id, execution_id=waiting)
            )
            if result.stopped:
                await self.say("Retry wait cancelled; the queue is unchanged.")
            else:
                await self.say("The response was no longer waiting for a retry.")
            return
        captured = self.state.running
        if captured is None:
            return
        await self.recall_pending()
        await self.stop(captured)

    async def stop(self, execution: str) -> None:
        try:
            result = await self.call(m.SESSION_STOP, ExecutionRef(session_id=self.session_id, execution_id=execution))
        except GatewayError as exc:
            await self.say(f"Could not stop the response: {exc}")
            return
        if result.stopped:
            await self.say("Stopping the response…")
        else:
            await self.say("The response had already ended: nothing stopped.")

    async def on_unmount(self) -> None:
        await self.link.close()
