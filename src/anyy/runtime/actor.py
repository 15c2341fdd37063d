"""One session's worker: it starts executions from the queue, one at a time, and serialises the work
that must not overlap (an answer resuming a suspended execution, a compaction, a navigation).

Queues never drop an item: after an execution ends, what is pending either starts (the response was
done) or stays pending, visibly (it was stopped, failed, timed out, or is waiting for an answer), until
a later request or an explicit continuation (S7).

An end that could not be written (a full disk, D1) blocks the session: what is in memory and what is on
disk must agree before anything else starts. The actor says so (a notice, ``blocked``), writes that end
again after a growing wait and at every request, and goes on once the store took it.

An actor lives only while its session has work (D13): once its last job ends with nothing queued,
nothing running and no end waiting to be written, it leaves the runtime's registry and its task ends;
the next request makes a new one. Nothing is lost by that: the queue, stops, questions and executions
are in the store; the counts that keep a stopped queue from starting on its own (S7) begin afresh, which
gives the same answer an idle actor would: nothing starts before the next request.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from anyy.api.events import Notice
from anyy.domain import queue as queue_rules
from anyy.domain.entries import Entry
from anyy.domain.errors import NotFound, StoreUnavailable
from anyy.domain.queue import Execution, Submission
from anyy.runtime.announce import Announcer
from anyy.runtime.cluster import end_leftovers
from anyy.runtime.deps import Deps
from anyy.runtime.execution import (
    OUTAGE_RETRY_FIRST,
    OUTAGE_RETRY_MAX,
    Checkpoint,
    EndState,
    ExecutionRun,
    Outcome,
    first_checkpoint,
    unwritable,
)
from anyy.storage.ownership import Claim, LeaseLost
from anyy.storage.protocol import SessionStore

Job = Callable[[], Awaitable[Any]]
Started = tuple[Execution, list[Entry], list[Submission]]  # the execution, its inputs, what stays pending
StartFn = Callable[[SessionStore], Started | None]
Begun = tuple[Started, Checkpoint | Exception | None]  # with its first checkpoint (read, failed, or left to it)
BeginFn = Callable[[SessionStore], Begun | None]
log = logging.getLogger("anyy.runtime")
SETTLE_RETRY_FIRST = 0.5  # seconds before writing a blocked end again; doubles, up to the next
SETTLE_RETRY_MAX = 5.0
SHUTDOWN_GRACE = 10.0  # seconds a stopping Gateway gives running work to settle
SHUTDOWN_NOTE = "the Gateway was stopped while this response was running; what it had said so far is kept"


class Blocked:
    """The end an execution reached that is not on disk yet, and since when (D1)."""

    def __init__(self, execution_id: str, end: EndState, since: float) -> None:
        self.execution_id = execution_id
        self.end = end
        self.since = since
        self.attempts = 1


class Actors(dict[str, "SessionActor"]):
    """The runtime's session actors by session id; ``emptied`` runs when the last one leaves (D13)."""

    def __init__(self, emptied: Callable[[], None] | None = None) -> None:
        super().__init__()
        self.emptied = emptied

    def leave(self, actor: SessionActor) -> None:
        if self.get(actor.session_id) is actor:
            del self[actor.session_id]
            if not self and self.emptied is not None:
                self.emptied()


