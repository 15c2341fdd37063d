"""One execution: passes of (model call + the tool calls it asked for), with checkpoints in between.

The rules (docs/design.md, "The runtime's rules") as this module applies them:

- **Checkpoints** come before each model call and before each tool call of a batch. Steering is read
  there: a batch's calls that have not started when steering arrives get a recorded synthetic result,
  and the steering text joins the context before the next model call. A running tool is never cancelled
  for steering.
- **Stop** is bound to this execution (``request_stop``): it cancels the model stream or the running
  tool, gives every started call a result, records partial text as interrupted, and ends the execution
  as ``interrupted``. It never starts anything.
- **Retries** (R3): a transient error waits 2, 4, 8… s (its own state, ``retry_wait``, which can be
  cancelled alone) and tries the pass again, at most ``max_retries`` times; the count starts afresh after
  a pass succeeds. A context overflow compacts once, then tries again.
- **Clarification**: a tool outcome with ``suspend`` (ask_user) records the question and suspends the
  execution; ``answer`` records the answer as that call's result and the execution goes on.
- Each pass's entries are recorded in one transaction, so a killed Gateway never leaves half a pass.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import functools
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import msgspec

from anyy.api.events import (
    Notice,
    RetryWaiting,
    TextDeltaEvent,
    ThinkingDeltaEvent,
    ToolFinished,
    ToolStarted,
)
from anyy.domain import queue as queue_rules
from anyy.domain.budgets import BudgetScope, Exhausted, scopes_for, warning_text, worst_output_tokens
from anyy.domain.compaction import unresolved_calls
from anyy.domain.context import ModelContext
from anyy.domain.entries import (
    INNER_RESULT_CHARS,
    AnswerData,
    AssistantData,
    Entry,
    EntryKind,
    InnerCall,
    NewEntry,
    NoticeData,
    QuestionData,
    Reasoning,
    ToolCallData,
    ToolResultData,
    Usage,
)
from anyy.domain.errors import AnyyError, StorageFull, StoreUnavailable
from anyy.domain.model_io import (
    Message,
    ModelRequest,
    ProviderEvent,
    ReasoningEvent,
    StopEvent,
    StopReason,
    TextDelta,
    ThinkingDelta,
    ToolCallEvent,
    UsageEvent,
)
from anyy.domain.queue import FINAL_EXECUTION_STATES, Execution, Submission
from anyy.domain.sessions import Session, SessionPatch
from anyy.providers.base import ProviderError
from anyy.runtime.announce import Announcer, question_in
from anyy.runtime.clock import retry_delay
from anyy.runtime.compactor import Compactor
from anyy.runtime.deps import CallTool, Deps, ToolSet
from anyy.runtime.failures import failure_notice, record_failure
from anyy.runtime.file_captures import PassCaptures
from anyy.runtime.stream_keeper import StreamKeeper, answer_saver
from anyy.runtime.tool_watch import ToolWatch
from anyy.runtime.user_hooks import Verdict, decide, system_with_context, with_context
from anyy.runtime.workspaces import workspace_problem
from anyy.storage.ownership import LeaseLost
from anyy.storage.protocol import SessionStore
from anyy.tools.approvals import Verdict as RuleVerdict
from anyy.tools.approvals import denied_by_user, gate
from anyy.tools.base import ToolContext, ToolOutcome
from anyy.tools.mcp_servers import missing_servers_text

T = TypeVar("T")
log = logging.getLogger("anyy.runtime")

SKIPPED_FOR_STEERING = "Not run: the user sent a steering message before this call started."
NOT_RUN_STOPPED = "Not run: the user stopped the response before this call started."
STOPPED_WHILE_RUNNING = "Stopped: the user stopped the response while this call was running."


class Outcome(enum.Enum):
    DONE = "completed"
    SUSPENDED = "suspended"
    INTERRUPTED = "interrupted"
    FAILED = "failed"
    TIMED_OUT = "timed_out"
    BUDGET = "budget_exhausted"  # a budget is spent (Y2): the queue waits for more


class PassEnd(enum.Enum):
    MORE = "more"  # the model gets tool results: another pass
    ENDED = "ended"  # no tool call: the response ended (steering left over still gets a pass)


@dataclass(frozen=True)
class EndState:
    """An end the execution reached but could not write (D1): the store refused it (a full disk). The
    actor keeps the session blocked on it and writes it again until the store takes it."""

    state: str
    error: str | None
    note: str | None
    cause: str  # why the write failed, for people


# States that end the run: once one is reached, in memory and on disk must agree before anything else starts.
ENDING_STATES = FINAL_EXECUTION_STATES | {"suspended"}


def unwritable(exc: BaseException) -> bool:
    """The store could not write (a full disk, an I/O error, no connection), as opposed to refusing the request."""
    return isinstance(exc, StorageFull | StoreUnavailable) or (
        isinstance(exc, Exception) and not isinstance(exc, AnyyError)
    )


class StoreOutage(Exception):
    """The store stayed unreachable for longer than a running execution holds its writes (P7)."""

    def __init__(self, seconds: float, cause: StoreUnavailable) -> None:
        super().__init__(f"the session store was unreachable for {seconds:.0f} s")
        self.seconds = seconds
        self.cause = cause


OUTAGE_RETRY_FIRST = 0.25  # seconds before a held write is tried again; doubles, up to the next
OUTAGE_RETRY_MAX = 2.0


class _Stopped(Exception):
    """The awaited step was cancelled by a stop of this execution (not by a shutdown)."""


@dataclass
class StreamResult:
    text: str = ""
    # The thinking deltas, joined once (``thinking``): += on an attribute copies the whole text per delta.
    thought: list[str] = field(default_factory=list)
    reasoning: list[Reasoning] = field(default_factory=list)  # whole blocks to hand back with the calls
    calls: list[ToolCallEvent] = field(default_factory=list)
    usage: Usage | None = None
    cost: int | None = None  # nano-dollars (Y1); None: unpriced, or no usage reported
    stop: StopReason | None = None
    raw_stop: str = ""

    @property
    def thinking(self) -> str:
        return "".join(self.thought)


@dataclass
class PassPlan:
    """A model response's calls and what became of them, in the order they are recorded."""

    results: dict[str, tuple[str, bool, bool]] = field(default_factory=dict)  # call_id → text, error, synthetic
    inner: dict[str, list[InnerCall]] = field(default_factory=dict)  # call_id → a Codemode script's calls
    question: tuple[str, str] | None = None  # (call_id, question) when ask_user suspended the execution
    waiting: tuple[str, str] | None = None  # (call_id, note) when a delegate call waits for its children (K2)


