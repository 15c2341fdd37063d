"""The scheduler (SPEC K1): one timer for every schedule of the profile.

It sleeps until the earliest next fire time of the schedules that are not paused (at most
:data:`MAX_WAIT` seconds, so a wall clock that jumped, or a schedule another Gateway changed, is seen
soon), wakes early when a schedule changes here, and then deals with every schedule that is due, as
:func:`anyy.domain.schedules.plan` says: the due run is claimed — the claim row, its Background session
(or the fixed target session) and the prompt queued there, in one store transaction — and then the
session's queue is started. The catch-up rule for runs missed while no Gateway ran is applied at the
first wake after start, by the same plan.

Exactly once: a run exists when its claim committed; a second claim of the same (schedule, scheduled
time) writes nothing, whether it comes after a restart or from another Gateway on the same database.
A Gateway killed after the claim and before the run started finds the queued prompt at start
(:meth:`SessionStore.pending_runs`) and starts it; it cannot be started twice, as taking a submission
into an execution is itself one transaction.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import Protocol
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import msgspec

from anyy.domain.errors import InvalidInput, NotFound
from anyy.domain.queue import NewSubmission
from anyy.domain.schedule_records import RunClaim, Schedule, ScheduleRun
from anyy.domain.schedules import plan
from anyy.domain.sessions import NewSession
from anyy.runtime.clock import WallClock as SystemWallClock  # calendar time: the one the runtime uses for residents too
from anyy.runtime.runtime import Runtime

log = logging.getLogger("anyy.scheduler")

MAX_WAIT = 60.0  # seconds: the longest the timer sleeps before looking again
MakeSession = Callable[[Schedule, float], NewSession]


class WallClock(Protocol):
    """Calendar time (epoch seconds), unlike the runtime's monotonic clock; tests move it by hand."""

    def now(self) -> float: ...

    async def sleep(self, seconds: float) -> None: ...


def zone_of(name: str) -> ZoneInfo:
    """The IANA time zone of that name, or InvalidInput naming the field."""
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise InvalidInput(
            f"timezone: {name!r} is not a known IANA time zone (for example 'Europe/Paris', 'America/New_York', 'UTC')"
        ) from None


class Scheduler:
    def __init__(self, runtime: Runtime, make_session: MakeSession, *, clock: WallClock | None = None) -> None:
        self.runtime = runtime
        self.make_session = make_session
        self.clock: WallClock = clock or SystemWallClock()
        self.lock = asyncio.Lock()  # schedule changes here and the timer's work take turns
        self._woken = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._ticks = asyncio.Condition()
        self._started = 0
        self._done = 0

    # -- lifecycle -------------------------------------------------------------------------------
    async def start(self) -> list[ScheduleRun]:
        """Start the runs a previous Gateway claimed but did not start, then the timer. Returns those runs.

        Each run's prompt starts alone: in a fixed target session, the items the restart left pending
        there (the user's, queued before or after the run) stay pending, as G3 says of every session, until
        the session is continued or sent to; a run behind an execution waiting for an answer waits too."""
        pending: list[ScheduleRun] = await self.runtime.deps.owner.call(lambda s: s.pending_runs())
        for run in pending:  # each run alone: what else a fixed target session had queued waits (G3)
            if run.session_id is not None and run.submission_id is not None:
                self.runtime.start_alone(run.session_id, run.submission_id)
        self._task = asyncio.create_task(self._loop(), name="anyy-scheduler")
        return pending

    async def aclose(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    def wake(self) -> None:
        """A schedule changed: look again now."""
        self._woken.set()

    async def next_tick(self) -> None:
        """Return once a round of the timer that started after this call has ended (for tests)."""
        async with self._ticks:
            target = self._started + 1
            self.wake()
            await self._ticks.wait_for(lambda: self._done >= target)

    # -- the timer -------------------------------------------------------------------------------
    async def _loop(self) -> None:
        while True:
            self._woken.clear()
            async with self._ticks:
                self._started += 1
            try:
                next_at = await self.tick()
            except Exception:
                log.exception("the scheduler's round failed; it tries again at the next one")
                next_at = None
            async with self._ticks:
                self._done = self._started
                self._ticks.notify_all()
            await self._sleep_until(next_at)

    async def _sleep_until(self, next_at: float | None) -> None:
        wait = MAX_WAIT if next_at is None else min(max(next_at - self.clock.now(), 0.0), MAX_WAIT)
        if wait <= 0:
            return
        sleeper = asyncio.ensure_future(self.clock.sleep(wait))
        waker = asyncio.ensure_future(self._woken.wait())
        try:
            await asyncio.wait({sleeper, waker}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            sleeper.cancel()
            waker.cancel()

    async def tick(self) -> float | None:
        """Deal with every schedule due now; the earliest next fire time of those not paused. Reads only
        the due schedules and that time (an index), so many schedules cost a round nothing."""
        async with self.lock:
            now = self.clock.now()
            owner = self.runtime.deps.owner
            due: list[Schedule] = await owner.call(lambda s: s.due_schedules(now))
            for schedule in due:
                await self._due(schedule, now)
            upcoming: float | None = await owner.call(lambda s: s.next_fire_time())
            return upcoming

    async def _due(self, schedule: Schedule, now: float) -> float | None:
        try:
            zone = zone_of(schedule.timing.timezone)
        except InvalidInput:
            log.warning("schedule %s names an unknown time zone; it waits", schedule.name)
            return None
        decided = plan(schedule.timing, zone, considered=schedule.considered, now=now)
        if decided.missed:
            log.info("schedule %s: %d scheduled times passed over", schedule.name, decided.missed)
        if decided.run_for is not None:
            await self.fire(schedule, decided.run_for, considered=decided.considered, next_at=decided.next_at)
        else:
            advanced = msgspec.structs.replace(schedule, considered=decided.considered, next_at=decided.next_at)
            await self.runtime.deps.owner.call(lambda s: s.update_schedule(advanced))
        return decided.next_at

    # -- one run ---------------------------------------------------------------------------------
    async def fire(
        self, schedule: Schedule, scheduled_for: float, *, considered: float, next_at: float | None
    ) -> ScheduleRun | None:
        """Claim the run for ``scheduled_for`` and start it; None when it was claimed before."""
        claim = RunClaim(
            schedule_id=schedule.id,
            scheduled_for=scheduled_for,
            considered=considered,
            next_at=next_at,
            prompt=NewSubmission(text=schedule.prompt),
            session_id=schedule.session_id,
        )
        owner = self.runtime.deps.owner
        try:
            if schedule.session_id is None:
                claim = msgspec.structs.replace(claim, session=self.make_session(schedule, scheduled_for))
            run: ScheduleRun | None = await owner.call(lambda s: s.claim_run(claim))
        except (NotFound, InvalidInput) as exc:  # its session was deleted, its role or model removed…
            failed = msgspec.structs.replace(claim, session=None, session_id=None, error=str(exc))
            run = await owner.call(lambda s: s.claim_run(failed))
        if run is not None and run.session_id is not None and run.outcome == "pending":
            await self.runtime.start_queued(run.session_id)
            log.info("schedule %s ran for %s in session %s", schedule.name, scheduled_for, run.session_id)
        return run
