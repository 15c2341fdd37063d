"""The runtime's face: what the Gateway calls. One :class:`SessionActor` per session does the work.

Everything here is bound to ids the caller names: a stop names the execution it captured (S6), an
answer names the execution that asked. Operations that need an idle session (compaction by hand,
navigation, tool configuration, reload) are refused with a conflict that says to wait or stop.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Sequence
from typing import Any, Literal

import msgspec

from anyy.api.events import RetryWaiting, ToolStarted
from anyy.api.sessions import FilesDiff, FilesRewind
from anyy.domain.compaction import unresolved_calls
from anyy.domain.context import ContextItem
from anyy.domain.entries import (
    BranchSummaryData,
    Entry,
    EntryKind,
    ModelChangeData,
    NewEntry,
    ToolResultData,
    selection_at,
)
from anyy.domain.errors import Conflict, InvalidInput, NotFound
from anyy.domain.queue import FINAL_SUBMISSION_STATES, Execution, NewSubmission, Submission
from anyy.domain.sessions import Goal, NewSession, Session, SessionPatch
from anyy.runtime import file_captures
from anyy.runtime.actor import Actors, SessionActor
from anyy.runtime.announce import Announcer
from anyy.runtime.bus import Subscription
from anyy.runtime.cluster import Hooks, Membership
from anyy.runtime.compactor import Compactor
from anyy.runtime.delegation import TOOL as DELEGATE_TOOL
from anyy.runtime.delegation import Delegations
from anyy.runtime.deps import Deps, ModelSource
from anyy.runtime.execution import ExecutionRun, Outcome
from anyy.runtime.host import RECOVERY_NOTE
from anyy.runtime.memory import Trimmer
from anyy.runtime.residents import Residents
from anyy.runtime.session_writes import SessionWrites
from anyy.runtime.titles import Titles, name_from_first
from anyy.runtime.workspaces import chosen_workspace
from anyy.storage.ownership import Control, OwnedElsewhere
from anyy.storage.protocol import SessionStore
from anyy.tools.approvals import DECISIONS, QUESTION_PREFIX
from anyy.tools.process import end_leftover

log = logging.getLogger("anyy.runtime")
# The store adds what it kept of the answer (D4); the user's messages and everything recorded before stay.
NO_ANSWER = "Not answered: the user stopped the response instead of answering."
NOT_WAITED = "Stopped: the user stopped the response while it waited for the delegated tasks (they were stopped too)."
GoalAction = Literal["set", "status", "pause", "resume", "clear"]
# A submission is settled for a waiting client once it has an outcome or waits for an answer.
SETTLED_SUBMISSION_STATES = FINAL_SUBMISSION_STATES | {"suspended"}


class NavigateResult(msgspec.Struct, kw_only=True):
    session: Session
    draft: str | None  # the user message moved before, for the editor (T2)
    summary_applied: bool
    note: str | None
    files: FilesRewind | None = None  # W3: the workspace's files, previewed or restored


class ReloadStep(msgspec.Struct, kw_only=True):
    step: str
    applied: bool
    detail: str


class Footprint(msgspec.Struct, kw_only=True):
    """Counts of what the runtime keeps per session (D13)."""

    actors: int  # sessions with a worker in memory: those with work now
    contexts: int  # sessions whose model context is kept (bounded, least recently used dropped)
    subscriptions: int  # event subscriptions open (connections, waits, the runtime's own watchers)
    watched: int  # sessions another Gateway runs whose changes this one follows (shared stores)
    trims: int  # times the heap was handed back to the system after the last session's work ended


class Runtime(SessionWrites):
    def __init__(self, deps: Deps) -> None:
        self.deps = deps
        self._actors = Actors()
        self.trimmer = Trimmer(idle=lambda: not self._actors)  # free heap pages go back once work ends (D13)
        self._actors.emptied = self.trimmer.soon
        self._compactor = Compactor(deps)
        self._announce = Announcer(deps)
        self.delegations = Delegations(self)  # K2: the delegate tool's children
        deps.delegator = self.delegations.delegator
        self.residents = Residents(self)  # K3: long-lived sessions woken by heartbeats and webhooks
        self.titles = Titles(deps)
        hooks = Hooks(
            poke=self._poke, woken=self._woken, lost=self._lost, control=self._apply_control, recovered=self._recovered
        )
        self.cluster = Membership(deps, hooks, RECOVERY_NOTE)
        self._upkeep: asyncio.Task[int] | None = None

    # -- lifecycle -------------------------------------------------------------------------------
    async def start(self) -> list[Execution]:
        """After a restart: work that was running is marked interrupted, queues stay as they are, and
        nothing is started (G3). With a store several Gateways share, this one joins the service first, and
        recovers only what Gateways that died left behind (P5)."""
        await self.cluster.join()
        if not self.cluster.joined:
            # Programs tools started that outlived the crash are ended first (their pid checked against the
            # recorded start time: a reused pid is left alone), then recorded with what they printed (D3).
            # Not with a shared store: the processes listed may be another live Gateway's, or another
            # host's; there, the Gateway that takes a dead owner's session over ends those the owner left
            # on its own host (``anyy.runtime.cluster.end_leftovers``).
            for left in await self.deps.owner.call(lambda s: s.leftover_tools()):
                if end_leftover(left.pid, left.started):
                    log.warning("ended the processes of tool call %s, left by a stopped Gateway", left.call_id)
        found: list[Execution] = await self.deps.owner.call(lambda s: s.recover_interrupted(RECOVERY_NOTE))
        # Unattended work that had not begun (a schedule's run, a resident's wake, a delegated task, taken
        # but before its first model or tool call) is left running by the recovery: it runs now, alone (P7).
        recovered = [e for e in found if e.state != "running"]
        for execution in recovered:
            self._announce.execution(execution, note=execution.note or RECOVERY_NOTE)
        if self.deps.tool_servers is not None:  # MCP servers start in the background; no turn waits here (N1)
            self.deps.tool_servers.start()
        await self.delegations.start()  # K2: children cut short resume, finished calls are delivered
        await self.residents.start()  # K3: heartbeats due (or missed) fire, each once
        for execution in found:
            if execution.state == "running" and execution.submission_ids:
                log.info("execution %s of session %s had not begun: it runs now", execution.id, execution.session_id)
                self.start_alone(execution.session_id, execution.submission_ids[0])
        # W4: captures no session reaches are released beside the work, never in its way.
        self._upkeep = asyncio.create_task(file_captures.release_unreached(self.deps), name="capture-upkeep")
        return recovered

    async def aclose(self) -> None:
        if self._upkeep is not None and not self._upkeep.done():
            with contextlib.suppress(Exception):
                await self._upkeep  # a git run in a thread: waited for, not abandoned mid-write
        await self.delegations.aclose()
        await self.residents.aclose()
        await self.titles.aclose()
        # Together: each settles its running work (D4) within the same grace.
        await asyncio.gather(*(actor.aclose() for actor in list(self._actors.values())))
        self._actors.clear()
        self.trimmer.cancel()
        await self.cluster.leave()
        if self.deps.tool_servers is not None:
            await self.deps.tool_servers.aclose()
        if self.deps.hooks is not None:
            await self.deps.hooks.aclose()  # execution_end hooks still running (each bounded by its timeout)
        # The providers' HTTP clients, closed on this loop: left open, an SDK client closes itself when it
        # is collected, on whatever loop runs then (a later one, already closed, fails there).
        close_models = getattr(self.deps.models, "aclose", None)
        if close_models is not None:
            await close_models()

    def _actor(self, session_id: str) -> SessionActor:
        """The session's worker, made when it has work; it leaves by itself once idle (D13). Give it its
        work in the same step (no ``await`` in between): an idle actor kept across one may have left."""
        actor = self._actors.get(session_id)
        if actor is None:
            actor = self._actors[session_id] = SessionActor(self.deps, session_id, self._actors)
        return actor

    def footprint(self) -> Footprint:
        """What the runtime holds in memory now, per session (D13): it returns to nothing when work ends."""
        return Footprint(
            actors=len(self._actors),
            contexts=len(self.deps.contexts),
            subscriptions=self.deps.bus.count(),
            watched=self.cluster.watched(),
            trims=self.trimmer.trims,
        )

    def subscribe(self, session_id: str | None = None) -> Subscription:
        """The events of one session (or of every session with ``None``), as the runtime announces them."""
        return self.deps.bus.subscribe(session_id)

    async def watch(self, session_id: str | None) -> None:
        """After :meth:`subscribe`: with several Gateways, what another one does in the session is
        announced here too (from what it wrote; see ``anyy.runtime.cluster``)."""
        await self.cluster.watch(session_id)

    async def running_anywhere(self, session_id: str) -> str | None:
        """The running execution, here or on the Gateway that owns the session."""
        local = self.running_execution(session_id)
        if local is not None or not self.cluster.joined:
            return local
        active = await self.deps.owner.call(lambda s: s.list_executions(session_id, active_only=True))
        return next((e.id for e in active if e.state in ("running", "retry_wait")), None)

    # -- the service (several Gateways): what the membership asks of the runtime -----------------
    def _poke(self, session_id: str) -> bool:
        """Another Gateway queued work for the session. Only a Gateway busy with it (the owner) needs to
        look again (True: it will): an idle session was claimed by the Gateway that took the item."""
        actor = self._actors.get(session_id)
        if actor is not None and actor.busy:
            actor.poke()
            return True
        return False

    def _woken(self, session_id: str) -> None:
        """The heartbeat claimed the session for an item its dead owner never saw: run the queue (P5)."""
        self._actor(session_id).poke()

    def _lost(self, session_id: str) -> None:
        actor = self._actors.get(session_id)
        if actor is not None and actor.current is not None:
            actor.current.request_stop()  # its next write is refused anyway; stop sooner

    def _recovered(self, execution: Execution) -> None:
        self._announce.execution(execution, note=RECOVERY_NOTE)

    async def _apply_control(self, control: Control) -> None:
        if control.kind == "answer":
            await self.answer(control.session_id, control.execution_id, control.text)
        else:
            await self.stop(control.session_id, control.execution_id, relay=False)

    def _current(self, session_id: str) -> ExecutionRun | None:
        """The execution this Gateway runs for the session now, if any."""
        actor = self._actors.get(session_id)
        return actor.current if actor is not None else None

    def running_execution(self, session_id: str) -> str | None:
        current = self._current(session_id)
        return current.execution_id if current is not None else None

    def retry_wait(self, session_id: str) -> tuple[RetryWaiting, float] | None:
        """The running execution's retry wait (for a client that joins during it): the event that announced
        it and the seconds left."""
        current = self._current(session_id)
        if current is None or current.retry_wait is None:
            return None
        waiting, until = current.retry_wait
        return waiting, max(0.0, until - self.deps.clock.now())

    def blocked(self, session_id: str) -> tuple[str, str, str, float] | None:
        """An execution whose end could not be written yet (D1): its id, the end it reached, why the write
        failed, and for how many seconds the session has been waiting on it."""
        actor = self._actors.get(session_id)
        found = actor.blocked if actor is not None else None
        if found is None:
            return None
        return found.execution_id, found.end.state, found.end.cause, self.deps.clock.now() - found.since

    def live_text(self, session_id: str) -> str:
        """What the model has streamed so far in the running pass (for a client that joins late)."""
        current = self._current(session_id)
        return current.partial_text if current is not None else ""

    def running_tools(self, session_id: str) -> list[ToolStarted]:
        """The tool calls the running execution has started and not finished, oldest first (for a client
        that joins late)."""
        current = self._current(session_id)
        return list(current.running_tools.values()) if current is not None else []

    # -- input -----------------------------------------------------------------------------------
    def announce_entries(self, session_id: str, entries: list[Entry]) -> None:
        """Tell the session's clients of entries written outside an execution (a delegated task's result)."""
        self._announce.entries(session_id, entries)

    def resume_delegated(self, session_id: str, execution_id: str) -> None:
        """Resume a parent's execution that waited for its delegated tasks (K2), on its session's worker."""
        actor = self._actor(session_id)
        actor.submit(lambda: actor.resume(execution_id, None, delegated=True))

    async def submit(self, session_id: str, new: NewSubmission) -> Submission:
        """Accept an input: durable before this returns; it starts at once when the session is idle."""
        listened = self.deps.bus.listened(session_id)

        def add(store: SessionStore) -> tuple[Submission, list[Submission] | None, Session | None]:
            added = store.add_submission(session_id, new)
            try:  # committed: from here on the send is acknowledged, whatever the store does next (P7)
                named = name_from_first(store, session_id, new)  # U1: the first message names the session
                return added, store.list_submissions(session_id) if listened else None, named
            except Exception as exc:  # e.g. the store's connection lost right after the commit
                log.warning("session %s: send %s kept, not yet announced: %s", session_id, added.id, exc)
                return added, None, None

        submission, pending, named = await self.deps.owner.call(add)
        self._accepted(submission, pending, named)
        return submission

    async def start_session(self, spec: NewSession, new: NewSubmission) -> tuple[Session, Submission]:
        """A new session with its first message (U1), both written in one transaction or neither; its
        settings are checked first (:func:`chosen_model`, the tools). A retry with the same key (D8) gets
        the session and submission the first one made."""
        spec = self.placed(spec)
        self.deps.models.resolve(spec.provider, spec.model, None)
        enabled = spec.tools.get("enabled")
        if isinstance(enabled, list):  # MCP names are checked against the configured servers: no wait (N1)
            self.deps.tools.tools_for(enabled, codemode=bool(spec.tools.get("codemode")))  # unknown: InvalidInput

        def add(store: SessionStore) -> tuple[Session, Submission, list[Submission] | None, Session | None]:
            session, added = store.start_session(spec, new)
            try:  # committed: the send is acknowledged, whatever the store does next (P7)
                named = name_from_first(store, session.id, new)  # a retry finds it named: None
                return session, added, store.list_submissions(session.id), named
            except Exception as exc:  # e.g. the store's connection lost right after the commit
                log.warning("session %s: its first send kept, not yet named: %s", session.id, exc)
                return session, added, None, None

        session, submission, pending, named = await self.deps.owner.call(add)
        self._accepted(submission, pending if self.deps.bus.listened(session.id) else None, named)
        return named or session, submission

    def _accepted(self, submission: Submission, pending: list[Submission] | None, named: Session | None) -> None:
        """What follows an accepted input: the queue announced, the session named, its actor poked."""
        session_id = submission.session_id
        if pending is not None:
            self._announce.queue_now(session_id, pending)
        if named is not None:
            self._announce.renamed(named)
            self.titles.refine_after(named, submission.id)
        self._actor(session_id).poke()

    async def start_queued(self, session_id: str) -> None:
        """Input another part of the Gateway queued in the store itself (a schedule's run, claimed with
        its prompt in one transaction): announce the queue, then start it if the session is idle."""
        if self.deps.bus.listened(session_id):
            pending = await self.deps.owner.call(lambda s: s.list_submissions(session_id))
            self._announce.queue_now(session_id, pending)
        self._actor(session_id).poke()

    def start_alone(self, session_id: str, submission_id: str) -> None:
        """Start that one pending submission, if the session is idle, and not the rest of its queue: a
        schedule's run claimed before a restart (K1), while the items a restart left pending wait (G3).
        Returns at once; the work runs in the session's actor."""
        actor = self._actor(session_id)
        actor.submit(lambda: actor.run_alone(submission_id), detached=True)

    async def continue_queue(self, session_id: str) -> None:
        """An explicit continuation: after a stop or a failure, pending items start again (on the Gateway
        that owns the session, told by a hint, or here)."""
        await self.deps.owner.call(lambda s: s.get_session(session_id))
        await self.deps.owner.call(lambda s: _resume_after_budget(s, session_id))
        await self.deps.owner.call(lambda s: s.hint(session_id, "work"))
        self._actor(session_id).poke()

    # -- stops -----------------------------------------------------------------------------------
    async def _execution_of(self, session_id: str, execution_id: str) -> Execution:
        execution: Execution = await self.deps.owner.call(lambda s: s.get_execution(execution_id))
        if execution.session_id != session_id:
            raise NotFound(f"no execution {execution_id!r} in session {session_id!r}")
        return execution

    async def stop(self, session_id: str, execution_id: str, *, relay: bool = True) -> bool:
        """Stop the execution the caller captured; False when it had already ended (S6: a late stop
        never reaches a later turn). Running on another Gateway: a durable stop naming it is left for that
        Gateway's next checkpoint (``relay``)."""
        actor = self._actors.get(session_id)
        if actor is not None and actor.current is not None and actor.current.execution_id == execution_id:
            actor.current.request_stop()
            return True
        if actor is not None and actor.blocked is not None and actor.blocked.execution_id == execution_id:
            # It has ended, only its end is not on disk yet (D1): write it now rather than wait for the timer.
            await actor.submit(actor.settle_blocked)
            return False
        execution = await self._execution_of(session_id, execution_id)
        if execution.state in ("running", "retry_wait") and relay and self.cluster.joined:
            await self.deps.owner.call(lambda s: s.add_control(session_id, "stop", execution_id))
            return True
        if execution.state != "suspended":
            return False
        try:
            return await self._stop_suspended(session_id, execution_id)
        except OwnedElsewhere:
            if not relay:
                raise
            await self.deps.owner.call(lambda s: s.add_control(session_id, "stop", execution_id))
            return True

    async def _stop_suspended(self, session_id: str, execution_id: str) -> bool:
        actor = self._actors.get(session_id)
        # Waiting for an answer: settle it (the question gets a result) and end it as interrupted.
        if actor is not None:
            actor.questions.pop(execution_id, None)
        context = await self.deps.owner.call(lambda s: s.context(session_id))
        results = [
            NewEntry(
                kind=EntryKind.TOOL_RESULT,
                text=NOT_WAITED if n == DELEGATE_TOOL else NO_ANSWER,
                data=ToolResultData(call_id=c, name=n, synthetic=True),
            )
            for c, n, _ in unresolved_calls(context.items)
        ]
        if results:
            appended = await self.deps.owner.call(lambda s: s.append_entries(session_id, results))
            self._announce.entries(session_id, appended)
        ended = await self.deps.owner.call(
            lambda s: s.set_execution_state(execution_id, "interrupted", note="stopped while waiting for an answer")
        )
        self._announce.execution(ended)
        return True

    async def wait_settled(self, session_id: str, execution_id: str) -> None:
        """Return once that execution is no longer running (at once if it is not)."""
        actor = self._actors.get(session_id)
        if actor is not None and actor.current is not None and actor.current.execution_id == execution_id:
            await actor.current.finished.wait()

    async def wait_submission(self, submission_id: str, timeout: float) -> Submission:
        """The submission once it has an outcome or is suspended on a question, or as it is after
        ``timeout`` seconds. Only the waiting ends there (C7): the work goes on. It also ends when the end
        of the submission's execution cannot be written (D1): the caller hears it then, not at its timeout
        (once: a wait that begins while it is so waits as usual, so a client waiting again never spins)."""
        owner = self.deps.owner
        submission: Submission = await owner.call(lambda s: s.get_submission(submission_id))
        events = self.deps.bus.subscribe(submission.session_id)
        deadline = asyncio.get_running_loop().time() + max(timeout, 0.0)
        try:
            # Read again once subscribed: an end recorded and announced while the first read was handed to
            # the store's thread (a busy Gateway, a stop at once) would otherwise be waited for until timeout.
            submission = await owner.call(lambda s: s.get_submission(submission_id))
            blocked_before = self.blocked_on(submission) is not None
            while not self._settled(submission):
                left = deadline - asyncio.get_running_loop().time()
                if left <= 0:
                    break
                try:
                    await asyncio.wait_for(events.get(), left)
                except TimeoutError:
                    break
                submission = await owner.call(lambda s: s.get_submission(submission_id))
                if not blocked_before and self.blocked_on(submission) is not None:
                    break
        finally:
            events.close()
        return submission

    def blocked_on(self, submission: Submission) -> tuple[str, str, str, float] | None:
        """What :meth:`blocked` says, when the execution whose end is not written yet took ``submission``."""
        found = self.blocked(submission.session_id) if submission.state == "taken" else None
        return found if found is not None and found[0] == submission.execution_id else None

    def _settled(self, submission: Submission) -> bool:
        """Settled for a waiting client; an execution that waits for its delegated tasks (K2) is not: it
        goes on by itself."""
        if submission.state == "suspended" and submission.execution_id is not None:
            return not self.delegations.waiting(submission.execution_id)
        return submission.state in SETTLED_SUBMISSION_STATES

    async def cancel_retry_wait(self, session_id: str, execution_id: str) -> bool:
        """Cancel only the wait before a retry (S4); the queue is left as it is."""
        actor = self._actors.get(session_id)
        if actor is None or actor.current is None or actor.current.execution_id != execution_id:
            await self._execution_of(session_id, execution_id)
            return False
        return actor.current.cancel_retry_wait()

    async def retry_now(self, session_id: str, execution_id: str) -> bool:
        """End the wait before a retry early: the model is called again at once."""
        actor = self._actors.get(session_id)
        if actor is None or actor.current is None or actor.current.execution_id != execution_id:
            await self._execution_of(session_id, execution_id)
            return False
        return actor.current.retry_now()

    # -- clarification ---------------------------------------------------------------------------
    async def answer(self, session_id: str, execution_id: str, text: str) -> None:
        """Answer the question a suspended execution asked; it resumes (in the background)."""
        if not text.strip():
            raise InvalidInput("the answer is empty: write something for the agent to go on with")
        execution = await self._execution_of(session_id, execution_id)
        if execution.state != "suspended":
            raise Conflict(f"execution {execution_id} is {execution.state}: it is not waiting for an answer")
        if self.delegations.waiting(execution_id):
            raise Conflict(
                f"execution {execution_id} waits for its delegated tasks, not for an answer: "
                "it goes on when they end (stop it to stop them)"
            )
        actor = self._actor(session_id)
        actor.submit(lambda: actor.resume(execution_id, text), detached=True)

    async def approve(self, session_id: str, execution_id: str, decision: str) -> None:
        """Answer the approval request a suspended execution waits on (N2): ``once`` runs the call,
        ``session`` also allows the same call for the rest of the session, ``deny`` refuses it."""
        if decision not in DECISIONS:
            raise InvalidInput(f"decision must be one of {', '.join(DECISIONS)}, not {decision!r}")
        recent = await self.deps.owner.call(lambda s: s.history(session_id, limit=50))
        question = next((e for e in recent.items if e.kind == EntryKind.QUESTION), None)
        if question is None or not question.text.startswith(QUESTION_PREFIX):
            raise Conflict("this session is not waiting for an approval: a question is answered with session.answer")
        await self.answer(session_id, execution_id, decision)

    # -- operations on an idle session -----------------------------------------------------------
    async def _require_idle(self, session_id: str, what: str, *, queue_too: bool = False) -> None:
        actor = self._actors.get(session_id)
        owner = self.deps.owner
        active = await owner.call(lambda s: s.list_executions(session_id, active_only=True))
        running = actor is not None and actor.current is not None and actor.current.state in ("running", "retry_wait")
        busy = running or (actor is not None and actor.exclusive is not None) or active
        pending = await owner.call(lambda s: s.list_submissions(session_id)) if queue_too else []
        if actor is not None and actor.blocked is not None:
            raise Conflict(
                f"{what} needs an idle session, and the end of its last response could not be recorded yet "
                f"({actor.blocked.end.cause}): free some disk space; it is written again on its own"
            )
        if busy or pending:
            cause = "a response is running or waiting for an answer" if busy else "items are waiting in its queue"
            raise Conflict(f"{what} needs an idle session, and {cause}: wait for it to finish, or stop it first")

    async def _exclusive(self, session_id: str, what: str, job: Any) -> Any:
        await self._require_idle(session_id, what)
        actor = self._actor(session_id)  # after the await: an idle actor may have left meanwhile (D13)

        async def guarded() -> Any:
            await self._require_idle(session_id, what)
            actor.exclusive = what
            try:
                return await job()
            finally:
                actor.exclusive = None

        return await actor.submit(guarded)

    async def compact(self, session_id: str) -> bool:
        """Summarise the older context now (R5); False (and a notice) when nothing was applied."""
        result: bool = await self._exclusive(
            session_id, "compaction", lambda: self._compactor.compact(session_id, reason="asked for")
        )
        return result

    async def navigate(
        self,
        session_id: str,
        entry_id: int | None,
        *,
        summarize: bool = False,
        before: bool = False,
        files: str = "keep",
        overwrite_hand_edits: bool = False,
        conversation: bool = True,
    ) -> NavigateResult:
        """Move the head (durably) to an entry of the tree (T1, T2). ``before`` moves to just before
        it and hands its text back as a draft; ``summarize`` carries a summary of the branch left.
        It starts no response, and earlier and sibling branches stay in the tree. ``files`` (W3):
        ``preview`` moves nothing and says what restoring the workspace would change; ``restore``
        restores it to its state at the entry (hand edits kept unless ``overwrite_hand_edits``); with
        ``conversation`` False only the files are restored and the head stays."""
        if not conversation and files != "restore":
            raise InvalidInput('conversation: false restores the files only: give files: "restore" with it')

        async def job() -> NavigateResult:
            owner = self.deps.owner
            old_path: list[Entry] = await owner.call(lambda s: s.path(session_id))
            target = await owner.call(lambda s: s.get_entry(session_id, entry_id)) if entry_id is not None else None
            draft = None
            new_head = entry_id
            if before and target is not None:
                if target.kind != EntryKind.USER:
                    raise InvalidInput("only a user message can be moved before (its text comes back as a draft)")
                draft, new_head = target.text, target.parent
            if files == "preview":
                shown = await file_captures.preview(self.deps, session_id, new_head)
                current: Session = await owner.call(lambda s: s.get_session(session_id))
                return NavigateResult(session=current, draft=draft, summary_applied=False, note=None, files=shown)
            rewound = None
            if files == "restore":  # before the head moves: a refused restore moves nothing
                leaving = old_path[-1].id if old_path else None
                rewound = await file_captures.restore(
                    self.deps, session_id, new_head, leaving=leaving, overwrite_hand_edits=overwrite_hand_edits
                )
                if not conversation:  # the files only: the conversation stays where it is
                    current = await owner.call(lambda s: s.get_session(session_id))
                    return NavigateResult(session=current, draft=draft, summary_applied=False, note=None, files=rewound)
            new_path: list[Entry] = await owner.call(lambda s: s.path(session_id, to=new_head)) if new_head else []
            shared = {e.id for e in new_path}
            branch = [e for e in old_path if e.id not in shared]
            summary, note = None, None
            if summarize:
                summary, note = await self._compactor.branch_summary(session_id, [_as_item(e) for e in branch])
            session: Session = await owner.call(lambda s: s.set_head(session_id, new_head))
            self.deps.contexts.forget(session_id)  # another branch: the kept context is built again
            restored = selection_at(old_path, new_path)
            if restored is not None and restored != (session.provider, session.model, session.effort):
                provider, model, effort = restored  # the selection that applied there (M2, D12)
                patch = SessionPatch(provider=provider, model=model, effort=effort)
                session = await owner.call(lambda s: s.update_session(session_id, patch))
                await self._announce.queue(session_id)  # says the settings changed
            if summary is not None and old_path:
                entry = NewEntry(
                    kind=EntryKind.BRANCH_SUMMARY, text=summary, data=BranchSummaryData(from_entry=old_path[-1].id)
                )
                appended = await owner.call(lambda s: s.append_entries(session_id, [entry]))
                self._announce.entries(session_id, appended)
                session = await owner.call(lambda s: s.get_session(session_id))
            return NavigateResult(
                session=session,
                draft=draft,
                summary_applied=summary is not None,
                note=None if note is None else f"No branch summary: {note}.",
                files=rewound,
            )

        result: NavigateResult = await self._exclusive(session_id, "navigation", job)
        return result

    async def files_diff(self, session_id: str, *, entry_id: int | None, since: int | None) -> FilesDiff:
        """What the agent changed in the session's workspace (W3): see :func:`file_captures.files_diff`."""
        return await file_captures.files_diff(self.deps, session_id, entry_id=entry_id, since=since)

    async def configure_tools(self, session_id: str, enabled: Sequence[str], *, codemode: bool) -> Session:
        """Choose the session's tools (M3, M4): only when nothing runs, waits or is being admitted."""
        self.deps.tools.tools_for(list(enabled), codemode=codemode)  # unknown names: InvalidInput

        async def job() -> Session:
            await self._require_idle(session_id, "configuring tools", queue_too=True)
            patch = SessionPatch(tools={"enabled": list(enabled), "codemode": codemode})
            session: Session = await self.deps.owner.call(lambda s: s.update_session(session_id, patch))
            return session

        await self._require_idle(session_id, "configuring tools", queue_too=True)
        result: Session = await self._actor(session_id).submit(job)
        return result

    async def set_workspace(self, session_id: str, workspace: str) -> Session:
        """Move the session to another workspace (W1): only while nothing runs, waits or is queued, since a
        response in progress works in the old one. Checked as at creation (it exists here, under the roots)."""
        chosen = chosen_workspace(workspace, self.deps.workspaces, self.deps.workdir)
        what = "changing the workspace"

        async def job() -> Session:
            await self._require_idle(session_id, what, queue_too=True)
            patch = SessionPatch(workspace=chosen)
            session: Session = await self.deps.owner.call(lambda s: s.update_session(session_id, patch))
            return session

        await self._require_idle(session_id, what, queue_too=True)
        result: Session = await self._actor(session_id).submit(job)
        await self._announce.queue(session_id)  # says the settings changed
        return result

    async def set_model(
        self, session_id: str, *, provider: str | None = None, model: str | None = None, effort: str | None = None
    ) -> Session:
        """Change this session's provider, model or effort (M1); recorded as a model-change entry and
        used from the next model call on."""
        models = self.deps.models

        def apply(store: SessionStore) -> tuple[Session, list[Entry]]:
            # Read, check and write in one unit of work on the store's thread: two changes sent at once
            # (effort, then model) each keep what the other set.
            current = store.get_session(session_id)
            new_provider, new_model, new_effort = chosen_model(models, current, provider, model, effort)
            store.update_session(session_id, SessionPatch(provider=new_provider, model=new_model, effort=new_effort))
            entry = NewEntry(
                kind=EntryKind.MODEL_CHANGE,
                text=f"{new_provider}/{new_model}" + (f" ({new_effort})" if new_effort else ""),
                data=ModelChangeData(
                    provider=new_provider,
                    model=new_model,
                    effort=new_effort,
                    previous=[current.provider, current.model, current.effort],
                ),
            )
            appended = store.append_entries(session_id, [entry])
            return store.get_session(session_id), appended

        session, appended = await self.deps.owner.call(apply)
        await self._announce.queue(session_id)
        self._announce.entries(session_id, appended)
        return session

    # -- goals (R2) and reload (R1) --------------------------------------------------------------
    async def goal(self, session_id: str, action: GoalAction, text: str | None = None) -> Goal | None:
        """Read or change the session's goal. It starts, stops and schedules nothing."""
        session: Session = await self.deps.owner.call(lambda s: s.get_session(session_id))
        goal = session.goal
        if action == "status":
            return goal
        if action == "set":
            if not text or not text.strip():
                raise InvalidInput("a goal needs text")
            goal = Goal(text=text.strip(), state="active")
        elif action in ("pause", "resume"):
            if goal is None:
                raise Conflict("this session has no goal: set one first")
            goal = Goal(text=goal.text, state="paused" if action == "pause" else "active")
        elif action == "clear":
            goal = None
        else:
            raise InvalidInput(f"unknown goal action {action!r}: use set, status, pause, resume or clear")
        updated: Session = await self.deps.owner.call(lambda s: s.update_session(session_id, SessionPatch(goal=goal)))
        return updated.goal

    async def reload(self, session_id: str) -> list[ReloadStep]:
        """Refresh an idle session from the current settings and resources, keeping its history, tools
        and queue. Steps run in order; one that fails does not undo those before it (R1)."""
        await self._require_idle(session_id, "reload")
        session: Session = await self.deps.owner.call(lambda s: s.get_session(session_id))
        steps: list[ReloadStep] = []

        def attempt(step: str, action: Any) -> None:
            try:
                detail = action()
            except Exception as exc:
                steps.append(ReloadStep(step=step, applied=False, detail=f"{type(exc).__name__}: {exc}"))
            else:
                steps.append(ReloadStep(step=step, applied=True, detail=str(detail)))

        attempt("settings", lambda: self.deps.reload_settings() if self.deps.reload_settings else "unchanged")
        attempt("role and memory", lambda: f"{len(self.deps.system_prompt(session))} characters of system prompt")
        attempt("model", lambda: "/".join(self.deps.models.resolve(session.provider, session.model, None)))
        if self.deps.tool_servers is not None:  # MCP servers restarted as changed and listed again (N1)
            steps.append(
                ReloadStep(
                    step="tool servers",
                    applied=True,
                    detail=await self.deps.tool_servers.refresh(self.deps.settings.mcp_wait),
                )
            )
        return steps