class ExecutionRun:
    def __init__(
        self,
        deps: Deps,
        session_id: str,
        execution_id: str,
        *,
        release_when_done: bool = False,
        first: Checkpoint | Exception | None = None,
        inputs: Sequence[Entry] = (),
    ) -> None:
        self.deps = deps
        # The user's hooks (N6): messages not yet shown to the submission hooks, what they added for the
        # model, notices waiting to be recorded with the pass, whether session_start was looked at.
        self._hook_inputs = list(inputs)
        self._hook_context: list[str] = []
        self._hook_notes: list[NewEntry] = []
        self._session_hooked = not inputs  # a resumed run (an answer, a delegated result) started before
        self._first = first  # the first checkpoint, read (or failed) in the unit of work that started it
        self.session_id = session_id
        self.execution_id = execution_id
        self.stop_requested = False
        self.stop_state = Outcome.INTERRUPTED
        self.stop_note: str | None = None  # why, when not the user (a Gateway stopping)
        self.retry_cancelled = False
        self._retry_early = False  # retry_now() ended the wait: go on with the retry
        self.state = "running"
        self._pieces: list[str] = []  # what the model has streamed so far in this pass (see partial_text)
        self.running_tools: dict[str, ToolStarted] = {}  # started and not finished, by call id, oldest first
        self.retry_wait: tuple[RetryWaiting, float] | None = None  # the wait now, and when it ends (clock time)
        self.finished = asyncio.Event()  # set once the execution settled (the actor is done with it)
        self.question: Entry | None = None  # the question entry, while suspended on it
        self.approved_once: dict[str, str] = {}  # call id -> the request the user approved once (N2)
        self.granted: set[str] = set()  # what the user approved for the session (session.tools["approved"])
        self.queue_was_empty = False
        self.pending_at_end: list[Submission] | None = None  # the queue as its completion left it (same unit)
        # Completed with nothing pending, the session's lease goes back in the record's unit of work (the
        # actor would release it next, writing nothing in between): ``released`` once it did.
        self.release_when_done = release_when_done
        self.released = False
        self.unsettled: EndState | None = None  # the end reached but not written (D1)
        self.taken_over = False  # its lease was lost (another Gateway took the session over): it wrote nothing more
        self._servers_noted: set[str] = set()  # the MCP servers last said to be missing (N1)
        self._exhausted: Exhausted | None = None  # the budget that stopped this execution (Y2)
        self._budget_held = False  # a hold for the call in flight is in the store
        self._budget_warned: set[str] = set()  # budgets already warned about in this execution
        self._unpriced_noted = False
        self._fallback_noted = False  # nothing was pending when it completed: the actor need not look again
        self._awaiting: asyncio.Task[Any] | None = None
        self._ready: tuple[ModelContext, Sequence[Message]] | None = None  # the checkpoint's context, as messages
        self._retry_wait: asyncio.Task[Any] | None = None
        self.workspace: Path | None = None  # the session's, as the last checkpoint found it (W1)
        self._compactor = Compactor(deps)
        self._announce = Announcer(deps)
        self._outage_since: float | None = None  # when the store stopped answering this execution's writes
        self._gave_up = False  # held past the bound once: the end is written without holding again

    @property
    def partial_text(self) -> str:
        """What the model has streamed so far in this pass (for clients that join late)."""
        return "".join(self._pieces)

    # -- control from outside (bound to this execution only) -------------------------------------
    def request_stop(self, state: Outcome = Outcome.INTERRUPTED, *, note: str | None = None) -> None:
        if self.stop_requested:
            return
        self.stop_requested = True
        self.stop_state = state
        self.stop_note = note
        if self._awaiting is not None and not self._awaiting.done():
            self._awaiting.cancel()

    def cancel_retry_wait(self) -> bool:
        """Cancel only the wait before a retry (S4); False when the execution is not waiting."""
        if self._retry_wait is None or self._retry_wait.done():
            return False
        self.retry_cancelled = True
        self._retry_wait.cancel()
        return True

    def retry_now(self) -> bool:
        """End the wait before a retry early: the retry starts at once; False when the execution is not
        waiting."""
        if self._retry_wait is None or self._retry_wait.done():
            return False
        self._retry_early = True
        self._retry_wait.cancel()
        return True

    # -- helpers ---------------------------------------------------------------------------------
    async def _store(self, fn: Callable[[SessionStore], T]) -> T:
        """A unit of work of this execution. While the store cannot be reached (a database restarting, a
        lost connection), the unit is held and tried again, for at most the profile's ``outage_hold``
        seconds from the outage's start (P7): a short outage costs the response a pause, nothing more.
        Beyond it, :class:`StoreOutage` ends the response, and later writes are not held again."""
        delay = OUTAGE_RETRY_FIRST
        while True:
            try:
                result = await self.deps.owner.call(fn)
            except StoreUnavailable as exc:
                now = self.deps.clock.now()
                if self._outage_since is None:
                    self._outage_since = now
                    log.warning("execution %s waits for the session store: %s", self.execution_id, exc)
                waited = now - self._outage_since
                if self._gave_up or exc.applied is None or waited >= self.deps.settings.outage_hold:
                    self._gave_up = True
                    raise StoreOutage(max(waited, 1.0), exc) from exc
                await self.deps.clock.sleep(min(delay, self.deps.settings.outage_hold - waited))
                delay = min(delay * 2, OUTAGE_RETRY_MAX)
                continue
            if self._outage_since is not None:
                log.info("execution %s: the session store answers again", self.execution_id)
                self._outage_since = None
            return result

    async def _cancellable(self, awaitable: Awaitable[T], *, retry_wait: bool = False) -> T:
        """Await a step that a stop (or a retry cancel) may cut short; raises _Stopped when it did."""
        if self.stop_requested:
            raise _Stopped
        task: asyncio.Task[T] = asyncio.ensure_future(awaitable)
        self._awaiting = task
        if retry_wait:
            self._retry_wait = task
        try:
            return await task
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if task.cancelled() and (current is None or current.cancelling() == 0):
                raise _Stopped from None
            raise
        finally:
            self._awaiting = None
            if retry_wait:
                self._retry_wait = None

    async def _set_state(
        self,
        state: str,
        *,
        error: str | None = None,
        note: str | None = None,
        question: Entry | None = None,
        retryable: bool = False,
    ) -> None:
        if state == "failed":  # a durable notice first, so a client reading the history then finds it
            notice = failure_notice(self.execution_id, error or "no error recorded", retryable=retryable)
            self._appended(await self._store(lambda s: record_failure(s, self.session_id, notice)))
        self.state = state
        self.question = question  # what it waits on, once suspended
        try:
            execution = await self._store(
                lambda s: s.set_execution_state(self.execution_id, state, error=error, note=note)  # type: ignore[arg-type]
            )
        except Exception as exc:
            if state not in ENDING_STATES or not unwritable(exc):
                raise
            # The run ends here all the same; the actor holds the session until this end is on disk (D1).
            self.unsettled = EndState(state=state, error=error, note=note, cause=str(exc) or type(exc).__name__)
            return
        self._announce.execution(execution, error=error, note=note, question=question)

    def _appended(self, entries: list[Entry]) -> None:
        self._announce.entries(self.session_id, entries)

    # -- the loop --------------------------------------------------------------------------------
    async def run(self) -> Outcome:
        """Run passes until the response ends, is stopped, fails or waits for an answer."""
        watchdog = None
        timeout = self.deps.settings.execution_timeout
        if timeout is not None:
            watchdog = asyncio.create_task(self._watchdog(timeout))
        try:
            outcome = await self._loop()
        except StoreOutage as exc:  # neither the model nor this Gateway failed: it ends, resumable (P7)
            log.warning("execution %s ended: %s", self.execution_id, exc)
            await self._set_state("interrupted", note=f"{exc}; what was recorded before is kept")
            return Outcome.INTERRUPTED
        except ProviderError as exc:
            outcome = Outcome.FAILED
            await self._set_state(
                "failed",
                error=f"{exc.message} ({exc.kind} error from the model provider)",
                retryable=exc.kind == "transient",
            )
            return outcome
        except LeaseLost:  # taken over: the new owner recovers it; a failure written here would be refused
            raise
        except AnyyError as exc:  # e.g. the session's model is no longer configured
            await self._set_state("failed", error=str(exc))
            return Outcome.FAILED
        except Exception as exc:  # an unexpected fault ends this execution, never the Gateway
            await self._set_state("failed", error=f"internal error: {type(exc).__name__}: {exc}")
            raise
        finally:
            if watchdog is not None:
                watchdog.cancel()
            self._hook_end()
            await self._release_budget()  # a call that failed or was stopped holds nothing any more (Y2)
        return outcome

    async def _watchdog(self, timeout: float) -> None:
        await self.deps.clock.sleep(timeout)
        self.request_stop(Outcome.TIMED_OUT)

    async def _finish_stopped(self) -> Outcome:
        if self.retry_cancelled and not self.stop_requested:
            await self._set_state("interrupted", note="the retry wait was cancelled; nothing more was sent")
            return Outcome.INTERRUPTED
        state = self.stop_state
        note = "stopped by the user" if state is Outcome.INTERRUPTED else "the execution ran out of time"
        note = self.stop_note or note
        await self._set_state(state.value, note=note)
        return state

    async def _loop(self) -> Outcome:
        passes = 0
        while True:
            if self.stop_requested:
                return await self._finish_stopped()
            session, context = await self._checkpoint()
            problem = self._enter_workspace(session)
            if problem is not None:  # never a silent fallback to another folder (W1)
                await self._set_state("failed", error=problem)
                return Outcome.FAILED
            try:
                blocked = await self._hooks_before_pass(session)
            except _Stopped:
                return await self._finish_stopped()
            if blocked is not None:
                await self._set_state("failed", error=blocked)
                return Outcome.FAILED
            passes += 1
            if passes > self.deps.settings.max_passes:
                await self._set_state("failed", error=f"gave up after {self.deps.settings.max_passes} model calls")
                return Outcome.FAILED
            try:
                end = await self._one_pass(session, context)
            except _Stopped:  # a stop during an automatic compaction
                return await self._finish_stopped()
            if isinstance(end, Outcome):
                return end

    async def _checkpoint(self) -> tuple[Session, ModelContext]:
        """The checkpoint before a model call: take steering (one or all, per the session's mode) into
        the conversation, then read what the model will see. One unit of work on the store (for the first
        one, usually the start's: ``first``)."""
        read, self._first = self._first, None
        if isinstance(read, StoreUnavailable | StoreOutage) or (
            isinstance(read, Exception) and not isinstance(read, AnyyError)
        ):
            read = None  # the start's unit could not read it (its connection lost): read now, held (P7)
        if isinstance(read, Exception):
            raise read
        if read is None:
            read = await self._store(
                functools.partial(
                    checkpoint, deps=self.deps, session_id=self.session_id, execution_id=self.execution_id
                )
            )
        self._ready = (read.context, read.messages)
        if read.inputs:
            self._hook_inputs.extend(read.inputs)
            await self._announce.queue(self.session_id)
            self._appended(read.inputs)  # the next state change lists these submissions with the others
        return read.session, read.context

    # -- one pass --------------------------------------------------------------------------------
    async def _one_pass(self, session: Session, context: ModelContext) -> Outcome | PassEnd:
        """One model call and its tools: how the pass ended, or how the execution did."""
        attempts = 0
        overflow_compacted = False
        fresh = True
        while True:
            if not fresh:  # a retry reads the session and its context again
                session, context = await self._store(
                    lambda s: (s.get_session(self.session_id), self.deps.contexts.context(s, self.session_id))
                )
            fresh = False
            absent = await self._servers_ready(session)
            self.granted = set(session.tools.get("approved") or ())
            tools = self.deps.tools.tools_for(
                _enabled_tools(session), codemode=bool(session.tools.get("codemode")), workspace=self.workspace
            )
            if (
                context.tokens > self.deps.settings.budget_tokens
                and not overflow_compacted
                and await self._compactor.compact(
                    self.session_id, reason="the context passed its budget", guard=self._cancellable
                )
            ):
                context = await self._store(lambda s: self.deps.contexts.context(s, self.session_id))
            provider_name, model = self.deps.models.resolve(session.provider, session.model, context.last_model)
            await self._note_fallback(session, context.last_model)
            request = ModelRequest(
                model=model,
                system=system_with_context(
                    self.deps.system_prompt(session) + (f"\n\n{absent}" if absent else ""), self._hook_context
                ),
                messages=await self._messages(context),
                tools=tuple(tools.specs()),
                effort=session.effort,
            )
            if not await self._hold_budget(session, provider_name, model, request):
                return await self._budget_exhausted()
            result = StreamResult()
            keeper = StreamKeeper(self.deps, answer_saver(self.execution_id, provider_name, model))
            try:
                try:
                    await self._cancellable(self._stream(provider_name, request, result, keeper))
                finally:  # no save lands after the pass is recorded; with tool calls to run, the text is kept whole
                    await keeper.close(save_rest=bool(result.calls) and result.stop is not None)
            except _Stopped:
                await self._record_interrupted_text(result, provider_name, model)
                return await self._finish_stopped()
            except ProviderError as exc:
                if exc.kind == "overflow" and not overflow_compacted:
                    overflow_compacted = True
                    if await self._compactor.compact(
                        self.session_id, reason="the model said the context is too long", guard=self._cancellable
                    ):
                        continue
                    raise
                settings = self.deps.settings
                if exc.kind != "transient" or not settings.retries_enabled or attempts >= settings.max_retries:
                    raise
                attempts += 1
                if not await self._wait_before_retry(attempts, exc):
                    return await self._finish_stopped()
                continue
            try:
                return await self._after_response(result, provider_name, model, tools)
            finally:  # the call's cost is recorded (or it failed): what it held is spent or free again
                await self._release_budget()

    async def _servers_ready(self, session: Session) -> str:
        """Wait, within ``[mcp] wait``, for the MCP servers the session's tools name (never for others);
        when some are missing, say which once per execution (a notice) and return the line the model
        reads in its instructions (N1)."""
        servers = self.deps.tool_servers
        if servers is None:
            return ""
        missing = await servers.wait_for(_enabled_tools(session), self.deps.settings.mcp_wait)
        if not missing:
            return ""
        text = missing_servers_text(missing)
        if set(missing) != self._servers_noted:
            self._servers_noted = set(missing)
            self._announce.event(Notice(session_id=self.session_id, level="warning", text=text))
            entry = NewEntry(kind=EntryKind.NOTICE, text=text, data=NoticeData(level="warning"))
            self._appended(await self._store(lambda s: s.append_entries(self.session_id, [entry])))
        return text

    async def _note_fallback(self, session: Session, last_model: tuple[str, str] | None) -> None:
        """Say once per execution when a virtual model is gone and the last response's model is used (M2)."""
        explain = getattr(self.deps.models, "resolution", None)
        if self._fallback_noted or explain is None:
            return
        found = explain(session.provider, session.model, last_model)
        note = getattr(found, "note", "") if getattr(found, "fallback", False) else ""
        if not note:
            return
        self._fallback_noted = True
        text = note[0].upper() + note[1:] + "."
        self._announce.event(Notice(session_id=self.session_id, level="info", text=text))
        entry = NewEntry(kind=EntryKind.NOTICE, text=text, data=NoticeData(level="info"))
        self._appended(await self._store(lambda s: s.append_entries(self.session_id, [entry])))

    async def _stream(
        self, provider_name: str, request: ModelRequest, result: StreamResult, keeper: StreamKeeper
    ) -> None:
        provider = await self.deps.models.provider(provider_name)
        # Pieces joined once at the end: adding each delta to one string copies it every time (an answer of
        # many small deltas took minutes), since clients joining late read the text while it grows.
        pieces: list[str] = []
        self._pieces = pieces
        try:
            await self._read_stream(provider.stream(request), result, keeper, pieces)
        finally:  # a stop cancels the stream: what was said is kept all the same
            result.text = "".join(pieces)

    async def _read_stream(
        self, stream: AsyncIterator[ProviderEvent], result: StreamResult, keeper: StreamKeeper, pieces: list[str]
    ) -> None:
        # Once per streamed delta: the names it uses are bound here.
        publish, piece, keep = self._announce.event, pieces.append, keeper.add
        session_id, execution_id = self.session_id, self.execution_id
        async for event in stream:
            if isinstance(event, TextDelta):
                text = event.text
                piece(text)
                keep(text)
                publish(TextDeltaEvent(session_id=session_id, execution_id=execution_id, text=text))
            elif isinstance(event, ThinkingDelta):
                result.thought.append(event.text)
                keeper.add_thinking(event.text)
                publish(ThinkingDeltaEvent(session_id=session_id, execution_id=execution_id, text=event.text))
            elif isinstance(event, ReasoningEvent):
                result.reasoning.append(event.block)
            elif isinstance(event, ToolCallEvent):
                result.calls.append(event)
            elif isinstance(event, UsageEvent):
                result.usage = event.usage
            elif isinstance(event, StopEvent):
                result.stop = event.reason
                result.raw_stop = event.raw_reason or event.reason

    async def _wait_before_retry(self, attempt: int, exc: ProviderError) -> bool:
        """The retry wait, a state of its own; False when it was cancelled (alone, or by a stop)."""
        delay = retry_delay(attempt, exc.retry_after)
        await self._set_state("retry_wait", error=exc.message)
        waiting = RetryWaiting(
            session_id=self.session_id,
            execution_id=self.execution_id,
            attempt=attempt,
            of=self.deps.settings.max_retries,
            delay=delay,
            error=exc.message,
        )
        self.retry_wait = (waiting, self.deps.clock.now() + delay)
        self._announce.event(waiting)
        try:
            await self._cancellable(self.deps.clock.sleep(delay), retry_wait=True)
        except _Stopped:
            if not self._retry_early or self.stop_requested:
                return False
        finally:
            self.retry_wait = None
            self._retry_early = False
        await self._set_state("running")
        return True

    async def _record_interrupted_text(self, result: StreamResult, provider: str, model: str) -> None:
        """A stopped stream: keep what was said, marked interrupted; calls not yet complete are dropped."""
        if not result.text and not result.thought:
            return
        await self._price(result, provider, model)
        entry = _assistant_entry(result, provider, model, interrupted=True)
        self._appended(await self._store(lambda s: s.record_pass(self.execution_id, [entry])))

    # -- budgets (Y2) -----------------------------------------------------------------------------------
    async def _hold_budget(self, session: Session, provider: str, model: str, request: ModelRequest) -> bool:
        """Before a model call: whether every budget it falls under has room for its worst case, holding
        that much on each (atomically, in the store: several Gateways share the limits). False: one is
        spent, nothing was held, and ``self._exhausted`` says which."""
        settings = self.deps.settings
        if self.deps.prices is None:
            return True
        output = worst_output_tokens(request.max_tokens, request.effort)
        worst = await self.deps.prices.worst_case(provider, model, output)
        now = self.deps.wall.now()
        hold_id = self.execution_id

        def check(store: SessionStore) -> tuple[Exhausted | None, list[tuple[BudgetScope, int]]]:
            scopes = scopes_for(session, settings.budgets, store.list_budgets(), now)
            exhausted = store.hold_budget(hold_id, scopes, worst or 0)
            spent = [(scope, store.budget_spent(scope)) for scope in scopes] if exhausted is None else []
            return exhausted, spent

        exhausted, spent = await self._store(check)
        if exhausted is not None:
            self._exhausted = exhausted
            return False
        self._budget_held = bool(spent)
        for scope, amount in spent:
            # Warned once the spend with this call's worst case reaches the share ([budgets] warn_at).
            reach = amount + (worst or 0)
            if reach >= scope.limit_nano * settings.budget_warn_at and scope.key not in self._budget_warned:
                self._budget_warned.add(scope.key)
                await self._notice(warning_text(scope, amount), "warning")
        if worst is None and spent and not self._unpriced_noted:
            self._unpriced_noted = True
            await self._notice(
                f"The model {provider}/{model} has no price: its calls are not counted against budgets. Add a "
                f'[prices."{provider}/{model}"] table to config.toml to count them.',
                "warning",
            )
        return True

    async def _release_budget(self) -> None:
        if not self._budget_held:
            return
        self._budget_held = False
        try:
            await self._store(lambda s: s.release_budget(self.execution_id))
        except Exception as exc:  # the hold expires on its own
            log.warning("budget hold of %s not released: %s", self.execution_id, exc)

    async def _budget_exhausted(self) -> Outcome:
        exhausted = self._exhausted
        text = exhausted.notice() if exhausted is not None else "Budget exhausted."
        await self._notice(text, "warning")
        await self._set_state("budget_exhausted", note=text)
        return Outcome.BUDGET

    async def _notice(self, text: str, level: str) -> None:
        self._announce.event(Notice(session_id=self.session_id, level=level, text=text))
        entry = NewEntry(kind=EntryKind.NOTICE, text=text, data=NoticeData(level=level))  # type: ignore[arg-type]
        self._appended(await self._store(lambda s: s.append_entries(self.session_id, [entry])))

    async def _price(self, result: StreamResult, provider: str, model: str) -> None:
        """What the call cost (Y1), kept with its entry: unpriced (None) when its model has no price."""
        prices = self.deps.prices
        if prices is not None and result.usage is not None:
            result.cost = (await prices.price(provider, model, result.usage)).cost

    async def _after_response(
        self, result: StreamResult, provider: str, model: str, tools: ToolSet
    ) -> Outcome | PassEnd:
        await self._price(result, provider, model)
        assistant = _assistant_entry(result, provider, model, interrupted=False)
        calls = [
            NewEntry(
                kind=EntryKind.TOOL_CALL,
                data=ToolCallData(
                    call_id=call.call_id,
                    name=call.name,
                    arguments=call.arguments,
                    reasoning=result.reasoning if index == 0 else [],
                ),
            )
            for index, call in enumerate(result.calls)
        ]
        captures = PassCaptures(self.deps, self.session_id, self.execution_id)
        plan = await self._run_calls([(c.call_id, c.name, c.arguments) for c in result.calls], tools, captures)
        entries = [assistant, *calls, *_result_entries([(c.call_id, c.name) for c in result.calls], plan)]
        entries += self._take_hook_notes()
        if plan.question is not None:
            call_id, question = plan.question
            entries.append(NewEntry(kind=EntryKind.QUESTION, text=question, data=QuestionData(call_id=call_id)))
        ending = not result.calls and plan.question is None and result.stop != "length"

        def record(store: SessionStore) -> tuple[list[Entry], Execution | None]:
            appended = store.record_pass(self.execution_id, entries)
            # A response without tool calls ends the execution, unless steering waits for another pass:
            # decided in the same unit of work as the record, so nothing slips in between.
            pending = store.list_submissions(self.session_id) if ending else []
            if ending and not self.stop_requested and not any(sub.kind == "steering" for sub in pending):
                completed = store.set_execution_state(self.execution_id, "completed")
                self.queue_was_empty = not pending
                self.pending_at_end = pending
                if self.queue_was_empty and self.release_when_done:
                    self.released = _release(store, self.session_id)
                return appended, completed
            return appended, None

        appended, completed = await self._store(record)
        await captures.after(appended)  # W2: the pass's change, joined to its last entry
        self._appended(appended)
        if completed is not None:
            self.state = "completed"
            self._announce.execution(completed)
            return Outcome.DONE
        if plan.question is not None:
            await self._set_state("suspended", note="waiting for the user's answer", question=question_in(appended))
            return Outcome.SUSPENDED
        if plan.waiting is not None and self.stop_requested:  # K2: stopped as the children started
            stopped = NewEntry(
                kind=EntryKind.TOOL_RESULT,
                text=STOPPED_WHILE_RUNNING,
                data=ToolResultData(call_id=plan.waiting[0], name="delegate", is_error=True, synthetic=True),
            )
            self._appended(await self._store(lambda s: s.append_entries(self.session_id, [stopped])))
            return await self._finish_stopped()  # the delegated tasks see the end and stop too
        if plan.waiting is not None:
            await self._set_state("suspended", note=plan.waiting[1])
            return Outcome.SUSPENDED
        if self.stop_requested:
            return await self._finish_stopped()
        if result.calls:
            return PassEnd.MORE
        if result.stop == "length":
            await self._set_state("failed", error="the model stopped at its output limit before finishing")
            return Outcome.FAILED
        return PassEnd.ENDED

    # -- tools -----------------------------------------------------------------------------------
    async def _run_calls(
        self, calls: list[tuple[str, str, dict[str, Any]]], tools: ToolSet, captures: PassCaptures
    ) -> PassPlan:
        plan = PassPlan()
        skip_reason: str | None = None
        for call_id, name, arguments in calls:
            if skip_reason is None:
                if self.stop_requested:
                    skip_reason = NOT_RUN_STOPPED
                elif plan.question is not None or plan.waiting is not None:
                    break  # the rest runs once the user answered (or the delegated tasks ended)
                elif await self._steering_waiting():
                    skip_reason = SKIPPED_FOR_STEERING
            if skip_reason is not None:
                plan.results[call_id] = (skip_reason, True, True)
                self._tool_finished(call_id, name, is_error=True, synthetic=True)
                continue
            inner: list[InnerCall] = []
            await captures.before(name)  # W2: the workspace before the first call that may change it
            outcome = await self._run_one(call_id, name, arguments, tools, inner)
            if inner:
                plan.inner[call_id] = inner
            if outcome.suspend is not None:
                plan.question = (call_id, outcome.suspend)
                continue
            if outcome.waits:  # K2: the result is recorded when the children end (runtime/delegation.py)
                plan.waiting = (call_id, outcome.text)
                continue
            plan.results[call_id] = (outcome.text, outcome.is_error, False)
        return plan

    async def _steering_waiting(self) -> bool:
        return await self._store(lambda s: _steering_pending(s, self.session_id))

    async def _run_one(
        self, call_id: str, name: str, arguments: dict[str, Any], tools: ToolSet, inner: list[InnerCall]
    ) -> ToolOutcome:
        self._tool_started(call_id, name, arguments)
        context = self._tool_context(call_id)
        # The rules and the user's pre_tool hooks (N2, N6); a call the user approved was looked at already.
        verdict, hook_context = await self._gate(
            call_id, name, arguments, context.workdir, approved=self.approved_once.get(call_id)
        )
        if verdict.outcome is not None:  # denied, or waiting for the user's approval (N2)
            outcome = verdict.outcome
        elif name not in tools.names():
            outcome = ToolOutcome(
                text=f"There is no tool named {name!r} in this session; the tools are: {', '.join(tools.names())}.",
                is_error=True,
            )
        else:
            watch = ToolWatch(self.deps, self.execution_id, call_id, name, arguments)
            await watch.begin()  # recorded before it starts (D3)
            context = msgspec.structs.replace(
                context, on_process=watch.on_process, on_output=watch.on_output, approved=verdict.decision.subject
            )
            try:
                outcome = await self._cancellable(
                    tools.run(name, arguments, context, self._inner_call(tools, call_id, inner))
                )
            except _Stopped:
                outcome = ToolOutcome(text=STOPPED_WHILE_RUNNING, is_error=True)
            except Exception as exc:  # a broken tool is the model's news, not the Gateway's crash
                outcome = ToolOutcome(text=f"The tool failed: {type(exc).__name__}: {exc}", is_error=True)
            outcome = await self._post_tool(call_id, name, arguments, outcome)
            await watch.end(outcome.text)
        outcome = with_context(outcome, hook_context)
        self._tool_finished(call_id, name, is_error=outcome.is_error, synthetic=False)
        return outcome

    def _inner_call(self, tools: ToolSet, outer_call: str, inner: list[InnerCall]) -> CallTool:
        """Serves the tool calls of a Codemode script: each is run, announced, and recorded with the
        script's result (a call cut short by a stop or a timeout is recorded as such); one that starts a
        program is also recorded as it starts, with its process group (D3: a crash ends the program and
        keeps the call, in the script's result)."""

        async def call_tool(name: str, arguments: dict[str, Any]) -> ToolOutcome:
            inner_id = f"{outer_call}.{len(inner) + 1}"
            self._tool_started(inner_id, name, arguments, parent=outer_call)
            watch = ToolWatch(self.deps, self.execution_id, inner_id, name, arguments, parent=outer_call)
            try:
                context = self._tool_context()
                verdict, hook_context = await self._gate(inner_id, name, arguments, context.workdir, parent=outer_call)
                gated = verdict.outcome
                if gated is None:
                    context = msgspec.structs.replace(context, approved=verdict.decision.subject)
                    ran = await self._run_watched(watch, tools, name, arguments, call_tool, context=context)
                    gated = await self._post_tool(inner_id, name, arguments, ran, parent=outer_call)
                outcome = with_context(gated, hook_context)
            except asyncio.CancelledError:
                inner.append(InnerCall(name=name, arguments=arguments, result=STOPPED_WHILE_RUNNING, is_error=True))
                self._tool_finished(inner_id, name, is_error=True, synthetic=False, parent=outer_call)
                raise
            inner.append(
                InnerCall(
                    name=name, arguments=arguments, result=outcome.text[:INNER_RESULT_CHARS], is_error=outcome.is_error
                )
            )
            self._tool_finished(inner_id, name, is_error=outcome.is_error, synthetic=False, parent=outer_call)
            return outcome

        return call_tool

    async def _run_watched(
        self,
        watch: ToolWatch,
        tools: ToolSet,
        name: str,
        arguments: dict[str, Any],
        call_tool: CallTool,
        *,
        context: ToolContext,
    ) -> ToolOutcome:
        """A script's inner call, watched like the model's own (D3)."""
        await watch.begin()
        context = msgspec.structs.replace(context, on_process=watch.on_process, on_output=watch.on_output)
        try:
            outcome = await tools.run(name, arguments, context, call_tool)
        except asyncio.CancelledError:
            with contextlib.suppress(Exception):  # no write of its output lands after the pass is recorded
                await asyncio.shield(watch.end(STOPPED_WHILE_RUNNING))
            raise
        await watch.end(outcome.text)
        return outcome

    async def _messages(self, context: ModelContext) -> Sequence[Message]:
        """The context as messages, image attachments included (N5): kept by the runtime between calls;
        those of the checkpoint's context were made in its unit of work."""
        if self._ready is not None and self._ready[0] is context:
            return self._ready[1]
        return await self._store(lambda s: self.deps.contexts.messages(s, self.session_id, context))

    def _enter_workspace(self, session: Session) -> str | None:
        """Check the session's workspace before a model call or a waiting batch (W1): what is wrong, or
        None once it is the folder the tools work in."""
        problem = workspace_problem(session, self.deps.workdir, self.deps.workspaces)
        if problem is None:
            self.workspace = self.deps.workspace_of(session)
        return problem

    def _tool_context(self, call_id: str = "") -> ToolContext:
        settings = self.deps.settings
        delegator = self.deps.delegator
        if self.workspace is None:  # tools run only after a checkpoint found the workspace
            raise RuntimeError("a tool was about to run before the session's workspace was checked")
        return ToolContext(
            call_id=call_id,
            execution_id=self.execution_id,
            delegate=delegator(self.session_id, self.execution_id, call_id) if delegator and call_id else None,
            workdir=self.workspace,
            memory_dir=self.deps.memory_dir,
            session_id=self.session_id,
            timeout=settings.tool_timeout,
            output_cap=settings.tool_output_cap,
            env=self.deps.tool_env,
            policy=self.deps.tool_policy,
        )

    def _tool_started(self, call_id: str, name: str, arguments: dict[str, Any], *, parent: str = "") -> None:
        started = ToolStarted(
            session_id=self.session_id,
            execution_id=self.execution_id,
            call_id=call_id,
            name=name,
            arguments=arguments,
            parent_call_id=parent,
        )
        self.running_tools[call_id] = started
        self._announce.event(started)

    def _tool_finished(self, call_id: str, name: str, *, is_error: bool, synthetic: bool, parent: str = "") -> None:
        self.running_tools.pop(call_id, None)
        self._announce.event(
            ToolFinished(
                session_id=self.session_id,
                execution_id=self.execution_id,
                call_id=call_id,
                name=name,
                is_error=is_error,
                synthetic=synthetic,
                parent_call_id=parent,
            )
        )

    # -- the user's hooks (N6; the rules in anyy.runtime.user_hooks) -------------------------------
    def _hook_payload(self, call_id: str, name: str, arguments: Mapping[str, Any], parent: str) -> dict[str, Any]:
        return {
            "session_id": self.session_id,
            "execution_id": self.execution_id,
            "tool_call_id": call_id,
            "parent_call_id": parent,
            "tool_name": name,
            "arguments": arguments,
        }

    async def _gate(
        self,
        call_id: str,
        name: str,
        arguments: Mapping[str, Any],
        workdir: Path,
        *,
        parent: str = "",
        approved: str | None = None,
    ) -> tuple[RuleVerdict, list[str]]:
        """The approval rules (N2, N7), then the pre_tool hooks (N6): the verdict (its outcome None when the
        call may run) and the hooks' context. ``approved``: the request the user answered ``once``; the
        call runs if the rules would ask the same now, and the hooks, which were asked already, are not."""
        rules = self.deps.tool_policy.approval
        ruled = gate(
            rules, name, arguments, workdir=workdir, granted=self.granted, can_wait=not parent, approved=approved
        )
        held = ruled.outcome.suspend if ruled.outcome is not None else None
        if approved is not None and held is not None and approved.startswith(held):
            ruled = RuleVerdict(decision=ruled.decision, outcome=None)  # answered, with a hook's reason added
        hooks = self.deps.hooks
        if approved is not None or hooks is None or not hooks.matching("pre_tool", name):
            return ruled, []
        asked = hooks.run(
            "pre_tool", self._hook_payload(call_id, name, arguments, parent), workdir=self.deps.workdir, tool=name
        )
        try:  # a script's call is cut short with the script (its own task), not through _cancellable
            verdict = await (asked if parent else self._cancellable(asked))
        except _Stopped:
            return RuleVerdict(decision=ruled.decision, outcome=ToolOutcome(text=NOT_RUN_STOPPED, is_error=True)), []
        self._hook_notify(verdict.notes)
        outcome = decide(verdict, ruled.outcome, name, arguments, granted=self.granted, can_wait=not parent)
        return RuleVerdict(decision=ruled.decision, outcome=outcome), verdict.context

    async def _post_tool(
        self, call_id: str, name: str, arguments: dict[str, Any], outcome: ToolOutcome, *, parent: str = ""
    ) -> ToolOutcome:
        """The post_tool hooks of a call that ran: what they add joins the result the model reads."""
        hooks = self.deps.hooks
        if hooks is None or outcome.suspend is not None or outcome.waits or not hooks.matching("post_tool", name):
            return outcome
        payload = self._hook_payload(call_id, name, arguments, parent)
        payload.update(result=outcome.text[: INNER_RESULT_CHARS * 8], is_error=outcome.is_error)
        asked = hooks.run("post_tool", payload, workdir=self.deps.workdir, tool=name)
        try:
            verdict = await (asked if parent else self._cancellable(asked))
        except _Stopped:
            return outcome
        self._hook_notify(verdict.notes)
        return with_context(outcome, verdict.context)

    async def _hooks_before_pass(self, session: Session) -> str | None:
        """session_start (the session's first execution) and submission hooks (each message taken since the
        last pass) before the model call: their context joins the system prompt; why a submission hook
        blocked the message, if one did."""
        hooks = self.deps.hooks
        inputs, self._hook_inputs = self._hook_inputs, []
        if hooks is None:
            return None
        base = {"session_id": self.session_id, "execution_id": self.execution_id}
        verdicts: list[Verdict] = []
        if not self._session_hooked:
            self._session_hooked = True
            first = bool(hooks.matching("session_start")) and await self._store(
                lambda s: len(s.list_executions(self.session_id)) <= 1
            )
            if first:
                started = {**base, "role": session.role, "title": session.title, "kind": session.kind}
                verdicts.append(await self._cancellable(hooks.run("session_start", started, workdir=self.deps.workdir)))
        if hooks.matching("submission"):
            for entry in inputs:
                if entry.kind == EntryKind.USER:
                    taken = {**base, "entry_id": entry.id, "text": entry.text}
                    verdicts.append(await self._cancellable(hooks.run("submission", taken, workdir=self.deps.workdir)))
        blocked = [verdict.reason for verdict in verdicts if verdict.decision == "deny"]
        for verdict in verdicts:
            self._hook_notify(verdict.notes)
            self._hook_context.extend(verdict.context)
        if self._hook_notes:  # no pass is being recorded: the notices go in now
            notes = self._take_hook_notes()
            self._appended(await self._store(lambda s: s.append_entries(self.session_id, notes)))
        if blocked:
            return f"the message was not sent to the model: {'; '.join(blocked)}"
        return None

    def _hook_notify(self, notes: Sequence[str]) -> None:
        """Tell the user at once; the notices are recorded with the pass."""
        for text in notes:
            self._announce.event(Notice(session_id=self.session_id, level="warning", text=text))
            self._hook_notes.append(NewEntry(kind=EntryKind.NOTICE, text=text, data=NoticeData(level="warning")))

    def _take_hook_notes(self) -> list[NewEntry]:
        notes, self._hook_notes = self._hook_notes, []
        return notes

    def _hook_end(self) -> None:
        """execution_end hooks, in the background: the run stopped (completed, failed, suspended...)."""
        hooks = self.deps.hooks
        if hooks is not None and hooks.matching("execution_end"):
            payload = {"session_id": self.session_id, "execution_id": self.execution_id, "state": self.state}
            hooks.later("execution_end", payload, workdir=self.deps.workdir)

    # -- clarification ---------------------------------------------------------------------------
    async def resume_with_answer(self, answer: str) -> Outcome:
        """Record the answer as the result of the pending ask_user call, run the calls that waited for
        it, and go on with the execution."""
        context = await self._store(lambda s: s.context(self.session_id))
        recent = await self._store(lambda s: s.history(self.session_id, limit=200))
        question = next((e for e in recent.items if e.kind == EntryKind.QUESTION), None)
        call_id = question.data.get("call_id", "") if question is not None else ""
        unresolved = unresolved_calls(context.items)
        waiting = [call for call in unresolved if call[0] != call_id]
        asked = next((call for call in unresolved if call[0] == call_id), None)
        await self._set_state("running")
        entries = [
            NewEntry(kind=EntryKind.ANSWER, text=answer, data=AnswerData(question=question.id if question else 0))
        ]
        if asked is not None and asked[1] != "ask_user":  # an approval request (N2): once, session or deny
            decision = answer.strip().lower()
            if decision in ("once", "session"):
                self.approved_once[call_id] = question.text if question is not None else ""
                if decision == "session":
                    # The grant is for what the user read: recorded only if the call is still that one.
                    session = await self._store(lambda s: s.get_session(self.session_id))
                    workdir = self.workspace or self.deps.workspace_of(session)
                    verdict, _ = await self._gate(
                        call_id, asked[1], asked[2], workdir, approved=self.approved_once[call_id]
                    )
                    if verdict.outcome is None:
                        await self._grant(f"{asked[1]}\n{verdict.decision.subject}")
                waiting = [asked, *waiting]
            else:
                entries.append(
                    NewEntry(
                        kind=EntryKind.TOOL_RESULT,
                        text=denied_by_user(answer),
                        data=ToolResultData(call_id=call_id, name=asked[1], is_error=True),
                    )
                )
        else:
            entries.append(
                NewEntry(kind=EntryKind.TOOL_RESULT, text=answer, data=ToolResultData(call_id=call_id, name="ask_user"))
            )
        appended = await self._store(lambda s: s.append_entries(self.session_id, entries))
        self._appended(appended)
        suspended = await self._run_waiting(waiting)
        return suspended if suspended is not None else await self.run()

    async def resume_after_result(self) -> Outcome:
        """A delegate call's result was recorded (K2, by runtime/delegation.py): run the calls of the
        batch that waited behind it, then go on with the execution."""
        await self._set_state("running")
        context = await self._store(lambda s: s.context(self.session_id))
        suspended = await self._run_waiting(unresolved_calls(context.items))
        return suspended if suspended is not None else await self.run()

    async def _run_waiting(self, waiting: list[tuple[str, str, Any]]) -> Outcome | None:
        """Run the calls of a batch that waited for an answer or a delegated result; SUSPENDED when one
        of them waits again, else None (the execution goes on)."""
        if not waiting:
            return None
        session: Session = await self._store(lambda s: s.get_session(self.session_id))
        problem = self._enter_workspace(session)
        if problem is not None:  # none of them runs; the next checkpoint ends the execution with the notice
            plan = PassPlan(results={call_id: (problem, True, True) for call_id, _, _ in waiting})
            self._appended(
                await self._store(
                    lambda s: s.append_entries(self.session_id, _result_entries([(c, n) for c, n, _ in waiting], plan))
                )
            )
            return None
        await self._servers_ready(session)
        self.granted = set(session.tools.get("approved") or ())
        tools = self.deps.tools.tools_for(
            _enabled_tools(session), codemode=bool(session.tools.get("codemode")), workspace=self.workspace
        )
        captures = PassCaptures(self.deps, self.session_id, self.execution_id)
        plan = await self._run_calls([(c, n, dict(a)) for c, n, a in waiting], tools, captures)
        results = _result_entries([(c, n) for c, n, _ in waiting], plan) + self._take_hook_notes()
        if plan.question is not None:
            results.append(
                NewEntry(kind=EntryKind.QUESTION, text=plan.question[1], data=QuestionData(call_id=plan.question[0]))
            )
        done = await self._store(lambda s: s.append_entries(self.session_id, results)) if results else []
        await captures.after(done)
        self._appended(done)
        if plan.question is not None:
            await self._set_state("suspended", note="waiting for the user's answer", question=question_in(done))
            return Outcome.SUSPENDED
        if plan.waiting is not None:
            await self._set_state("suspended", note=plan.waiting[1])
            return Outcome.SUSPENDED
        return None

    async def _grant(self, key: str) -> None:
        """Remember an approval "for this session" in the session's tool settings (survives restarts)."""

        def work(store: SessionStore) -> None:
            tools = dict(store.get_session(self.session_id).tools)
            tools["approved"] = sorted({*(tools.get("approved") or ()), key})
            store.update_session(self.session_id, SessionPatch(tools=tools))

        await self._store(work)


