"""One session's worker: it starts executions from the queue, one at a time, and serialises the work
that must not overlap (an answer resuming a suspended execution, a compaction, a navigation).

Queues never drop an item: after an execution ends, what is pending either starts (the response was
done) or stays pending, visibly (it was stopped, failed, timed out, or is waiting for an answer), until
a later request or an explicit continuation (S7).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from anyy.domain import queue as queue_rules
from anyy.domain.entries import Entry
from anyy.domain.queue import Execution, Submission
from anyy.runtime.announce import Announcer
from anyy.runtime.deps import Deps
from anyy.runtime.execution import ExecutionRun, Outcome
from anyy.storage.ownership import LeaseLost
from anyy.storage.protocol import SessionStore

Job = Callable[[], Awaitable[Any]]
log = logging.getLogger("anyy.runtime")


class SessionActor:
    def __init__(self, deps: Deps, session_id: str) -> None:
        self.deps = deps
        self.session_id = session_id
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
        self._in_job = False

    @property
    def busy(self) -> bool:
        """Doing (or about to do) the session's work: holding its lease, with a shared store."""
        return self._in_job or not self._jobs.empty()

    # -- scheduling ------------------------------------------------------------------------------
    def ensure_running(self) -> None:
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._loop(), name=f"anyy-session-{self.session_id}")

    def poke(self) -> None:
        """Something was queued (or a continuation asked for): start the next execution if idle."""
        self._pokes += 1
        if self._drain_queued:
            return
        self._drain_queued = True
        self.submit(self._drain)

    def submit(self, job: Job) -> asyncio.Future[Any]:
        """Run ``job`` after the work queued before it (results and errors come back in the future)."""
        self.ensure_running()
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._jobs.put_nowait((job, future))
        return future

    async def aclose(self) -> None:
        if self.current is not None:
            self.current.request_stop()
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
                    # A poke's job has nobody awaiting it: its failure is logged, never lost silently.
                    future.add_done_callback(_log_unretrieved)
            else:
                if not future.done():
                    future.set_result(result)
            finally:
                self._in_job = False

    # -- the queue -------------------------------------------------------------------------------
    async def _drain(self) -> None:
        self._drain_queued = False
        if self._pokes <= self._halted_upto:
            return
        if not await self._claim():
            return  # another Gateway runs this session; it was told (a hint) and reads the queue itself
        try:
            await self._drain_owned()
        except LeaseLost as exc:  # taken over between the claim and a write: the new owner has the queue
            log.warning("session %s: %s", self.session_id, exc)
        finally:
            await self._release()

    async def _claim(self) -> bool:
        """Hold the session's lease for the work about to run (always, with a store this Gateway has to
        itself); what a dead owner left running is announced as interrupted."""
        claim = await self.deps.owner.call(lambda s: s.claim_session(self.session_id))
        for execution in claim.recovered:
            self._announce.execution(execution, note=execution.note)
        return bool(claim.owned)

    async def _release(self) -> None:
        """Idle again: give the lease back, so any Gateway may run the session's next work."""
        if self.current is None:
            try:
                await self.deps.owner.call(lambda s: s.release_session(self.session_id))
            except Exception as exc:  # the store is closing: the lease runs out by itself
                log.debug("lease of %s not released: %s", self.session_id, exc)

    async def _drain_owned(self) -> None:
        owner = self.deps.owner
        while True:
            started = await owner.call(functools.partial(_start_next, session_id=self.session_id))
            if started is None:
                return
            execution, inputs, pending = started
            self._announce.queue_now(self.session_id, pending)
            self._announce.entries(self.session_id, inputs)
            self._announce.execution(execution)
            run = ExecutionRun(self.deps, self.session_id, execution.id)
            outcome = await self._run(run, None)
            if outcome is not Outcome.DONE:
                self._halted_upto = self._pokes
                return
            if run.queue_was_empty:
                return  # seen empty when it completed; a later submission pokes again

    async def _run(self, run: ExecutionRun, answer: str | None) -> Outcome:
        self.current = run
        self.questions.pop(run.execution_id, None)
        try:
            try:
                outcome = await (run.run() if answer is None else run.resume_with_answer(answer))
            except LeaseLost as exc:  # another Gateway took the session over: stop here, write nothing
                log.warning("execution %s stopped here: %s", run.execution_id, exc)
                return Outcome.INTERRUPTED
            if outcome is Outcome.SUSPENDED and run.question is not None:
                self.questions[run.execution_id] = run.question
            return outcome
        finally:
            self.current = None
            run.finished.set()
            await self._announce.queue(self.session_id)

    async def resume(self, execution_id: str, answer: str) -> Outcome:
        """Inside the actor: an answer resumes the suspended execution, then the queue goes on. When
        another Gateway holds the session, the answer is left for it (a durable control row)."""
        if not await self._claim():
            await self.deps.owner.call(lambda s: s.add_control(self.session_id, "answer", execution_id, answer))
            return Outcome.SUSPENDED
        try:
            outcome = await self._run(ExecutionRun(self.deps, self.session_id, execution_id), answer)
            if outcome is Outcome.DONE:
                self._pokes += 1
                await self._drain_owned()
            else:
                self._halted_upto = self._pokes
            return outcome
        finally:
            await self._release()


def _start_next(store: SessionStore, *, session_id: str) -> tuple[Execution, list[Entry], list[Submission]] | None:
    """Start the next execution from the queue, if the session is idle and anything is pending: the
    items are taken and recorded as the user's messages in the same transaction (returned with it, and
    with what stays pending)."""
    if store.list_executions(session_id, active_only=True):
        return None  # waiting for an answer: nothing else starts meanwhile
    session = store.get_session(session_id)
    pending = store.list_submissions(session_id)
    chosen = queue_rules.inputs_to_start(pending, session.steering_mode, session.follow_up_mode)
    if not chosen:
        return None
    ids = [sub.id for sub in chosen]
    execution = store.start_execution(session_id, ids, record_inputs=True)
    entry_ids = [sub.entry_id for sub in map(store.get_submission, ids) if sub.entry_id is not None]
    left = [sub for sub in pending if sub.id not in ids]
    return execution, [store.get_entry(session_id, entry_id) for entry_id in entry_ids], left


def _log_unretrieved(future: asyncio.Future[Any]) -> None:
    exc = future.exception()
    if exc is not None:
        log.error("session work failed: %s", exc, exc_info=exc)
