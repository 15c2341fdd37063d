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
import gc
import time
from collections.abc import Awaitable, Callable
from typing import Any, ClassVar

from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.message import Message

from anyy.profiles import anyy_home, get_profile
from anyy.profiles.gateway_address import Address, read_address
from anyy.tui.client import GatewayClient, GatewayGone
from anyy.tui.conversation import ConversationView, tool_call_line
from anyy.tui.editor import Editor
from anyy.tui.pending import PendingQueue
from anyy.tui.screens import COMMANDS, ChoiceScreen, ConfirmScreen, HelpScreen, SessionPicker, TreeChoice, TreeScreen
from anyy.tui.status import StatusLine
from commons.jsonrpc import CONFLICT, RpcError

HISTORY_PAGE = 50
EFFORTS = [("default", "default (the provider chooses)"), ("low", "low"), ("medium", "medium"), ("high", "high")]
WAIT_OR_STOP = "{command}: wait for the response to finish, or stop it (Ctrl+C) first."
RECONNECT_FIRST_DELAY = 0.1
RECONNECT_MAX_DELAY = 5.0
RECONNECTING = "reconnecting…"
ENDED = frozenset({"completed", "failed", "interrupted", "timed_out", "suspended", "cancelled"})


class GatewayEvent(Message):
    def __init__(self, params: dict[str, Any]) -> None:
        super().__init__()
        self.params = params


Locator = Callable[[], Address | None]


