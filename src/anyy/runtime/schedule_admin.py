"""Creating and changing schedules (SPEC K1): the checks that name the field that is wrong, and what the
methods ``schedule.*`` do. Every change takes the scheduler's lock (the timer never sees half of one) and
wakes its timer, which then sleeps until the new earliest fire time.

Pausing keeps the schedule; resuming starts from now: the times that passed while it was paused are not
run (a paused schedule is one the user does not want to run).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import msgspec

from anyy.api import schedules as wire
from anyy.domain.errors import InvalidInput
from anyy.domain.schedule_records import NewSchedule, Schedule, ScheduleRun
from anyy.domain.schedules import Timing, check, next_after
from anyy.domain.sessions import NewSession, Origin
from anyy.profiles.config import Config
from anyy.profiles.profile import Profile
from anyy.runtime.assembly import new_session
from anyy.runtime.runtime import Runtime
from anyy.runtime.scheduler import Scheduler, WallClock, zone_of
from anyy.runtime.views import convert
from anyy.runtime.workspaces import chosen_workspace

ALIAS = "alias"  # the provider of a virtual model (anyy.providers.registry.VIRTUAL_PROVIDER)


class TimingInput(NamedTuple):
    """The timing fields of a create or an update; None: not given."""

    cron: str | None = None
    every: float | None = None
    at: float | None = None
    start: float | None = None
    timezone: str | None = None
    catch_up: wire.CatchUp | None = None


# schedule.update: a field given as null goes back to this default; the others refuse null.
CLEARED: dict[str, Any] = {
    "role": "default",
    "model": "",
    "tools": None,
    "session_id": None,
    "workspace": None,
    "timezone": "UTC",
    "catch_up": "skip",
}


def update_fields(p: wire.ScheduleUpdateParams) -> dict[str, Any]:
    """The fields an update gives (left out: absent here), a null replaced by the field's default; a null
    for a field without one is refused, naming it."""
    given: dict[str, Any] = {}
    for field in msgspec.structs.fields(p):
        value = getattr(p, field.name)
        if field.name == "schedule" or value is msgspec.UNSET:
            continue
        if value is None and field.name not in CLEARED:
            raise InvalidInput(
                f"{field.name}: cannot be cleared (null); give a value, or leave it out to keep it "
                f"(null clears only {', '.join(CLEARED)})"
            )
        given[field.name] = CLEARED[field.name] if value is None else value
    return given


def timing_from(p: TimingInput, base: Timing | None, now: float) -> Timing:
    """The timing the parameters describe (over ``base`` for an update), checked."""
    given = [name for name in ("cron", "every", "at") if getattr(p, name) is not None]
    if len(given) > 1 or (base is None and not given):
        raise InvalidInput(
            "cron, every, at: give exactly one — a cron expression (cron), an interval in seconds (every) or one "
            f"time (at){'; got ' + ', '.join(given) if given else ''}"
        )
    fields: dict[str, Any] = {} if base is None or given else msgspec.structs.asdict(base)
    if p.cron is not None:
        fields.update(kind="cron", cron=p.cron)
    elif p.every is not None:
        fields.update(kind="interval", every=p.every, start=p.start if p.start is not None else now + p.every)
    elif p.at is not None:
        fields.update(kind="once", at=p.at)
    elif p.start is not None:
        fields["start"] = p.start
    for name in ("timezone", "catch_up"):
        value = getattr(p, name)
        fields[name] = value if value is not None else getattr(base, name) if base is not None else fields.get(name)
    fields = {k: v for k, v in fields.items() if v is not None}
    timing = Timing(**fields)
    check(timing, zone_of(timing.timezone), now=now)
    return timing


def model_choice(model: str) -> tuple[str, str]:
    """``provider/model``, an alias, or "" (the profile's default) as (provider, model)."""
    if not model:
        return "", ""
    provider, slash, name = model.partition("/")
    return (provider, name) if slash else (ALIAS, model)


class ScheduleAdmin:
    """The ``schedule.*`` methods over a scheduler. ``check_role`` raises for a role the profile lacks,
    ``check_model`` for a (provider, model) that does not resolve, ``config`` reads the profile's settings."""

    def __init__(
        self,
        scheduler: Scheduler,
        *,
        config: Callable[[], Config],
        check_role: Callable[[str], object],
        check_model: Callable[[str, str], object],
    ) -> None:
        self.scheduler = scheduler
        self.config = config
        self.check_role = check_role
        self.check_model = check_model

    @property
    def _owner(self) -> Any:
        return self.scheduler.runtime.deps.owner

    def make_session(self, schedule: Schedule, scheduled_for: float) -> NewSession:
        """The Background session of one run: the profile's settings, with the schedule's role, model and
        tools, and its origin."""
        self.check_role(schedule.role)
        spec = new_session(self.config(), role=schedule.role, kind="background", title=schedule.name)
        changes: dict[str, Any] = {}
        if schedule.model:
            self.check_model(schedule.provider, schedule.model)
            changes.update(provider=schedule.provider, model=schedule.model)
        if schedule.tools is not None:
            changes["tools"] = {**spec.tools, "enabled": list(schedule.tools)}
        changes["workspace"] = self._workspace(schedule.workspace)  # gone since: this run fails, saying so (W1)
        origin = Origin(kind="schedule", name=schedule.name, schedule_id=schedule.id, scheduled_for=scheduled_for)
        return msgspec.structs.replace(spec, origin=origin, **changes)

    def _workspace(self, raw: str | None) -> str:
        deps = self.scheduler.runtime.deps
        return chosen_workspace(raw, deps.workspaces, deps.workdir)

    def _check(self, role: str, model: str) -> tuple[str, str]:
        try:
            self.check_role(role)
        except Exception as exc:  # a missing role, or a role file that does not read
            raise InvalidInput(f"role: {exc}") from None
        provider, name = model_choice(model)
        if name:
            try:
                self.check_model(provider, name)
            except Exception as exc:
                raise InvalidInput(f"model: {exc}") from None
        return provider, name

    async def create(self, p: wire.ScheduleCreateParams) -> Schedule:
        now = self.scheduler.clock.now()
        timing = timing_from(TimingInput(p.cron, p.every, p.at, p.start, p.timezone, p.catch_up), None, now)
        provider, model = self._check(p.role, p.model)
        if p.session_id is not None:
            await self._owner.call(lambda s: s.get_session(p.session_id))
        new = NewSchedule(
            name=p.name,
            timing=timing,
            prompt=p.prompt,
            role=p.role,
            provider=provider,
            model=model,
            tools=p.tools,
            session_id=p.session_id,
            workspace=None if p.workspace is None else self._workspace(p.workspace),
            paused=p.paused,
            considered=now,
            next_at=next_after(timing, zone_of(timing.timezone), now),
        )
        async with self.scheduler.lock:
            made: Schedule = await self._owner.call(lambda s: s.create_schedule(new))
        self.scheduler.wake()
        return made

    async def get(self, ref: str) -> Schedule:
        found: Schedule = await self._owner.call(lambda s: s.get_schedule(ref))
        return found

    async def update(self, p: wire.ScheduleUpdateParams) -> Schedule:
        given = update_fields(p)
        async with self.scheduler.lock:
            current = await self.get(p.schedule)
            now = self.scheduler.clock.now()
            plain = ("name", "prompt", "role", "tools", "session_id")
            changes: dict[str, Any] = {name: given[name] for name in plain if name in given}
            if "workspace" in given:
                changes["workspace"] = None if given["workspace"] is None else self._workspace(given["workspace"])
            timed = {name: given[name] for name in TimingInput._fields if name in given}
            if timed:
                timing = timing_from(TimingInput(**timed), current.timing, now)
                changes.update(timing=timing, considered=now, next_at=next_after(timing, zone_of(timing.timezone), now))
            if "model" in given:
                changes["provider"], changes["model"] = model_choice(given["model"])
            updated = msgspec.structs.replace(current, **changes)
            self._check(updated.role, f"{updated.provider}/{updated.model}" if updated.model else "")
            if updated.session_id is not None and updated.session_id != current.session_id:
                await self._owner.call(lambda s: s.get_session(updated.session_id))
            stored: Schedule = await self._owner.call(lambda s: s.update_schedule(updated))
        self.scheduler.wake()
        return stored

    async def set_paused(self, ref: str, paused: bool) -> Schedule:
        async with self.scheduler.lock:
            current = await self.get(ref)
            changes: dict[str, Any] = {"paused": paused}
            if not paused and current.paused:
                now = self.scheduler.clock.now()
                zone = zone_of(current.timing.timezone)
                changes.update(considered=now, next_at=next_after(current.timing, zone, now))
            changed = msgspec.structs.replace(current, **changes)
            stored: Schedule = await self._owner.call(lambda s: s.update_schedule(changed))
        self.scheduler.wake()
        return stored

    async def delete(self, ref: str) -> None:
        async with self.scheduler.lock:
            await self._owner.call(lambda s: s.delete_schedule(ref))
        self.scheduler.wake()

    async def run_now(self, ref: str) -> ScheduleRun:
        """One run now, outside the timing (its scheduled time is now); the schedule's times stay."""
        async with self.scheduler.lock:
            current = await self.get(ref)
            now = self.scheduler.clock.now()
            run = await self.scheduler.fire(current, now, considered=current.considered, next_at=current.next_at)
        if run is None:
            raise InvalidInput("schedule: a run for this very moment was claimed already; try again")
        return run

    async def runs(self, ref: str, limit: int) -> list[ScheduleRun]:
        found: list[ScheduleRun] = await self._owner.call(lambda s: s.list_runs(ref, limit=limit))
        return found

    async def view(self, schedule: Schedule) -> wire.Schedule:
        last: list[ScheduleRun] = await self._owner.call(lambda s: s.list_runs(schedule.id, limit=1))
        shown = convert(schedule, wire.Schedule)
        return msgspec.structs.replace(shown, last_run=convert(last[0], wire.ScheduleRun) if last else None)


def scheduling_for(profile: Profile, runtime: Runtime, *, clock: WallClock | None = None) -> ScheduleAdmin:
    """The scheduler of a profile's Gateway (not started) and the methods over it."""

    def make_session(schedule: Schedule, scheduled_for: float) -> NewSession:
        return admin.make_session(schedule, scheduled_for)

    def check_model(provider: str, model: str) -> object:
        return runtime.deps.models.resolve(provider, model, None)

    scheduler = Scheduler(runtime, make_session, clock=clock)
    admin = ScheduleAdmin(scheduler, config=profile.load_config, check_role=profile.load_role, check_model=check_model)
    return admin