class SessionActor:
    def __init__(self, deps: Deps, session_id: str, registry: Actors | None = None) -> None:
        self.deps = deps
        self.session_id = session_id
        self._registry = registry  # the runtime's actors by session: left when idle (D13)
        self.retired = False
        self.current: ExecutionRun | None = None
        self.exclusive: str | None = None  # "compaction" / "navigation" while one runs
        self._announce = Announcer(deps)
        self.questions: dict[str, Entry] = {}  # execution id -> the question it is suspended on
        self._jobs: asyncio.Queue[tuple[Job, asyncio.Future[Any]] | None] = asyncio.Queue()
        self._drain_queued = False
        self._task: asyncio.Task[None] | None = None
        # Requests to run the queue, counted; a stopped or failed execution absorbs those made before it
        # ended, so that only a request made afterwards starts anything again (S7).
        self._pokes = 0
        self._halted_upto = 0
        self.blocked: Blocked | None = None
        self._settle_timer: asyncio.Task[None] | None = None
        self._in_job = False
        self._released = False  # the lease was given back with the last execution's record

    @property
    def busy(self) -> bool:
        """Doing (or about to do) the session's work: holding its lease, with a shared store."""
        return self._in_job or not self._jobs.empty()

    @property
    def idle(self) -> bool:
        """Nothing to keep in memory for: no job queued or running, no execution, no end to write."""
        return (
            self._jobs.empty()
            and not self._in_job
            and self.current is None
            and self.blocked is None
            and self.exclusive is None
        )

    # -- scheduling ------------------------------------------------------------------------------
    def ensure_running(self) -> None:
        if self.retired:
            self._rejoin()
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._loop(), name=f"anyy-session-{self.session_id}")

    def poke(self) -> None:
        """Something was queued (or a continuation asked for): start the next execution if idle."""
        self._pokes += 1
        if self._drain_queued:
            return
        self._drain_queued = True
        self.submit(self._drain, detached=True)

    def submit(self, job: Job, *, detached: bool = False) -> asyncio.Future[Any]:
        """Run ``job`` after the work queued before it (results and errors come back in the future).

        ``detached``: nobody awaits it (a poke's drain), so its failure is logged, never lost silently. An
        awaited job's failure goes to its caller only, who answers it: logging it here as well put every
        client mistake in the log as an error with a traceback (D9)."""
        self.ensure_running()
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        if detached:
            future.add_done_callback(_log_unretrieved)
        self._jobs.put_nowait((job, future))
        return future

    async def aclose(self, grace: float = SHUTDOWN_GRACE) -> None:
        """A Gateway stopping: running work is settled as interrupted, its streamed text kept (D4), within
        ``grace`` seconds; then the actor ends."""
        if self._settle_timer is not None:
            self._settle_timer.cancel()
        current = self.current
        if current is not None:
            current.request_stop(note=SHUTDOWN_NOTE)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(current.finished.wait(), grace)
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _loop(self) -> None:
        while True:
            item = await self._jobs.get()
            if item is None:
                return
            job, future = item
            self._in_job = True
            try:
                result = await job()
            except Exception as exc:
                if not future.done():
                    future.set_exception(exc)
            else:
                if not future.done():
                    future.set_result(result)
            finally:
                self._in_job = False
            if self.idle and self._registry is not None:
                self._retire()
                return

    def _retire(self) -> None:
        """Idle: leave the registry and end the loop (in the same step, so no job can come in between)."""
        self.retired = True
        self._task = None
        self.questions.clear()
        if self._registry is not None:
            self._registry.leave(self)

    def _rejoin(self) -> None:
        """Work given to an actor after it left (a caller that kept it): it takes its place again, unless
        another actor serves the session now (two would run its work at once)."""
        assert self._registry is not None
        if self._registry.setdefault(self.session_id, self) is not self:
            raise RuntimeError(f"session {self.session_id}: work given to a worker that was replaced")
        self.retired = False

    # -- the queue -------------------------------------------------------------------------------
    async def _drain(self) -> None:
        self._drain_queued = False
        if self.blocked is not None and not await self.settle_blocked():
            await self._release()  # a lease the heartbeat took for this session goes back unused
            return  # still not written: nothing starts (the request stays pending, visibly)
        if self._pokes <= self._halted_upto:
            await self._read_queue()  # S7: what was queued before the stop waits for a later request
            await self._release()
            return
        try:
            owned, first = await self._claim_held(
                self._beginning(functools.partial(_start_next, session_id=self.session_id))
            )
        except LeaseLost as exc:  # taken over between the claim and the start: the new owner has the queue
            log.warning("session %s: %s", self.session_id, exc)
            await self._release()
            return
        except Exception:
            # The store failed during the claim for longer than the outage bound: a lease it may have taken
            # goes back (or, unreleased, is let go by the next heartbeat), and the item keeps its wake-up:
            # any Gateway runs it (P7). The error is logged by the caller.
            await self._release()
            raise
        if not owned:
            return  # another Gateway runs this session; it was told (a hint) and reads the queue itself
        try:
            await self._drain_owned(first)
        except LeaseLost as exc:  # taken over between the claim and a write: the new owner has the queue
            log.warning("session %s: %s", self.session_id, exc)
        finally:
            await self._release()

    async def _claim(self, start: BeginFn | None = None) -> tuple[bool, FirstStart | None]:
        """Hold the session's lease for the work about to run (always, with a store this Gateway has to
        itself); what a dead owner left running is announced as interrupted. With ``start``, the first
        start from the queue is made in the claim's unit of work (one hand-off to the store fewer)."""
        claim, first = await self.deps.owner.call(
            functools.partial(_claim_then, session_id=self.session_id, start=start)
        )
        end_leftovers(claim.leftovers)
        for execution in claim.recovered:
            self._announce.execution(execution, note=execution.note)
        return bool(claim.owned), first

    async def _claim_held(self, start: BeginFn) -> tuple[bool, FirstStart | None]:
        """:meth:`_claim` with ``start``, made again while the store cannot be reached (a lost connection,
        a database restarting), for at most the profile's ``outage_hold`` seconds (P7). A start whose commit
        went through before the loss cut its unit short has left its execution running with nothing
        recorded: the next attempt finds it (:func:`_adopted`) and runs it, so it is never left for a
        recovery to end as interrupted. Beyond the bound, the store's error is raised."""
        delay = OUTAGE_RETRY_FIRST
        since: float | None = None
        while True:
            try:
                owned, first = await self._claim(start)
                if first is not None:
                    first = FirstStart(first.take())  # the start's own error, raised here to be held too
                return owned, first
            except StoreUnavailable as exc:
                now = self.deps.clock.now()
                if since is None:
                    since = now
                    log.warning("session %s: its queue waits for the session store: %s", self.session_id, exc)
                waited = now - since
                if waited >= self.deps.settings.outage_hold:
                    raise
                await self.deps.clock.sleep(min(delay, self.deps.settings.outage_hold - waited))
                delay = min(delay * 2, OUTAGE_RETRY_MAX)

    async def _read_queue(self) -> None:
        """The queue was read and what waits there stays pending (S7): its wake-up is cleared, so that no
        Gateway starts it by itself (with a store this Gateway has to itself, nothing to clear)."""
        try:
            await self.deps.owner.call(lambda s: s.took_work(self.session_id))
        except Exception as exc:  # left set, a Gateway runs the queue later: late, never lost
            log.warning("session %s: its wake-up was not cleared: %s", self.session_id, exc)

    async def _release(self) -> None:
        """Idle again: give the lease back, so any Gateway may run the session's next work (unless the
        completed execution's record gave it back already, in its own unit of work)."""
        if self._released:
            self._released = False
            return
        if self.current is None and self.blocked is None:  # an end not written yet keeps the session here
            try:
                await self.deps.owner.call(lambda s: s.release_session(self.session_id))
            except Exception as exc:  # the store is closing: the lease runs out by itself
                log.debug("lease of %s not released: %s", self.session_id, exc)

    async def _drain_owned(self, first: FirstStart | None = None) -> None:
        """Run the queue's executions one after another; ``first``: the start the claim already made.
        Called with the lease held; the caller releases it after."""
        begin = self._beginning(functools.partial(_start_next, session_id=self.session_id))
        while True:
            if first is not None:
                begun, first = first.take(), None
            else:
                begun = await self.deps.owner.call(begin)
            if begun is None:
                return
            run, outcome = await self._run_begun(begun)
            if run.taken_over:
                # Not a stop: the session is another Gateway's now. What was sent meanwhile (here too) is not
                # held back as after a stop (S7), nor its wake-up cleared: the next claim runs it (P3, P7).
                return
            if outcome is not Outcome.DONE:
                self._halted_upto = self._pokes
                await self._read_queue()  # S7: what is pending waits for a later request, on any Gateway
                return
            if run.queue_was_empty:
                return  # seen empty when it completed; a later submission pokes again

    async def run_alone(self, submission_id: str) -> None:
        """Inside the actor: start an execution answering that one pending submission only, and let the
        rest of the queue wait (as after a restart, G3) — a schedule's run claimed before a restart (K1).
        Nothing starts when the session has an execution waiting, or when the item is no longer pending;
        a submission made meanwhile still starts the queue as usual."""
        upto = self._pokes
        try:
            if self.blocked is not None and not await self.settle_blocked():
                return
            owned, first = await self._claim_held(
                self._beginning(functools.partial(_start_one, session_id=self.session_id, submission_id=submission_id))
            )
            if not owned:
                return
            try:
                begun = first.take() if first is not None else None
                if begun is not None:
                    await self._run_begun(begun)
            except LeaseLost as exc:
                log.warning("session %s: %s", self.session_id, exc)
            finally:
                await self._release()
        except NotFound:  # the session was deleted meanwhile: nothing to start
            log.info("session %s is gone; its run %s does not start", self.session_id, submission_id)
        except LeaseLost as exc:  # taken over between the claim and the start: the new owner has the run
            log.warning("session %s: %s", self.session_id, exc)
        finally:
            self._halted_upto = max(self._halted_upto, upto)

    def _beginning(self, start: StartFn) -> BeginFn:
        return functools.partial(_begin, start=start, deps=self.deps, session_id=self.session_id)

    async def _run_begun(self, begun: Begun) -> tuple[ExecutionRun, Outcome]:
        """Announce an execution just started from the queue, and run it."""
        (execution, inputs, pending), first = begun
        self._announce.queue_now(self.session_id, pending)
        self._announce.entries(self.session_id, inputs, told=True)  # the kept context was told in the unit
        self._announce.execution(execution)
        run = ExecutionRun(self.deps, self.session_id, execution.id, release_when_done=True, first=first, inputs=inputs)
        outcome = await self._run(run, None)
        self._released = run.released
        return run, outcome

    async def _run(self, run: ExecutionRun, answer: str | None, *, delegated: bool = False) -> Outcome:
        self.current = run
        self.questions.pop(run.execution_id, None)
        try:
            try:
                if delegated:  # K2: a delegate call's result was recorded
                    outcome = await run.resume_after_result()
                else:
                    outcome = await (run.run() if answer is None else run.resume_with_answer(answer))
            except LeaseLost as exc:  # another Gateway took the session over: stop here, write nothing
                log.warning("execution %s stopped here: %s", run.execution_id, exc)
                run.taken_over = True
                return Outcome.INTERRUPTED
            if outcome is Outcome.SUSPENDED and run.question is not None:
                self.questions[run.execution_id] = run.question
            return outcome
        finally:
            self.current = None
            if run.unsettled is not None:
                self._block(run.execution_id, run.unsettled)
            run.finished.set()
            if run.pending_at_end is not None:  # read with the completion, in its unit of work
                self._announce.queue_now(self.session_id, run.pending_at_end)
            else:
                await self._announce.queue(self.session_id)

    async def resume(self, execution_id: str, answer: str | None, *, delegated: bool = False) -> Outcome:
        """Inside the actor: an answer (or, ``delegated``, a delegate call's recorded result, K2) resumes
        the suspended execution, then the queue goes on. When another Gateway holds the session, the
        answer is left for it (a durable control row)."""
        owned, _ = await self._claim()
        if not owned:
            if answer is not None:
                await self.deps.owner.call(lambda s: s.add_control(self.session_id, "answer", execution_id, answer))
            return Outcome.SUSPENDED
        try:
            run = ExecutionRun(self.deps, self.session_id, execution_id)
            outcome = await self._run(run, answer, delegated=delegated)
            if outcome is Outcome.DONE:
                self._pokes += 1
                await self._drain_owned()
            elif not run.taken_over:
                self._halted_upto = self._pokes
            return outcome
        finally:
            await self._release()

    # -- an end not written yet (D1) --------------------------------------------------------------
    def _block(self, execution_id: str, end: EndState) -> None:
        self.blocked = Blocked(execution_id, end, self.deps.clock.now())
        log.error(
            "session %s: the end of execution %s (%s) could not be written: %s",
            self.session_id,
            execution_id,
            end.state,
            end.cause,
        )
        self._announce.event(
            Notice(
                session_id=self.session_id,
                level="error",
                text=f"This response ended ({end.state}) but that could not be recorded: {end.cause} "
                "The session waits, its queue kept, and nothing new starts before. The Gateway tries again "
                "every few seconds and at every request, and goes on once it is recorded: if the disk is full, "
                "free some space.",
            )
        )
        if self._settle_timer is None or self._settle_timer.done():
            self._settle_timer = asyncio.create_task(self._retry_settle(), name=f"anyy-settle-{self.session_id}")

    async def _retry_settle(self) -> None:
        delay = SETTLE_RETRY_FIRST
        while self.blocked is not None:
            await self.deps.clock.sleep(delay)
            delay = min(delay * 2, SETTLE_RETRY_MAX)
            if self.blocked is None:
                return  # written meanwhile (at a request)
            with contextlib.suppress(Exception):  # logged by the actor's loop; the next round tries again
                await self.submit(self._settle_and_go_on)

    async def _settle_and_go_on(self) -> None:
        if self.blocked is not None and await self.settle_blocked() and self._pokes > self._halted_upto:
            await self._drain()  # requests made while blocked start now

    async def settle_blocked(self) -> bool:
        """Inside the actor: write the blocked end again; True once it is on disk (or nothing was blocked)."""
        blocked = self.blocked
        if blocked is None:
            return True
        end = blocked.end

        def write(store: SessionStore) -> Execution:
            current = store.get_execution(blocked.execution_id)
            if current.state == end.state or current.state not in ("running", "retry_wait"):
                return current  # written meanwhile (or ended by recovery): nothing more to do
            return store.set_execution_state(blocked.execution_id, end.state, error=end.error, note=end.note)  # type: ignore[arg-type]

        try:
            execution = await self.deps.owner.call(write)
        except Exception as exc:
            if not unwritable(exc):
                raise
            blocked.attempts += 1
            return False
        self.blocked = None
        self._announce.execution(execution, error=end.error, note=end.note)
        self._announce.event(
            Notice(
                session_id=self.session_id,
                level="info",
                text=f"The end of the response ({end.state}) is recorded now; the session goes on.",
            )
        )
        await self._announce.queue(self.session_id)
        return True


