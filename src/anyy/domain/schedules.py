"""When a schedule fires (SPEC K1): a cron expression (5 fields), an interval, or one time, in a named
time zone, with a catch-up rule for runs missed while no Gateway ran. Pure: the caller gives the time
zone object and the clock's reading; nothing here reads a file or a clock.

Times are epoch seconds (floats) at the edges; cron is evaluated in the schedule's own zone by cronsim,
whose rules on daylight-saving changes are these (documented in docs/background.md):

- a time skipped when clocks go forward fires at the first valid minute after it (02:30 on a night
  when 02:00-03:00 does not exist fires at 03:00);
- a time that happens twice when clocks go back fires once, at its first occurrence, for an expression
  with fixed hours ("30 2 * * *"); an expression that names every hour ("0 * * * *") fires at both.

A run is identified by the time it was scheduled for; storing that pair (schedule, scheduled time) once
is what makes a run happen exactly once across restarts (the runtime claims it before starting it).

Which runs are due at a given moment (:func:`plan`): every scheduled time after the last one considered
and up to now is due. The newest of them runs if it is recent (within :data:`ON_TIME` seconds: the
Gateway was running, maybe busy); the older ones were missed. When even the newest is older than that,
the Gateway was not running at the time: the catch-up rule decides — ``skip`` runs nothing, ``once``
runs one run for all that was missed. Either way the schedule then waits for its next time after now.
"""

from __future__ import annotations

import math
from datetime import datetime, tzinfo
from typing import Literal

import msgspec

from anyy.domain.errors import InvalidInput

ScheduleKind = Literal["cron", "interval", "once"]
CatchUp = Literal["skip", "once"]
ON_TIME = 60.0  # seconds: a scheduled time at most this old still runs as on time
MIN_INTERVAL = 60.0  # seconds: the shortest interval accepted


class Timing(msgspec.Struct, kw_only=True, frozen=True, omit_defaults=True):
    """When a schedule fires: ``cron`` (with ``cron``), ``interval`` (``every`` seconds from ``start``),
    or ``once`` (at ``at``); ``timezone`` is an IANA name, used by cron (and to show times)."""

    kind: ScheduleKind
    cron: str = ""
    every: float = 0.0
    start: float = 0.0  # interval: the first run's time (its anchor)
    at: float = 0.0  # once: when
    timezone: str = "UTC"
    catch_up: CatchUp = "skip"


class Plan(msgspec.Struct, kw_only=True, frozen=True):
    """What to do now: run for ``run_for`` (a scheduled time; None: nothing to run), remember that every
    time up to ``considered`` was dealt with, and wake again at ``next_at`` (None: never again)."""

    run_for: float | None
    missed: int  # scheduled times that were passed over (not run)
    considered: float
    next_at: float | None


def check(timing: Timing, zone: tzinfo, *, now: float) -> None:
    """Refuse a timing that can never work, naming the field: a bad cron expression, an interval under a
    minute, a one-time date in the past."""
    if timing.kind == "cron":
        if len(timing.cron.split()) != 5:
            raise InvalidInput(
                f"cron: {timing.cron!r} is not a 5-field cron expression (minute hour day month weekday), "
                'for example "0 8 * * 1-5"'
            )
        try:
            _cron_after(timing.cron, zone, now)
        except ValueError as exc:
            raise InvalidInput(f"cron: {timing.cron!r} is not a valid cron expression ({exc})") from None
    elif timing.kind == "interval":
        if not math.isfinite(timing.every) or timing.every < MIN_INTERVAL:
            raise InvalidInput(f"every: an interval is at least {MIN_INTERVAL:g} seconds (got {timing.every:g})")
    elif timing.kind == "once" and (not math.isfinite(timing.at) or timing.at <= now):
        shown = datetime.fromtimestamp(timing.at, zone).isoformat() if math.isfinite(timing.at) else timing.at
        raise InvalidInput(f"at: {shown} is in the past; a one-time schedule needs a time to come")


def next_after(timing: Timing, zone: tzinfo, after: float) -> float | None:
    """The first scheduled time strictly after ``after``; None when there is none (a one-time schedule
    already past)."""
    if timing.kind == "cron":
        return _cron_after(timing.cron, zone, after)
    if timing.kind == "interval":
        if after < timing.start:
            return timing.start
        steps = math.floor((after - timing.start) / timing.every) + 1
        return timing.start + steps * timing.every
    return timing.at if timing.at > after else None


def latest_at_or_before(timing: Timing, zone: tzinfo, moment: float) -> float | None:
    """The newest scheduled time at or before ``moment``; None when there is none."""
    if timing.kind == "cron":
        return _cron_before(timing.cron, zone, moment)
    if timing.kind == "interval":
        if moment < timing.start:
            return None
        return timing.start + math.floor((moment - timing.start) / timing.every) * timing.every
    return timing.at if timing.at <= moment else None


def plan(timing: Timing, zone: tzinfo, *, considered: float, now: float) -> Plan:
    """What is due at ``now`` for a schedule whose times up to ``considered`` were dealt with."""
    latest = latest_at_or_before(timing, zone, now)
    upcoming = next_after(timing, zone, now)
    if latest is None or latest <= considered:
        return Plan(run_for=None, missed=0, considered=now, next_at=upcoming)
    due = _count_between(timing, zone, considered, latest)
    if now - latest <= ON_TIME or timing.catch_up == "once":
        return Plan(run_for=latest, missed=due - 1, considered=now, next_at=upcoming)
    return Plan(run_for=None, missed=due, considered=now, next_at=upcoming)


_COUNT_CAP = 10_000  # missed times counted one by one up to this (a report, not a limit on anything)


def _count_between(timing: Timing, zone: tzinfo, after: float, until: float) -> int:
    """How many scheduled times lie in (after, until], counted up to a cap."""
    if timing.kind == "interval":
        first = next_after(timing, zone, after)
        return 0 if first is None or first > until else int((until - first) // timing.every) + 1
    count = 0
    moment = after
    while count < _COUNT_CAP:
        found = next_after(timing, zone, moment)
        if found is None or found > until:
            break
        count += 1
        moment = found
    return count


def _cron_after(expression: str, zone: tzinfo, after: float) -> float:
    from cronsim import CronSim, CronSimError

    start = datetime.fromtimestamp(after, zone)
    try:
        return next(iter(CronSim(expression, start))).timestamp()
    except CronSimError as exc:
        raise ValueError(str(exc)) from None
    except StopIteration:
        raise ValueError("it never matches a date") from None


def _cron_before(expression: str, zone: tzinfo, moment: float) -> float | None:
    from cronsim import CronSim, CronSimError

    # cronsim iterates strictly before its start: start a second later to include ``moment`` itself.
    start = datetime.fromtimestamp(moment + 1, zone)
    try:
        return next(iter(CronSim(expression, start, reverse=True))).timestamp()
    except CronSimError as exc:
        raise ValueError(str(exc)) from None
    except StopIteration:
        return None