def screenful(entries: list[dict[str, Any]], width: int, height: int) -> int:
    """How many of ``entries`` (newest first) fill a ``height``-row screen, by a rough count of their rows.

    Those are shown as Textual Markdown; older ones as Rich's Markdown, much cheaper to mount and lay out
    (docs/benchmarks.md, TUI), and alike but for details (spacing in lists, the look of code)."""
    rows = 0
    for count, entry in enumerate(entries):
        if rows >= height:
            return count
        rows += 1  # the margin below
        if entry.get("kind") in ("user", "assistant"):
            lines = str(entry.get("text", "")).splitlines() or [""]
            rows += sum(1 + len(line) // max(width - 4, 20) for line in lines)
        else:
            rows += 1
    return len(entries)


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
        self.history_cursor: str | None = None
        self.subscription: str | None = None
        self._shown_entries: set[int] = set()
        self._changed = asyncio.Event()
        self._generation = 0  # which connection events belong to: a replaced one's are dropped
        self.reconnecting = False
        self.reconnect_attempts = 0
        self.reconnections = 0
        self.first_paint_at: float | None = None  # perf_counter() of the first frame after opening

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
        self.call_after_refresh(self._painted)
        self._touch()

    def _painted(self) -> None:
        self.first_paint_at = time.perf_counter()
        # What exists now (modules, the opened screen) lives as long as the app: out of the collector's
        # full passes, which otherwise take 20-30 ms each while an answer streams (docs/benchmarks.md).
        # Garbage is collected first, so that none of it is kept for good.
        gc.collect()
        gc.freeze()
        self._touch()

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
        """Show ``session``: subscribe to its events, then its latest page of history and its queue."""
        if self.subscription is not None:
            with contextlib.suppress(RpcError):
                await self.call("events.unsubscribe", {"subscription": self.subscription})
        self.session = session
        self.running, self.retry_waiting = None, None
        self.subscription = (await self.call("events.subscribe", {"session_id": self.session_id}))["subscription"]
        await self.show_history()
        if live is not None and live.get("running_execution"):
            self.running = str(live["running_execution"])
            if live.get("live_text"):
                await self.conversation.stream_delta(self.running, str(live["live_text"]))
        await self.refresh_queue()
        self._show_state()

    async def switch_session(self, session: dict[str, Any], live: dict[str, Any] | None) -> None:
        """Show another session in place of this one (``/new``, ``/sessions``)."""
        await self.conversation.clear()
        self._shown_entries.clear()
        await self.open_session(session, live)

    async def show_history(self) -> None:
        page = await self.call("session.history", {"session_id": self.session_id, "limit": HISTORY_PAGE})
        self.history_cursor = page.get("next_cursor")
        async with self.conversation.batch():
            if self.history_cursor:
                await self.say("Older messages are not shown (PageUp at the top loads them: not yet).")
            items = page["items"]  # newest first
            rich = screenful(items, self.size.width, self.size.height)
            for age in reversed(range(len(items))):
                await self.show_entry(items[age], live=False, rich=age < rich)

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
        self.running, self.retry_waiting = None, None
        self.subscription = None
        await self.conversation.end_stream(note=" *(connection lost)*")
        await self.say(f"{text}; reconnecting (the draft and the queue view are kept).")
        self.reconnecting = True
        self.status.show(state=RECONNECTING)
        self._touch()
        self.run_worker(self._reconnect(), name="anyy-reconnect", group="reconnect", exclusive=True)

    async def _reconnect(self) -> None:
        delay = RECONNECT_FIRST_DELAY
        while True:
            self.reconnect_attempts += 1
            if await self._try_reconnect():
                return
            self.status.show(state=f"{RECONNECTING} (next try in {delay:.1f} s)")
            self._touch()
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
            self._show_state()
            return True
        self.reconnecting = False
        self.reconnections += 1
        await self.say(f"Reconnected to the Gateway at {address.url}.")
        self._show_state()
        return True

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
            await self._connection_lost(str(params.get("text")))
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

    async def show_entry(self, entry: dict[str, Any], *, live: bool, rich: bool = True) -> None:
        self._shown_entries.add(int(entry["id"]))
        kind, text, data = entry["kind"], str(entry.get("text", "")), entry.get("data") or {}
        view = self.conversation
        if kind == "user":
            await view.end_stream()
            await view.add_message("user", text, rich=rich)
        elif kind == "assistant":
            if live and view.stream_execution is not None:
                await view.end_stream(text)
            elif text.strip():
                await view.add_message("assistant", text, rich=rich)
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
        if text.startswith("/") and "\n" not in text:
            await self.run_command(text)
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

    # -- commands --------------------------------------------------------------------------------
    async def run_command(self, line: str) -> None:
        name, _, argument = line.partition(" ")
        handlers: dict[str, Callable[[str], Awaitable[None]]] = {
            "/new": self.command_new,
            "/help": self.command_help,
            "/sessions": self.command_sessions,
            "/tree": self.command_tree,
            "/provider": self.command_provider,
            "/model": self.command_model,
            "/effort": self.command_effort,
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
        self._touch()

    async def command_new(self, argument: str) -> None:
        params = {} if self.role is None else {"role": self.role}
        await self.switch_session(await self.call("session.create", params), live=None)
        await self.say(f"New session {self.session_id}.")

    async def command_help(self, argument: str) -> None:
        await self.push_screen(HelpScreen(), lambda _: self._touch())

    async def command_sessions(self, argument: str) -> None:
        if self.busy:
            await self.say(WAIT_OR_STOP.format(command="/sessions"))
            return
        await self.push_screen(SessionPicker(self.call, self._touch), self.session_chosen)

    async def session_chosen(self, session_id: str | None) -> None:
        if session_id is not None and session_id != self.session_id:
            try:
                view = await self.call("session.get", {"session_id": session_id})
                await self.switch_session(view["session"], live=view)
            except (RpcError, GatewayGone) as exc:
                await self.say(f"Could not open session {session_id}: {exc}")
        self._touch()

    async def action_tree(self) -> None:
        await self.command_tree("")

    async def command_tree(self, argument: str) -> None:
        if self.busy:
            await self.say(WAIT_OR_STOP.format(command="/tree"))
            return
        tree = await self.call("session.tree", {"session_id": self.session_id})
        await self.push_screen(TreeScreen(tree), self.tree_chosen)

    async def tree_chosen(self, choice: TreeChoice | None) -> None:
        if choice is None:
            self._touch()
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
            self._touch()
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
        self._shown_entries.clear()
        await self.show_history()
        if result.get("draft") is not None:
            self.editor.set_draft(str(result["draft"]))
        where = "before that message (its text is in the editor)" if before else f"to entry {node['id']}"
        summary = ""
        if choice.summarize:
            summary = "; the branch left is summarized" if result.get("summary_applied") else "; no summary was made"
        await self.say(f"Moved {where}{summary}.")
        if result.get("note"):
            await self.say(str(result["note"]))
        self._show_state()

    async def command_provider(self, argument: str) -> None:
        catalog = await self.call("models.list", {})
        providers = {str(p["name"]): [str(m) for m in p.get("models", [])] for p in catalog.get("providers", [])}

        async def chosen(name: str | None) -> None:
            if name is None:
                self._touch()
                return
            models = providers.get(name, [])
            model = None if not models or self.session.get("model") in models else models[0]
            await self.apply_settings(provider=name, model=model)

        if argument:
            await chosen(argument)
            return
        choices = [(name, name + (f" ({', '.join(models)})" if models else "")) for name, models in providers.items()]
        await self.push_screen(ChoiceScreen("Provider for this session", choices, self.session.get("provider")), chosen)

    async def command_model(self, argument: str) -> None:
        if argument:
            await self.apply_settings(model=argument)
            return
        catalog = await self.call("models.list", {})
        provider = str(self.session.get("provider", ""))
        choices: list[tuple[str, str]] = []
        for entry in catalog.get("providers", []):
            if entry["name"] == provider:
                choices += [(f"{provider}\t{m}", str(m)) for m in entry.get("models", [])]
        choices += [
            (f"alias\t{a['name']}", f"{a['name']} → {a['provider']}/{a['model']}") for a in catalog.get("aliases", [])
        ]
        if not choices:
            await self.say(f"Provider {provider} lists no models: type /model NAME.")
            return

        async def chosen(value: str | None) -> None:
            if value is None:
                self._touch()
                return
            provider_name, _, model = value.partition("\t")
            await self.apply_settings(provider=provider_name, model=model)

        current = f"{provider}\t{self.session.get('model', '')}"
        await self.push_screen(ChoiceScreen("Model for this session", choices, current), chosen)

    async def command_effort(self, argument: str) -> None:
        async def chosen(value: str | None) -> None:
            if value is None:
                self._touch()
                return
            await self.apply_settings(effort="" if value == "default" else value)

        if argument:
            await chosen(argument)
            return
        current = str(self.session.get("effort") or "default")
        await self.push_screen(ChoiceScreen("Reasoning effort for this session", EFFORTS, current), chosen)

    async def apply_settings(
        self, *, provider: str | None = None, model: str | None = None, effort: str | None = None
    ) -> None:
        """M1: ``session.settings`` changes this session only; other sessions keep theirs."""
        params: dict[str, Any] = {"session_id": self.session_id}
        for key, value in (("provider", provider), ("model", model), ("effort", effort)):
            if value is not None:
                params[key] = value
        try:
            self.session = await self.call("session.settings", params)
        except (RpcError, GatewayGone) as exc:
            await self.say(f"Not changed: {exc}")
            return
        s = self.session
        effort_text = f" ({s['effort']})" if s.get("effort") else ""
        await self.say(f"This session now uses {s['provider']}/{s['model']}{effort_text}; other sessions keep theirs.")
        self._show_state()

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
    def on_text_area_changed(self) -> None:
        self._touch()  # the editor's text changed (a key typed while nothing else happens)

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