class FirstStart:
    """What the claim's unit of work got from starting the queue: an execution, nothing, or the error the
    start raised (raised again on the loop by ``take``, once the claim's recoveries were announced)."""

    def __init__(self, begun: Begun | None, error: Exception | None = None) -> None:
        self._begun = begun
        self._error = error

    def take(self) -> Begun | None:
        if self._error is not None:
            raise self._error
        return self._begun


def _begin(store: SessionStore, *, start: StartFn, deps: Deps, session_id: str) -> Begun | None:
    """A start from the queue and, in the same unit of work, the execution's first checkpoint, read once
    the kept context was told the inputs the start recorded (as the announcer would have told it)."""
    started = start(store)
    if started is None:
        return None
    deps.contexts.appended(session_id, started[1])
    try:
        return started, first_checkpoint(store, deps=deps, session_id=session_id)
    except Exception as exc:  # the execution started: it fails at its first checkpoint, as it would have
        return started, exc


def _claim_then(store: SessionStore, *, session_id: str, start: BeginFn | None) -> tuple[Claim, FirstStart | None]:
    """The session's claim and, once this Gateway holds it, the first start from its queue: one unit of
    work on the store's thread. Each still commits on its own, the start fenced by the lease just taken."""
    claim = store.claim_session(session_id)
    if not claim.owned or start is None:
        return claim, None
    try:
        # Its own unit within the claim's: a start cut off before its commit (a lost connection) runs
        # again on a new one (P7).
        return claim, FirstStart(store.run_unit(start))
    except Exception as exc:  # the claim stands: its recoveries are announced before this is raised
        return claim, FirstStart(None, exc)