def _as_item(entry: Entry) -> ContextItem:
    data = (
        msgspec.json.encode(entry.data).decode() if entry.kind in (EntryKind.TOOL_CALL, EntryKind.TOOL_RESULT) else None
    )
    return (entry.id, int(entry.kind), entry.text, data)


__all__ = ["Footprint", "NavigateResult", "Outcome", "ReloadStep", "Runtime"]


def chosen_model(
    models: ModelSource, current: Session | NewSession, provider: str | None, model: str | None, effort: str | None
) -> tuple[str, str, str]:
    """The provider, model and effort a change makes of ``current``'s (None keeps one): a provider changed
    alone takes its first listed model. An unknown provider or model is an error (M1)."""
    new_provider = current.provider if provider is None else provider
    new_model = current.model if model is None else model
    if model is None and new_provider != current.provider:
        new_model = _default_model(models, new_provider)  # never the old provider's model name
    models.resolve(new_provider, new_model, None)
    return new_provider, new_model, current.effort if effort is None else effort


def _default_model(models: ModelSource, provider: str) -> str:
    """The model a session gets when only its provider is changed: the first the provider lists; a
    provider that accepts any name has no default, so the person is asked to name one."""
    offered = models.models(provider)
    if offered:
        return offered[0]
    raise InvalidInput(
        f"the provider {provider!r} lists no models, so it needs a model name too: give both "
        f"(TUI: /provider {provider}, then /model NAME; RPC: session.settings with provider and model; "
        f"anyy chat --provider {provider} --model NAME), or list its models in [providers.{provider}] models"
    )


RESUME_AFTER_BUDGET = "Go on where you stopped: the budget was raised."


def _resume_after_budget(store: SessionStore, session_id: str) -> None:
    """A continuation after a budget stopped the session (Y2) with nothing queued: its last message is
    still unanswered, so a prompt asks the model to go on (checked against the budgets like any call)."""
    last = store.last_execution(session_id)
    if last is not None and last.state == "budget_exhausted" and not store.list_submissions(session_id):
        store.add_submission(session_id, NewSubmission(text=RESUME_AFTER_BUDGET))