@dataclass(frozen=True)
class Checkpoint:
    """What a checkpoint read: the session, the steering it took (as entries), the context and its messages."""

    session: Session
    inputs: list[Entry]
    context: ModelContext
    messages: Sequence[Message]


def checkpoint(store: SessionStore, *, deps: Deps, session_id: str, execution_id: str) -> Checkpoint:
    """The checkpoint's unit of work: steering taken, then what the model will see."""
    session = store.get_session(session_id)
    pending = store.list_submissions(session_id)
    chosen = [sub.id for sub in queue_rules.steering_to_take(pending, session.steering_mode)]
    taken = list(store.take_submissions(execution_id, chosen, record_inputs=True)) if chosen else []
    inputs = [store.get_entry(session_id, sub.entry_id) for sub in taken if sub.entry_id is not None]
    return _seen(store, deps, session, inputs)


def first_checkpoint(store: SessionStore, *, deps: Deps, session_id: str) -> Checkpoint | None:
    """The first checkpoint, read in the unit of work that started the execution (one hand-off fewer);
    ``None`` when steering waits to be taken: the execution's own checkpoint takes it, and announces it."""
    session = store.get_session(session_id)
    if queue_rules.steering_to_take(store.list_submissions(session_id), session.steering_mode):
        return None
    return _seen(store, deps, session, [])