def _start_next(store: SessionStore, *, session_id: str) -> Started | None:
    """Start the next execution from the queue, if the session is idle and anything is pending: the
    items are taken and recorded as the user's messages in the same transaction (returned with it, and
    with what stays pending)."""
    active = store.list_executions(session_id, active_only=True)
    if active:
        store.took_work(session_id)  # the queue was read: its items wait for the answer, here (P7)
        return _adopted(store, session_id, active)  # else waiting for an answer: nothing else starts meanwhile
    session = store.get_session(session_id)
    pending = store.list_submissions(session_id)
    chosen = queue_rules.inputs_to_start(pending, session.steering_mode, session.follow_up_mode)
    if not chosen:
        store.took_work(session_id)
        return None
    ids = [sub.id for sub in chosen]
    execution = store.start_execution(session_id, ids, record_inputs=True)
    entry_ids = [sub.entry_id for sub in map(store.get_submission, ids) if sub.entry_id is not None]
    left = [sub for sub in pending if sub.id not in ids]
    return execution, [store.get_entry(session_id, entry_id) for entry_id in entry_ids], left


def _start_one(store: SessionStore, *, session_id: str, submission_id: str) -> Started | None:
    """Start an execution answering only that submission, if it is still pending and the session idle."""
    active = store.list_executions(session_id, active_only=True)
    if active:
        store.took_work(session_id)
        return _adopted(store, session_id, [e for e in active if submission_id in e.submission_ids])
    if store.get_submission(submission_id).state != "pending":
        store.took_work(session_id)
        return None
    execution = store.start_execution(session_id, [submission_id], record_inputs=True)
    taken = store.get_submission(submission_id)
    inputs = [store.get_entry(session_id, taken.entry_id)] if taken.entry_id is not None else []
    return execution, inputs, store.list_submissions(session_id)


def _adopted(store: SessionStore, session_id: str, active: list[Execution]) -> Started | None:
    """Called with the session's lease held and nothing of it running here: an execution of ``active``
    left running with nothing recorded of it (P7) — its start committed and the store's connection broke
    before it ran, or a crash cut off unattended work before its first model or tool call — is started
    now, from its beginning, with the inputs it took. Anything else active waits (an answer, its end)."""
    for execution in active:
        if execution.state == "running" and not store.execution_begun(execution.id):
            taken = [store.get_submission(submission_id) for submission_id in execution.submission_ids]
            inputs = [store.get_entry(session_id, sub.entry_id) for sub in taken if sub.entry_id is not None]
            log.info("session %s: execution %s had not begun; it runs now", session_id, execution.id)
            return execution, inputs, store.list_submissions(session_id)
    return None


def _log_unretrieved(future: asyncio.Future[Any]) -> None:
    if future.cancelled():
        return
    exc = future.exception()
    if exc is not None:
        log.error("session work failed: %s", exc, exc_info=exc)
