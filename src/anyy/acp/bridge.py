"""The ACP agent: each ACP method becomes calls to the profile's Gateway, through :mod:`anyy.client`.

No session state is kept here. What the bridge holds is per connection and rebuilt at will: the WebSocket
to the Gateway (opened again, and the Gateway started again, when it goes away), the subscriptions that
carry the events of the sessions the editor opened, and the submissions of the prompts it is waiting on
(what ``session/cancel`` takes back). A session's history, queue, settings and running work live in the
Gateway, so a restarted editor or Gateway finds them with ``session/load``.

A prompt is a ``session.send`` followed by ``session.wait`` on its submission; the Gateway's events of the
session (text and thinking deltas, tool calls, entries) go to the editor as ``session/update``
notifications, in the order they came, all of them before the prompt's answer. An approval the turn waits
on (N2) becomes ``session/request_permission`` (once / for this session / deny); a question of the model
(``ask_user``) ends the prompt turn with the question shown, and the editor's next prompt answers it.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import uuid
from collections.abc import Callable
from typing import Any

import acp
from acp import helpers
from acp.schema import (
    AgentCapabilities,
    AllowedOutcome,
    Implementation,
    InitializeResponse,
    ListSessionsResponse,
    LoadSessionResponse,
    NewSessionResponse,
    PermissionOption,
    PromptCapabilities,
    PromptResponse,
    ResumeSessionResponse,
    SessionCapabilities,
    SessionConfigOptionSelect,
    SessionConfigSelectOption,
    SessionInfo,
    SessionListCapabilities,
    SessionResumeCapabilities,
    SetSessionConfigOptionResponse,
    ToolCallUpdate,
)

from anyy import __version__
from anyy.acp.updates import entry_updates, event_updates, tool_started, tool_title
from anyy.api import methods as m
from anyy.api.entries import EntryView, ToolCallData
from anyy.api.events import RuntimeEvent
from anyy.api.params import (
    AnswerParams,
    ApproveParams,
    CreateParams,
    ExecutionRef,
    ItemRef,
    ListParams,
    NoParams,
    PageParams,
    SendParams,
    SessionRef,
    SettingsParams,
    SubscribeParams,
    WaitParams,
)
from anyy.api.sessions import Session, SessionView, Submission
from anyy.client.aio import AsyncClient
from anyy.client.errors import CallFailed, GatewayError, GatewayUnavailable, NotFoundError
from anyy.profiles.gateway_address import Address

APPROVAL_PREFIX = "Approval needed:"  # how the Gateway words a tool's request for approval (session.approve)
WAIT_SLICE = 300.0  # seconds per session.wait
REPLY_GRACE = 10.0
HISTORY_PAGE = 500  # the most session.history gives at once
EFFORTS = ("default", "low", "medium", "high")
# A submission's states that end a prompt turn (suspended: a question or an approval waits).
SETTLED = frozenset({"completed", "suspended", "failed", "interrupted", "cleared", "cancelled", "timed_out"})
PERMISSION_OPTIONS = [
    PermissionOption(option_id="once", name="Allow once", kind="allow_once"),
    PermissionOption(option_id="session", name="Allow for this session", kind="allow_always"),
    PermissionOption(option_id="deny", name="Deny", kind="reject_once"),
]
NOT_FOUND = -32002  # ACP's "resource not found"
INVALID_PARAMS = -32602
INTERNAL = -32603

Ensure = Callable[[], Address]


def acp_error(exc: GatewayError, session_id: str | None = None) -> acp.RequestError:
    """A Gateway error as an ACP error the editor shows, with what to do."""
    if isinstance(exc, NotFoundError) and session_id is not None:
        return acp.RequestError(
            NOT_FOUND,
            f"no session {session_id!r} in this profile: it was deleted, or belongs to another profile "
            "(start `anyy acp --profile NAME` for that one); start a new session or pick one from session/list",
            {"sessionId": session_id},
        )
    if isinstance(exc, CallFailed):
        code = NOT_FOUND if isinstance(exc, NotFoundError) else INVALID_PARAMS if exc.code == -32602 else INTERNAL
        return acp.RequestError(code, exc.message)
    return acp.RequestError(INTERNAL, str(exc))


class Bridge:
    """The ACP agent of one editor connection (the ``acp.interfaces.Agent`` protocol)."""

    def __init__(self, profile_name: str, ensure: Ensure) -> None:
        self.profile_name = profile_name
        self._ensure = ensure  # the running Gateway's address, started first if none answers (blocking)
        self._client: Any = None  # the editor's side: session/update, request_permission
        self._gw: AsyncClient | None = None
        self._generation = 0  # of the connection to the Gateway
        self._connecting = asyncio.Lock()
        self._subscribed: set[str] = set()  # sessions whose events this connection forwards
        self._events: asyncio.Queue[RuntimeEvent | asyncio.Future[None]] = asyncio.Queue()
        self._forwarder: asyncio.Task[None] | None = None
        self._in_flight: dict[str, set[str]] = {}  # session -> submissions of prompts waiting here
        self._tasks: set[asyncio.Task[Any]] = set()
        self._announced: set[str] = set()  # tool calls shown to the editor and not ended yet

    # -- the Gateway ------------------------------------------------------------------------------
    def on_connect(self, conn: Any) -> None:
        self._client = conn

    async def connect(self) -> None:
        """Reach the Gateway now (starting it when none runs): ``initialize`` then answers at once."""
        await self._gateway()

    async def _gateway(self) -> AsyncClient:
        async with self._connecting:
            if self._gw is not None:
                return self._gw
            address = await asyncio.to_thread(self._ensure)
            gw = await AsyncClient.connect(address, self._on_event, self._closed_handler(), agent="anyy-acp")
            self._gw = gw
            if self._forwarder is None:
                self._forwarder = asyncio.create_task(self._forward(), name="anyy-acp-forward")
            for session_id in sorted(self._subscribed):  # a new connection: the same sessions' events
                await gw.call(m.EVENTS_SUBSCRIBE, SubscribeParams(session_id=session_id))
            return gw

    def _closed_handler(self) -> Callable[[str], None]:
        """What to do when this connection is lost: forget it (the next request reconnects)."""
        generation = self._generation = self._generation + 1

        def closed(why: str) -> None:
            if generation == self._generation:
                self._gw = None
                print(f"anyy acp: lost the Gateway ({why}); the next request reaches it again", file=sys.stderr)

        return closed

    async def call(self, method: Any, params: Any, *, timeout: float = 30.0, session_id: str | None = None) -> Any:
        """One call; the Gateway reached again once when the connection was lost (calls that create
        something carry an idempotency key, so a retry never makes a second one)."""
        for attempt in (1, 2):
            gw = await self._gateway()
            try:
                return await gw.call(method, params, timeout=timeout)
            except GatewayUnavailable as exc:
                if self._gw is gw:
                    self._gw = None
                if attempt == 2:
                    raise acp_error(exc) from None
            except GatewayError as exc:
                raise acp_error(exc, session_id) from None
        raise AssertionError("unreachable")

    async def _subscribe(self, session_id: str) -> None:
        if session_id in self._subscribed:
            return
        await self.call(m.EVENTS_SUBSCRIBE, SubscribeParams(session_id=session_id), session_id=session_id)
        self._subscribed.add(session_id)

    def _on_event(self, event: RuntimeEvent) -> None:
        if event.session_id in self._subscribed:
            self._events.put_nowait(event)

    async def _forward(self) -> None:
        while True:
            item = await self._events.get()
            if isinstance(item, asyncio.Future):
                if not item.done():
                    item.set_result(None)
                continue
            for update in event_updates(item, self._announced):
                await self._client.session_update(session_id=item.session_id, update=update)

    async def _flush(self) -> None:
        """Wait until every event received so far has gone to the editor."""
        if self._forwarder is None:
            return
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._events.put_nowait(done)
        await done

    async def close(self) -> None:
        for task in [*self._tasks, *([self._forwarder] if self._forwarder else [])]:
            task.cancel()
        if self._gw is not None:
            with contextlib.suppress(Exception):
                await self._gw.close()

    # -- initialize, sessions ----------------------------------------------------------------------
    async def initialize(self, protocol_version: int, **kwargs: Any) -> InitializeResponse:
        return InitializeResponse(
            protocol_version=acp.PROTOCOL_VERSION,
            agent_capabilities=AgentCapabilities(
                load_session=True,
                prompt_capabilities=PromptCapabilities(image=False, audio=False, embedded_context=True),
                session_capabilities=SessionCapabilities(
                    list=SessionListCapabilities(), resume=SessionResumeCapabilities()
                ),
            ),
            auth_methods=[],
            agent_info=Implementation(name="anyy", title="anyy", version=__version__),
        )

    async def authenticate(self, method_id: str, **kwargs: Any) -> None:
        raise acp.RequestError(
            INVALID_PARAMS,
            f"anyy has no authentication method {method_id!r}: provider keys are set in the profile "
            "(see `anyy doctor`)",
        )

    async def new_session(self, cwd: str, mcp_servers: Any = None, **kwargs: Any) -> NewSessionResponse:
        session: Session = await self.call(m.SESSION_CREATE, CreateParams(workspace=cwd or None))
        await self._subscribe(session.id)
        return NewSessionResponse(session_id=session.id, config_options=await self._options(session))

    async def _view(self, session_id: str) -> SessionView:
        view: SessionView = await self.call(m.SESSION_GET, SessionRef(session_id=session_id), session_id=session_id)
        return view

    async def load_session(self, cwd: str, session_id: str, **kwargs: Any) -> LoadSessionResponse:
        """The session's whole head path replayed as updates, oldest first; then, if work runs, what it
        streamed so far and its events; a queue left waiting by a restart of the Gateway is started again."""
        view = await self._view(session_id)
        entries = await self._history(session_id)
        for entry in entries:
            for update in entry_updates(entry, live=False):
                await self._client.session_update(session_id=session_id, update=update)
        await self._resume_live(session_id)
        return LoadSessionResponse(config_options=await self._options(view.session))

    async def resume_session(self, cwd: str, session_id: str, **kwargs: Any) -> ResumeSessionResponse:
        view = await self._view(session_id)
        await self._resume_live(session_id)
        return ResumeSessionResponse(config_options=await self._options(view.session))

    async def _resume_live(self, session_id: str) -> None:
        await self._subscribe(session_id)
        view = await self._view(session_id)
        if view.running_execution is not None and view.live_text:
            await self._client.session_update(
                session_id=session_id, update=helpers.update_agent_message_text(view.live_text)
            )
        if view.running_execution is None and view.waiting_question is None and view.blocked is None:
            pending: list[Submission] = await self.call(m.QUEUE_LIST, SessionRef(session_id=session_id))
            if pending:  # accepted before a restart, never run: it runs now, once (the queue keeps it once)
                await self.call(m.SESSION_CONTINUE, SessionRef(session_id=session_id))
                task = asyncio.create_task(self._settle(session_id, pending[0].id))
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)

    async def _history(self, session_id: str) -> list[EntryView]:
        entries: list[EntryView] = []
        cursor: str | None = None
        while True:
            page = await self.call(
                m.SESSION_HISTORY,
                PageParams(session_id=session_id, limit=HISTORY_PAGE, cursor=cursor),
                session_id=session_id,
            )
            entries.extend(page.items)
            cursor = page.next_cursor
            if cursor is None:
                break
        entries.reverse()
        return entries

    async def list_sessions(self, cwd: str | None = None, cursor: str | None = None, **kwargs: Any) -> Any:
        page = await self.call(m.SESSION_LIST, ListParams(kind="chat", cursor=cursor))
        sessions = [
            SessionInfo(
                session_id=s.id,
                cwd=s.workspace or "",
                title=s.title or None,
                updated_at=_iso(s.updated_at),
            )
            for s in page.items
            if cwd is None or s.workspace == cwd
        ]
        return ListSessionsResponse(sessions=sessions, next_cursor=page.next_cursor)

    async def close_session(self, session_id: str, **kwargs: Any) -> None:
        self._subscribed.discard(session_id)  # the session itself stays, as every anyy session does

    # -- model and effort ----------------------------------------------------------------------------
    async def _options(self, session: Session) -> list[Any]:
        models = await self.call(m.MODELS_LIST, NoParams())
        values = [f"{p.name}/{model}" for p in models.providers for model in p.models]
        current = f"{session.provider}/{session.model}"
        if current not in values:
            values.insert(0, current)
        effort = session.effort or "default"
        return [
            SessionConfigOptionSelect(
                id="model",
                name="Model",
                category="model",
                type="select",
                current_value=current,
                options=[SessionConfigSelectOption(value=v, name=v) for v in values],
            ),
            SessionConfigOptionSelect(
                id="effort",
                name="Effort",
                category="thought_level",
                type="select",
                current_value=effort if effort in EFFORTS else "default",
                options=[SessionConfigSelectOption(value=v, name=v) for v in EFFORTS],
            ),
        ]

    async def set_config_option(
        self, config_id: str, session_id: str, value: str | bool, **kwargs: Any
    ) -> SetSessionConfigOptionResponse:
        settings = SettingsParams(session_id=session_id)
        if config_id == "model" and isinstance(value, str) and "/" in value:
            settings.provider, settings.model = value.split("/", 1)
        elif config_id == "effort" and value in EFFORTS:
            settings.effort = "" if value == "default" else str(value)
        else:
            raise acp.RequestError(
                INVALID_PARAMS,
                f"no option {config_id!r} with value {value!r}: the options are model (provider/model) and "
                f"effort ({', '.join(EFFORTS)})",
            )
        session = await self.call(m.SESSION_SETTINGS, settings, session_id=session_id)
        return SetSessionConfigOptionResponse(config_options=await self._options(session))

    # -- prompts ------------------------------------------------------------------------------------
    async def prompt(self, session_id: str, prompt: list[Any], **kwargs: Any) -> PromptResponse:
        text = prompt_text(prompt)
        view = await self._view(session_id)
        await self._subscribe(session_id)
        waiting = view.waiting_question
        if waiting is not None and not waiting.question.startswith(APPROVAL_PREFIX):
            # the model asked a question: this prompt is the person's answer
            params = AnswerParams(session_id=session_id, execution_id=waiting.execution_id, text=text)
            await self.call(m.SESSION_ANSWER, params, session_id=session_id)
            execution = await self.call(
                m.SESSION_EXECUTION, ExecutionRef(session_id=session_id, execution_id=waiting.execution_id)
            )
            submission_id = execution.submission_ids[0]
        else:
            send = SendParams(session_id=session_id, text=text, idempotency_key=str(uuid.uuid4()))
            submission_id = (await self.call(m.SESSION_SEND, send, session_id=session_id)).id
        mine = self._in_flight.setdefault(session_id, set())
        mine.add(submission_id)
        try:
            final = await self._settle(session_id, submission_id)
        finally:
            mine.discard(submission_id)
        await self._flush()
        if final.state in {"failed", "timed_out"}:
            why = final.error or "no reason given"
            raise acp.RequestError(INTERNAL, f"the turn {final.state.replace('_', ' ')}: {why}")
        if final.state in {"completed", "suspended"}:
            return PromptResponse(stop_reason="end_turn")
        return PromptResponse(stop_reason="cancelled")

    async def _settle(self, session_id: str, submission_id: str) -> Submission:
        """Wait for the submission's outcome, asking the editor for each approval the turn waits on."""
        while True:
            params = WaitParams(submission_id=submission_id, timeout=WAIT_SLICE)
            submission: Submission = await self.call(m.SESSION_WAIT, params, timeout=WAIT_SLICE + REPLY_GRACE)
            if submission.state not in SETTLED:
                continue
            if submission.state != "suspended":
                return submission
            view = await self._view(session_id)
            waiting = view.waiting_question
            if waiting is None:
                continue  # answered meanwhile (another client): the turn goes on
            if not waiting.question.startswith(APPROVAL_PREFIX):
                return submission
            await self._flush()  # the editor has the tool call before it is asked about it
            decision = await self._ask_permission(session_id, waiting.question)
            params_ = ApproveParams(session_id=session_id, execution_id=waiting.execution_id, decision=decision)
            with contextlib.suppress(acp.RequestError):  # already decided elsewhere, or stopped
                await self.call(m.SESSION_APPROVE, params_, session_id=session_id)

    async def _ask_permission(self, session_id: str, question: str) -> Any:
        call = await self._pending_call(session_id)
        if call is not None and call.call_id not in self._announced:  # shown before it is asked about
            self._announced.add(call.call_id)
            await self._client.session_update(
                session_id=session_id, update=tool_started(call.call_id, call.name, call.arguments)
            )
        described = question.removeprefix(APPROVAL_PREFIX).strip()
        tool_call = ToolCallUpdate(
            tool_call_id=call.call_id if call else f"approval-{uuid.uuid4().hex[:8]}",
            title=tool_title(call.name, call.arguments) if call else described,
            raw_input=call.arguments if call else None,
            content=[helpers.tool_content(helpers.text_block(described))],
        )
        answer = await self._client.request_permission(
            session_id=session_id, tool_call=tool_call, options=PERMISSION_OPTIONS
        )
        outcome = answer.outcome
        if isinstance(outcome, AllowedOutcome) and outcome.option_id in ("once", "session", "deny"):
            return outcome.option_id
        return "deny"  # cancelled, or an option we never offered

    async def _pending_call(self, session_id: str) -> ToolCallData | None:
        page = await self.call(m.SESSION_HISTORY, PageParams(session_id=session_id, limit=20), session_id=session_id)
        for entry in page.items:
            if isinstance(entry.data, ToolCallData):
                return entry.data
        return None

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        """Stop the execution running now (the one captured here, never a later one) and take the
        prompts this connection still waits on out of the queue."""
        with contextlib.suppress(acp.RequestError):
            view = await self._view(session_id)
            if view.running_execution is not None:
                ref = ExecutionRef(session_id=session_id, execution_id=view.running_execution)
                await self.call(m.SESSION_STOP, ref, session_id=session_id)
        for submission_id in list(self._in_flight.get(session_id, ())):
            with contextlib.suppress(acp.RequestError):  # taken already: the stop above ended it
                await self.call(m.QUEUE_CANCEL, ItemRef(submission_id=submission_id))

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        raise acp.RequestError.method_not_found(method)

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        return None


def prompt_text(blocks: list[Any]) -> str:
    """The prompt's text: text blocks as they are, an embedded text resource as a fenced block with its
    URI, a link as its URI. Images and audio are refused (the capabilities say so)."""
    parts: list[str] = []
    for block in blocks:
        kind = getattr(block, "type", "")
        if kind == "text":
            parts.append(block.text)
        elif kind == "resource":
            resource = block.resource
            text = getattr(resource, "text", None)
            if text is None:
                raise acp.RequestError(
                    INVALID_PARAMS, f"the resource {resource.uri} has no text: anyy acp takes text resources only"
                )
            parts.append(f"{resource.uri}:\n```\n{text}\n```")
        elif kind == "resource_link":
            parts.append(block.uri)
        else:
            raise acp.RequestError(
                INVALID_PARAMS, f"anyy acp does not take {kind or 'unknown'} content yet: send text or text resources"
            )
    text = "\n\n".join(p for p in parts if p)
    if not text.strip():
        raise acp.RequestError(INVALID_PARAMS, "the prompt is empty: send some text")
    return text


def _iso(timestamp: float) -> str:
    import datetime

    return datetime.datetime.fromtimestamp(timestamp, tz=datetime.UTC).isoformat()
