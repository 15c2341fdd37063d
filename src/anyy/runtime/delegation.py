"""Delegation (SPEC K2): a ``delegate`` call's children, run a few at once, their answers returned once.

The durable link is the store's delegated tasks (one row per child session). The parent's execution is
suspended on the call (``ToolOutcome.waits``); this coordinator, watching execution states on the bus:

- starts waiting tasks while fewer than ``max_children`` of the call run (the brief becomes the child's
  first message);
- records each child's final answer (or failure) in its task when the child's execution ends;
- once every task of a call ended, delivers the result to the parent. In this order, each step one unit
  of work: the call's result entry (only while the call is unresolved), the parent's execution back to
  ``running``, then the tasks marked ``delivered``. A Gateway killed between two steps finds the tasks
  still undelivered at its next start and takes the steps left, none twice;
- when the parent's execution ends otherwise (a stop), stops the children's executions it captured then
  and cancels the tasks not started (S6: bound to those executions, never a later turn of a child).

After a restart, children cut short by it are resumed once with a note (their work so far is kept),
children not started are started, and finished calls are delivered.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, TypeVar

import msgspec

from anyy.api.events import ExecutionStateChanged
from anyy.domain.compaction import unresolved_calls
from anyy.domain.delegation import DelegatedTask, TaskRequest, TaskUpdate, call_result
from anyy.domain.entries import Entry, EntryKind, NewEntry, ToolResultData
from anyy.domain.errors import Conflict, InvalidInput, NotFound
from anyy.domain.queue import FINAL_EXECUTION_STATES, Execution, NewSubmission
from anyy.domain.sessions import NewSession, Origin, Session
from anyy.runtime.host import RECOVERY_NOTE
from anyy.runtime.workspaces import subfolder
from anyy.storage.protocol import SessionStore
from anyy.tools.base import Delegator

if TYPE_CHECKING:
    from anyy.runtime.host import SessionHost

log = logging.getLogger("anyy.runtime")
T = TypeVar("T")
RESTARTED = (
    "The Gateway restarted while you worked on this task; what you did so far is above. "
    "Carry on and give your final answer."
)
NOT_STARTED = "Cancelled: the parent's response was stopped before this task started."
STOPPED = "Stopped: the parent's response was stopped while this task ran."
TOOL = "delegate"


class Delegations:
    def __init__(self, runtime: SessionHost) -> None:
        self.runtime = runtime
        self.deps = runtime.deps
        self._children: set[str] = set()  # child sessions of undelivered tasks
        self._parents: set[str] = set()  # parent executions with undelivered tasks
        self._watcher: asyncio.Task[None] | None = None
        self._lock = asyncio.Lock()  # one coordinator step at a time (they read, then write)
        self._later: set[asyncio.Task[None]] = set()  # deliveries to look at again (another Gateway held the parent)

    # -- lifecycle -------------------------------------------------------------------------------
    async def start(self) -> None:
        """Watch executions, then take up what the last run of the Gateway left (see the module doc)."""
        subscription = self.deps.bus.subscribe(None, states_only=True)
        self._watcher = asyncio.create_task(self._watch(subscription), name="anyy-delegations")
        tasks: list[DelegatedTask] = await self._store(lambda s: s.list_delegated_tasks(open_only=True))
        self._index(tasks)
        async with self._lock:
            # One task or call that cannot be taken up (a session deleted meanwhile) never stops the start.
            for task in tasks:
                if task.state == "running":
                    with _Logged(f"taking up delegated task {task.child_session_id}"):
                        await self._recover_child(task)
            for session_id, call_id in dict.fromkeys((t.parent_session_id, t.parent_call_id) for t in tasks):
                with _Logged(f"taking up the delegate call {call_id} of {session_id}"):
                    await self._advance(session_id, call_id)

    async def aclose(self) -> None:
        for task in list(self._later):
            task.cancel()
        if self._watcher is not None:
            self._watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._watcher

    def delegator(self, session_id: str, execution_id: str, call_id: str) -> Delegator:
        async def delegate(tasks: Sequence[TaskRequest]) -> str:
            # Shielded: a stop during the call lets the children and their tasks be recorded whole; the
            # parent's end then stops them (never children without a task, which nobody would stop).
            return await asyncio.shield(self.launch(session_id, execution_id, call_id, tasks))

        return delegate

    async def _store(self, fn: Callable[[SessionStore], T]) -> T:
        return await self.deps.owner.call(fn)

    def _index(self, tasks: Sequence[DelegatedTask]) -> None:
        for task in tasks:
            self._children.add(task.child_session_id)
            self._parents.add(task.parent_execution_id)

    # -- a delegate call -------------------------------------------------------------------------
    async def launch(self, session_id: str, execution_id: str, call_id: str, requests: Sequence[TaskRequest]) -> str:
        """Create the children and their tasks, start the first ``max_children``; the note for the parent."""
        settings = self.deps.settings
        depth = await self._depth(session_id) + 1
        if depth > settings.max_depth:
            raise Conflict(
                f"this session is a delegated task {depth - 1} level(s) deep and the profile allows "
                f"{settings.max_depth} ([background] max_depth): do this work yourself"
            )
        parent: Session = await self._store(lambda s: s.get_session(session_id))
        sessions = [self._child_spec(parent, call_id, request, depth) for request in requests]
        created = [await self._store(functools.partial(_create, new=new)) for new in sessions]
        tasks = [
            DelegatedTask(
                child_session_id=child.id,
                parent_session_id=session_id,
                parent_execution_id=execution_id,
                parent_call_id=call_id,
                position=position,
                brief=request.brief,
                depth=depth,
            )
            for position, (child, request) in enumerate(zip(created, requests, strict=True), start=1)
        ]
        await self._store(lambda s: s.add_delegated_tasks(tasks))
        self._index(tasks)
        async with self._lock:
            await self._fill(session_id, call_id)
        ids = ", ".join(child.id for child in created)
        return f"waiting for {len(tasks)} delegated task(s) ({ids}), at most {settings.max_children} at once"

    async def _depth(self, session_id: str) -> int:
        try:
            task: DelegatedTask = await self._store(lambda s: s.get_delegated_task(session_id))
        except NotFound:
            return 0
        return task.depth

    def _child_spec(self, parent: Session, call_id: str, request: TaskRequest, depth: int) -> NewSession:
        """The child's settings: the parent's, with the task's role, model and tools; checked here, so a
        wrong name fails the call before any child exists."""
        provider, model = parent.provider, parent.model
        if request.model:
            provider, slash, model = request.model.partition("/")
            if not slash:
                provider, model = parent.provider, request.model
            self.deps.models.resolve(provider, model, None)  # unknown: an error naming the models
        enabled = [str(n) for n in parent.tools.get("enabled") or [] if n != "ask_user"]
        tools = list(request.tools) if request.tools is not None else enabled
        if depth >= self.deps.settings.max_depth:
            tools = [name for name in tools if name != TOOL]
        codemode = bool(parent.tools.get("codemode"))
        self.deps.tools.tools_for(tools, codemode=codemode)  # unknown names: InvalidInput
        role = request.role or parent.role
        home = self.deps.workspace_of(parent)  # a child works in its parent's workspace or a folder under it
        workspace = subfolder(home, request.folder) if request.folder else str(home)
        spec = NewSession(
            kind="background",
            title=_title(request.brief),
            role=role,
            provider=provider,
            model=model,
            effort=parent.effort,
            tools={"enabled": tools, "codemode": codemode},
            steering_mode=parent.steering_mode,
            follow_up_mode=parent.follow_up_mode,
            origin=Origin(kind="delegate", parent_session_id=parent.id, parent_call_id=call_id),
            workspace=workspace,
        )
        if role != parent.role:
            try:
                self.deps.system_prompt(msgspec.structs.replace(parent, role=role))
            except Exception as exc:
                raise InvalidInput(f"role {role!r} cannot be used: {exc}") from None
        return spec

    # -- steps -----------------------------------------------------------------------------------
    async def _fill(self, session_id: str, call_id: str) -> None:
        """Start waiting tasks of the call while fewer than ``max_children`` run."""
        tasks: list[DelegatedTask] = await self._store(
            lambda s: s.list_delegated_tasks(parent_session_id=session_id, parent_call_id=call_id)
        )
        running = sum(task.state == "running" for task in tasks)
        for task in tasks:
            if running >= self.deps.settings.max_children:
                return
            if task.state == "waiting":
                await self._begin(task)
                running += 1

    async def _begin(self, task: DelegatedTask) -> None:
        # Marked running first: a Gateway killed before the brief is queued finds a running task whose
        # child has nothing at all, and queues it then (never twice).
        await self._store(lambda s: s.update_delegated_task(task.child_session_id, TaskUpdate(state="running")))
        try:
            await self.runtime.submit(task.child_session_id, NewSubmission(kind="prompt", text=task.brief))
        except NotFound:  # its session was deleted before it started: the call still gets an answer
            gone = TaskUpdate(
                state="finished", result="The task's session was deleted before it started.", is_error=True
            )
            await self._store(lambda s: s.update_delegated_task(task.child_session_id, gone))

    async def _watch(self, subscription: object) -> None:
        from anyy.runtime.bus import Subscription

        assert isinstance(subscription, Subscription)
        try:
            while True:
                event = await subscription.get()
                if isinstance(event, ExecutionStateChanged):
                    try:
                        await self._on_state(event)
                    except Exception:
                        log.exception("delegation step failed after %s of %s", event.state, event.execution_id)
        finally:
            subscription.close()

    async def _on_state(self, event: ExecutionStateChanged) -> None:
        final = event.state in FINAL_EXECUTION_STATES
        if self.runtime.cluster.joined and (final or event.state == "suspended"):
            await self._learn(event, final=final)
        if event.session_id in self._children and final:
            async with self._lock:
                await self._child_ended(event.session_id, event.execution_id)
        if event.execution_id in self._parents and (final or event.state == "suspended"):
            async with self._lock:
                calls = await self._store(lambda s: s.list_delegated_tasks(parent_session_id=event.session_id))
                for call_id in dict.fromkeys(
                    t.parent_call_id for t in calls if t.parent_execution_id == event.execution_id
                ):
                    await self._advance(event.session_id, call_id)

    async def _learn(self, event: ExecutionStateChanged, *, final: bool) -> None:
        """With several Gateways, a call's tasks may have been made on another one (which may have died
        since): what the store holds about this session is indexed here before the event is handled."""
        if final and event.session_id not in self._children:
            try:
                task: DelegatedTask = await self._store(lambda s: s.get_delegated_task(event.session_id))
            except NotFound:
                pass
            else:
                if not task.delivered:
                    self._index([task])
        if event.execution_id not in self._parents:
            calls: list[DelegatedTask] = await self._store(
                lambda s: s.list_delegated_tasks(parent_session_id=event.session_id)
            )
            self._index([t for t in calls if t.parent_execution_id == event.execution_id and not t.delivered])

    async def _child_ended(self, child_id: str, execution_id: str) -> None:
        task: DelegatedTask = await self._store(lambda s: s.get_delegated_task(child_id))
        if task.state != "running":
            return
        execution: Execution = await self._store(lambda s: s.get_execution(execution_id))
        await self._settle_child(task, execution)
        await self._advance(task.parent_session_id, task.parent_call_id)

    async def _settle_child(self, task: DelegatedTask, execution: Execution) -> None:
        """Record the child's answer or failure in its task (or resume it once after a restart)."""
        cut_short = execution.state == "interrupted" and (execution.note or "").startswith(RECOVERY_NOTE)
        if cut_short and task.restarts == 0:
            await self._store(lambda s: s.update_delegated_task(task.child_session_id, TaskUpdate(restarts=1)))
            await self.runtime.submit(task.child_session_id, NewSubmission(kind="prompt", text=RESTARTED))
            return
        if execution.state == "completed":
            text, is_error = await self._store(lambda s: _final_answer(s, task.child_session_id)), False
        else:
            why = execution.error or execution.note or "no reason given"
            text, is_error = f"The task ended {execution.state}: {why}", True
        update = TaskUpdate(state="finished", result=text, is_error=is_error)
        await self._store(lambda s: s.update_delegated_task(task.child_session_id, update))

    async def _recover_child(self, task: DelegatedTask) -> None:
        """A task running when the Gateway stopped: settle it, resume it, or queue its brief."""
        child = task.child_session_id
        executions: list[Execution] = await self._store(lambda s: s.list_executions(child))
        pending = await self._store(lambda s: s.list_submissions(child))
        if not executions and not pending:
            await self.runtime.submit(child, NewSubmission(kind="prompt", text=task.brief))
        elif pending and not any(e.state not in FINAL_EXECUTION_STATES for e in executions):
            await self.runtime.continue_queue(child)  # a restart starts nothing by itself (G3)
        elif executions and all(e.state in FINAL_EXECUTION_STATES for e in executions):
            latest = max(executions, key=lambda e: e.started_at)
            await self._settle_child(task, latest)

    async def _advance(self, session_id: str, call_id: str) -> None:
        """Move a call on: start waiting tasks, cancel them if the parent ended, deliver once all ended."""
        tasks: list[DelegatedTask] = await self._store(
            lambda s: s.list_delegated_tasks(parent_session_id=session_id, parent_call_id=call_id)
        )
        if not tasks or all(task.delivered for task in tasks):
            return
        parent: Execution = await self._store(lambda s: s.get_execution(tasks[0].parent_execution_id))
        if parent.state in FINAL_EXECUTION_STATES:
            await self._cancel(tasks)
            return
        if any(task.state == "waiting" for task in tasks):
            await self._fill(session_id, call_id)
        if any(task.state in ("waiting", "running") for task in tasks) or parent.state != "suspended":
            return  # not all ended; or the parent's pass is not recorded yet (its suspension comes back here)
        await self._deliver(tasks, parent)

    async def _deliver(self, tasks: list[DelegatedTask], parent: Execution) -> None:
        """With several Gateways, the one holding the parent's lease delivers: the others, whose children
        ended at the same moment, look again a lease later (by then the call is resolved: nothing twice)."""
        claim = await self._store(lambda s: s.claim_session(parent.session_id))
        if not claim.owned:
            self._again(parent.session_id, tasks[0].parent_call_id)
            return
        try:
            await self._deliver_owned(tasks, parent)
        except BaseException:
            await self._store(lambda s: s.release_session(parent.session_id))
            raise

    def _again(self, session_id: str, call_id: str) -> None:
        async def later() -> None:
            await asyncio.sleep(self.deps.settings.lease)  # a lease: the holder has given it back by then
            async with self._lock:
                await self._advance(session_id, call_id)

        task = asyncio.create_task(later(), name=f"anyy-delegation-{call_id}")
        self._later.add(task)
        task.add_done_callback(self._later.discard)

    async def _deliver_owned(self, tasks: list[DelegatedTask], parent: Execution) -> None:
        text, is_error = call_result(tasks)
        call_id = tasks[0].parent_call_id
        entry = NewEntry(
            kind=EntryKind.TOOL_RESULT, text=text, data=ToolResultData(call_id=call_id, name=TOOL, is_error=is_error)
        )

        def record(store: SessionStore) -> list[Entry]:
            context = store.context(parent.session_id)
            if not any(call[0] == call_id for call in unresolved_calls(context.items)):
                return []
            return list(store.append_entries(parent.session_id, [entry]))

        appended = await self._store(record)
        self.runtime.announce_entries(parent.session_id, appended)
        await self._store(lambda s: s.set_execution_state(parent.id, "running"))
        await self._mark_delivered(tasks)
        self.runtime.resume_delegated(parent.session_id, parent.id)

    async def _cancel(self, tasks: list[DelegatedTask]) -> None:
        """The parent ended without waiting: stop the children's executions running now, cancel the rest."""
        for task in tasks:
            if task.state == "running":
                active = await self._store(functools.partial(_active, child=task.child_session_id))
                for execution in active:
                    await self.runtime.stop(task.child_session_id, execution.id)
                update = TaskUpdate(state="cancelled", result=STOPPED, is_error=True)
            elif task.state == "waiting":
                update = TaskUpdate(state="cancelled", result=NOT_STARTED, is_error=True)
            else:
                continue
            await self._store(functools.partial(_update, child=task.child_session_id, update=update))
        await self._mark_delivered(tasks)

    async def _mark_delivered(self, tasks: list[DelegatedTask]) -> None:
        for task in tasks:
            await self._store(
                functools.partial(_update, child=task.child_session_id, update=TaskUpdate(delivered=True))
            )
            self._children.discard(task.child_session_id)
        self._parents.discard(tasks[0].parent_execution_id)

    def waiting(self, execution_id: str) -> bool:
        """Whether a suspended execution waits for delegated tasks (not for a user's answer)."""
        return execution_id in self._parents


def _final_answer(store: SessionStore, session_id: str) -> str:
    """The child's last answer: its newest assistant message with text on its current path."""
    page = store.history(session_id, limit=50)
    for entry in page.items:  # newest first
        if entry.kind == EntryKind.ASSISTANT and entry.text.strip():
            return entry.text
    return "(the task ended without an answer)"


def _title(brief: str) -> str:
    flat = " ".join(brief.split())
    return flat if len(flat) <= 60 else flat[:59] + "…"


def _create(store: SessionStore, *, new: NewSession) -> Session:
    return store.create_session(new)


def _active(store: SessionStore, *, child: str) -> list[Execution]:
    return store.list_executions(child, active_only=True)


def _update(store: SessionStore, *, child: str, update: TaskUpdate) -> DelegatedTask:
    return store.update_delegated_task(child, update)


class _Logged(contextlib.AbstractContextManager[None]):
    """Log an error of one step at start and go on with the others."""

    def __init__(self, what: str) -> None:
        self.what = what

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: object) -> bool:
        if isinstance(error, Exception):
            log.exception("delegation: %s failed", self.what, exc_info=error)
            return True
        return False
