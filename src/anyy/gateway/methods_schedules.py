"""Methods on schedules (K1): create, list, get, update, pause, resume, delete, run now, runs."""

from __future__ import annotations

from anyy.api import methods as api
from anyy.api import schedules as wire
from anyy.api.params import NoParams
from anyy.gateway.state import Connection, Gateway
from anyy.gateway.table import TABLE
from anyy.runtime.schedule_admin import ScheduleAdmin
from anyy.runtime.views import convert


def _admin(gw: Gateway) -> ScheduleAdmin:
    if gw.schedules is None:
        raise RuntimeError("this Gateway runs no scheduler")
    return gw.schedules


@TABLE.method(api.SCHEDULE_CREATE)
async def create(gw: Gateway, conn: Connection | None, p: wire.ScheduleCreateParams) -> wire.Schedule:
    """A new schedule: exactly one of ``cron`` (5 fields, evaluated in ``timezone``, an IANA name),
    ``every`` (seconds, at least 60; the first run at ``start``, default one interval from now) or ``at``
    (one time to come, epoch seconds). Each run sends ``prompt`` to a new Background session with the
    schedule's ``role``, ``model`` ("provider/model" or an alias; "" for the profile's) and ``tools``
    (null: the profile's), or to the fixed ``session_id``. ``catch_up`` says what happens to runs missed
    while no Gateway ran: ``skip`` them, or run ``once`` for all. A wrong field is an error naming it."""
    admin = _admin(gw)
    return await admin.view(await admin.create(p))


@TABLE.method(api.SCHEDULE_LIST)
async def list_(gw: Gateway, conn: Connection | None, p: NoParams) -> list[wire.Schedule]:
    """Every schedule of the profile, by name, each with its next fire time and its last run."""
    admin = _admin(gw)
    found = await gw.store(lambda s: s.list_schedules())
    return [await admin.view(schedule) for schedule in found]


@TABLE.method(api.SCHEDULE_GET)
async def get(gw: Gateway, conn: Connection | None, p: wire.ScheduleRef) -> wire.Schedule:
    """One schedule, by id or name."""
    admin = _admin(gw)
    return await admin.view(await admin.get(p.schedule))


@TABLE.method(api.SCHEDULE_UPDATE)
async def update(gw: Gateway, conn: Connection | None, p: wire.ScheduleUpdateParams) -> wire.Schedule:
    """Change the fields given; a field left out keeps its value, and ``null`` clears one back to its
    default (``role``, ``model``, ``tools``, ``session_id``, ``timezone``, ``catch_up``; the others refuse
    it, naming the field). A new timing starts from now (the next fire time is computed again)."""
    admin = _admin(gw)
    return await admin.view(await admin.update(p))


@TABLE.method(api.SCHEDULE_PAUSE)
async def pause(gw: Gateway, conn: Connection | None, p: wire.ScheduleRef) -> wire.Schedule:
    """Stop firing until resumed; runs already started go on."""
    admin = _admin(gw)
    return await admin.view(await admin.set_paused(p.schedule, True))


@TABLE.method(api.SCHEDULE_RESUME)
async def resume(gw: Gateway, conn: Connection | None, p: wire.ScheduleRef) -> wire.Schedule:
    """Fire again, from the next scheduled time after now (times passed while paused are not run)."""
    admin = _admin(gw)
    return await admin.view(await admin.set_paused(p.schedule, False))


@TABLE.method(api.SCHEDULE_DELETE)
async def delete(gw: Gateway, conn: Connection | None, p: wire.ScheduleRef) -> None:
    """Remove a schedule and the record of its runs; the sessions its runs made stay."""
    await _admin(gw).delete(p.schedule)


@TABLE.method(api.SCHEDULE_RUN_NOW)
async def run_now(gw: Gateway, conn: Connection | None, p: wire.ScheduleRef) -> wire.ScheduleRun:
    """Run once now, outside the timing (also when paused); the schedule's next time stays."""
    return convert(await _admin(gw).run_now(p.schedule), wire.ScheduleRun)


@TABLE.method(api.SCHEDULE_RUNS)
async def runs(gw: Gateway, conn: Connection | None, p: wire.ScheduleRunsParams) -> list[wire.ScheduleRun]:
    """A schedule's runs, newest first: when each was due, its session, and its outcome now."""
    return convert(await _admin(gw).runs(p.schedule, p.limit), list[wire.ScheduleRun])
