"""K1: when schedules fire — cron in a named zone across daylight-saving changes, intervals, one time —
and the catch-up rule for runs missed while no Gateway ran. Pure functions: the clock is a number."""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

import pytest

from anyy.domain.errors import InvalidInput
from anyy.domain.schedules import ON_TIME, Timing, check, latest_at_or_before, next_after, plan

PARIS = ZoneInfo("Europe/Paris")
UTC = ZoneInfo("UTC")


def at(text: str, zone: ZoneInfo = PARIS, fold: int = 0) -> float:
    return datetime.fromisoformat(text).replace(tzinfo=zone, fold=fold).timestamp()


def shown(moment: float | None, zone: ZoneInfo = PARIS) -> str | None:
    return None if moment is None else datetime.fromtimestamp(moment, zone).isoformat()


def series(timing: Timing, start: float, count: int, zone: ZoneInfo = PARIS) -> list[str | None]:
    out: list[str | None] = []
    moment: float | None = start
    for _ in range(count):
        assert moment is not None
        moment = next_after(timing, zone, moment)
        out.append(shown(moment, zone))
    return out


def test_k1_cron_fires_in_its_own_time_zone() -> None:
    weekdays_at_8 = Timing(kind="cron", cron="0 8 * * 1-5", timezone="Europe/Paris")
    assert series(weekdays_at_8, at("2026-12-04T09:00"), 2) == [  # a Friday, after 8
        "2026-12-07T08:00:00+01:00",  # Monday
        "2026-12-08T08:00:00+01:00",
    ]


def test_k1_dst_spring_forward_runs_a_skipped_time_at_the_next_valid_minute() -> None:
    nightly = Timing(kind="cron", cron="30 2 * * *", timezone="Europe/Paris")
    # 2026-03-29: clocks go from 02:00 to 03:00; 02:30 does not exist that night.
    assert series(nightly, at("2026-03-27T12:00"), 3) == [
        "2026-03-28T02:30:00+01:00",
        "2026-03-29T03:00:00+02:00",
        "2026-03-30T02:30:00+02:00",
    ]


def test_k1_dst_fall_back_runs_a_fixed_time_once_and_every_hour_twice() -> None:
    nightly = Timing(kind="cron", cron="30 2 * * *", timezone="Europe/Paris")
    # 2026-10-25: clocks go from 03:00 back to 02:00; 02:30 happens twice.
    assert series(nightly, at("2026-10-24T12:00"), 2) == ["2026-10-25T02:30:00+02:00", "2026-10-26T02:30:00+01:00"]
    hourly = Timing(kind="cron", cron="0 * * * *", timezone="Europe/Paris")
    assert series(hourly, at("2026-10-25T00:30"), 4) == [
        "2026-10-25T01:00:00+02:00",
        "2026-10-25T02:00:00+02:00",
        "2026-10-25T02:00:00+01:00",
        "2026-10-25T03:00:00+01:00",
    ]


def test_k1_interval_counts_from_its_start() -> None:
    every_30_min = Timing(kind="interval", every=1800, start=at("2026-12-01T10:00", UTC))
    assert shown(next_after(every_30_min, UTC, at("2026-12-01T09:00", UTC)), UTC) == "2026-12-01T10:00:00+00:00"
    assert shown(next_after(every_30_min, UTC, at("2026-12-01T10:00", UTC)), UTC) == "2026-12-01T10:30:00+00:00"
    assert shown(latest_at_or_before(every_30_min, UTC, at("2026-12-01T11:15", UTC)), UTC) == (
        "2026-12-01T11:00:00+00:00"
    )


def test_k1_one_time_fires_once() -> None:
    once = Timing(kind="once", at=at("2026-12-24T18:00"))
    assert shown(next_after(once, PARIS, at("2026-12-01T00:00"))) == "2026-12-24T18:00:00+01:00"
    assert next_after(once, PARIS, at("2026-12-24T18:00")) is None


def test_k1_a_time_that_just_came_runs() -> None:
    hourly = Timing(kind="cron", cron="0 * * * *", timezone="UTC")
    now = at("2026-12-01T10:00:20", UTC)  # the Gateway woke 20 s late (busy)
    result = plan(hourly, UTC, considered=at("2026-12-01T09:30", UTC), now=now)
    assert shown(result.run_for, UTC) == "2026-12-01T10:00:00+00:00"
    assert result.missed == 0
    assert result.considered == now
    assert shown(result.next_at, UTC) == "2026-12-01T11:00:00+00:00"
    # Asked again at once (a restart, another Gateway): nothing more is due.
    again = plan(hourly, UTC, considered=result.considered, now=now + 1)
    assert again.run_for is None


@pytest.mark.parametrize(("catch_up", "runs"), [("skip", False), ("once", True)])
def test_k1_catch_up_after_a_gateway_was_down(catch_up: str, runs: bool) -> None:
    hourly = Timing(kind="cron", cron="0 * * * *", timezone="UTC", catch_up=catch_up)  # type: ignore[arg-type]
    # Last dealt with at 06:10; the Gateway comes back at 10:30: 07:00, 08:00, 09:00 and 10:00 were missed.
    result = plan(hourly, UTC, considered=at("2026-12-01T06:10", UTC), now=at("2026-12-01T10:30", UTC))
    if runs:
        assert shown(result.run_for, UTC) == "2026-12-01T10:00:00+00:00"  # one run, for the newest
        assert result.missed == 3
    else:
        assert result.run_for is None
        assert result.missed == 4
    assert shown(result.next_at, UTC) == "2026-12-01T11:00:00+00:00"


def test_k1_on_time_means_within_a_minute() -> None:
    daily = Timing(kind="cron", cron="0 8 * * *", timezone="UTC", catch_up="skip")
    eight = at("2026-12-01T08:00", UTC)
    assert plan(daily, UTC, considered=eight - 3600, now=eight + ON_TIME).run_for == eight
    assert plan(daily, UTC, considered=eight - 3600, now=eight + ON_TIME + 1).run_for is None


def test_k1_a_missed_one_time_schedule_follows_its_catch_up_rule() -> None:
    moment = at("2026-12-01T08:00", UTC)
    skipped = plan(Timing(kind="once", at=moment), UTC, considered=moment - 10, now=moment + 7200)
    assert skipped.run_for is None
    assert skipped.next_at is None
    caught = plan(Timing(kind="once", at=moment, catch_up="once"), UTC, considered=moment - 10, now=moment + 7200)
    assert caught.run_for == moment
    assert caught.next_at is None


@pytest.mark.parametrize(
    ("timing", "field"),
    [
        (Timing(kind="cron", cron="0 8 * *"), "cron:"),
        (Timing(kind="cron", cron="61 8 * * *"), "cron:"),
        (Timing(kind="cron", cron="0 8 31 2 *"), "cron:"),  # never matches
        (Timing(kind="interval", every=5), "every:"),
        (Timing(kind="once", at=1.0), "at:"),
    ],
)
def test_k1_bad_timing_is_refused_naming_the_field(timing: Timing, field: str) -> None:
    with pytest.raises(InvalidInput, match=f"^{field}"):
        check(timing, UTC, now=at("2026-12-01T00:00", UTC))