def _seen(store: SessionStore, deps: Deps, session: Session, inputs: list[Entry]) -> Checkpoint:
    context = deps.contexts.context(store, session.id)
    return Checkpoint(session, inputs, context, deps.contexts.messages(store, session.id, context))


def _release(store: SessionStore, session_id: str) -> bool:
    """Give the session's lease back; False when that failed (the actor tries again)."""
    try:
        store.release_session(session_id)
    except Exception as exc:
        log.debug("lease of %s not released with the record: %s", session_id, exc)
        return False
    return True


def _steering_pending(store: SessionStore, session_id: str) -> bool:
    return any(sub.kind == "steering" for sub in store.list_submissions(session_id))


def _assistant_entry(result: StreamResult, provider: str, model: str, *, interrupted: bool) -> NewEntry:
    return NewEntry(
        kind=EntryKind.ASSISTANT,
        text=result.text,
        data=AssistantData(
            provider=provider,
            model=model,
            usage=result.usage,
            cost=result.cost,
            stop_reason="interrupted" if interrupted else result.raw_stop,
            interrupted=interrupted,
            thinking=result.thinking,
        ),
    )


def _result_entries(calls: list[tuple[str, str]], plan: PassPlan) -> list[NewEntry]:
    """The results the plan has for ``(call_id, name)`` calls, in the calls' order."""
    entries = []
    for call_id, name in calls:
        if call_id not in plan.results:
            continue
        text, is_error, synthetic = plan.results[call_id]
        entries.append(
            NewEntry(
                kind=EntryKind.TOOL_RESULT,
                text=text,
                data=ToolResultData(
                    call_id=call_id,
                    name=name,
                    is_error=is_error,
                    synthetic=synthetic,
                    inner_calls=plan.inner.get(call_id, []),
                ),
            )
        )
    return entries


def _enabled_tools(session: Session) -> list[str]:
    enabled = session.tools.get("enabled")
    return [str(name) for name in enabled] if isinstance(enabled, list) else []
