"""K1 through the API, the scheduler's clock in the test's hands: when schedules fire (one timer for
all), exactly once, the catch-up rules, pause and resume, run now, a fixed target session, DST, and
bad input refused with the field named."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from anyy.api.events import QueueChanged
from anyy.domain.model_io import TextDelta
from anyy.providers.gates import Gate
from anyy.runtime.bus import Subscription
from commons.jsonrpc import RpcError
from tests.fakes.gateways import LiveGateway, wait_gate
from tests.fakes.wall_clock import ManualWallClock

PARIS = ZoneInfo("Europe/Paris")
T0 = datetime(2026, 6, 5, 7, 59, 30, tzinfo=PARIS).timestamp()  # a Friday, 30 s before 08:00
EIGHT = datetime(2026, 6, 5, 8, 0, tzinfo=PARIS).timestamp()
DAY = 86_400.0


class Scheduled:
    def __init__(self, live: LiveGateway, clock: ManualWallClock) -> None:
        self.live = live
        self.clock = clock

    def call(self, method: str, params: dict[str, Any] | None = None) -> Any:
        return self.live.call(method, params)

    def at(self, moment: float) -> None:
        """Move the time, and return once the scheduler dealt with it."""
        self.clock.set(moment)
        self.tick()

    def tick(self) -> None:
        assert self.live.gateway is not None
        assert self.live.gateway.schedules is not None
        self.live.run(self.live.gateway.schedules.scheduler.next_tick())

    def daily(self, name: str = "daily summary", **more: Any) -> Any:
        params = {"name": name, "prompt": "Summarise the day.", "cron": "0 8 * * *", "timezone": "Europe/Paris"}
        return self.call("schedule.create", {**params, **more})

    def runs(self, name: str) -> list[Any]:
        return list(self.call("schedule.runs", {"schedule": name}))


@pytest.fixture
def sched(tmp_path: Path) -> Iterator[Scheduled]:
    clock = ManualWallClock(T0)
    with LiveGateway(tmp_path, serve=False, wall_clock=clock) as live:
        yield Scheduled(live, clock)


def test_k1_a_cron_schedule_fires_at_its_time_once_into_a_background_session(sched: Scheduled) -> None:
    made = sched.daily()
    assert made["next_at"] == EIGHT
    assert made["last_run"] is None
    sched.live.model.enqueue("Today: nothing new.")
    sched.at(EIGHT + 1)
    [run] = sched.runs("daily summary")
    assert run["scheduled_for"] == EIGHT
    done = sched.call("session.wait", {"submission_id": run["submission_id"], "timeout": 10})
    assert done["state"] == "completed"
    session = sched.call("session.get", {"session_id": run["session_id"]})["session"]
    assert session["kind"] == "background"
    assert session["origin"] == {
        "kind": "schedule",
        "name": "daily summary",
        "schedule_id": made["id"],
        "scheduled_for": EIGHT,
    }
    history = sched.call("session.history", {"session_id": run["session_id"]})["items"]
    assert [e["text"] for e in reversed(history)] == ["Summarise the day.", "Today: nothing new."]
    sched.tick()  # another round at the same moment claims nothing more
    assert len(sched.runs("daily summary")) == 1
    shown = sched.call("schedule.get", {"schedule": made["id"]})
    assert shown["next_at"] == EIGHT + DAY
    assert shown["last_run"]["outcome"] == "completed"


def test_k1_one_timer_sleeps_until_the_earliest_fire_time(sched: Scheduled) -> None:
    sched.daily()
    sched.tick()
    assert sched.clock.targets[-1] == EIGHT
    sched.call("schedule.create", {"name": "soon", "prompt": "p", "at": T0 + 10})
    sched.tick()
    assert sched.clock.targets[-1] == T0 + 10
    sched.call("schedule.pause", {"schedule": "soon"})
    sched.tick()
    assert sched.clock.targets[-1] == EIGHT


def test_k1_catch_up_skip_runs_nothing_once_runs_one_for_all_missed(sched: Scheduled) -> None:
    sched.daily("skipper", catch_up="skip")
    sched.daily("once", catch_up="once")
    three_days_later = EIGHT + 3 * DAY + 3600  # 09:00, three days on: the Gateway was not running meanwhile
    sched.at(three_days_later)
    assert sched.runs("skipper") == []
    [run] = sched.runs("once")
    assert run["scheduled_for"] == EIGHT + 3 * DAY  # the newest missed time, once for all
    for name in ("skipper", "once"):
        assert sched.call("schedule.get", {"schedule": name})["next_at"] == EIGHT + 4 * DAY


def test_k1_paused_schedules_do_not_fire_and_resume_from_now(sched: Scheduled) -> None:
    sched.daily()
    sched.call("schedule.pause", {"schedule": "daily summary"})
    sched.at(EIGHT + 5)
    assert sched.runs("daily summary") == []
    sched.clock.set(EIGHT + DAY + 5)
    resumed = sched.call("schedule.resume", {"schedule": "daily summary"})
    assert resumed["paused"] is False
    assert resumed["next_at"] == EIGHT + 2 * DAY  # the time passed while paused is not run
    sched.tick()
    assert sched.runs("daily summary") == []


def test_k1_run_now_runs_once_outside_the_timing(sched: Scheduled) -> None:
    sched.daily(paused=True)
    sched.live.model.enqueue("Done now.")
    run = sched.call("schedule.run_now", {"schedule": "daily summary"})
    assert run["scheduled_for"] == T0
    assert sched.call("session.wait", {"submission_id": run["submission_id"], "timeout": 10})["state"] == "completed"
    assert sched.call("schedule.get", {"schedule": "daily summary"})["next_at"] == EIGHT


def test_k1_an_interval_schedule_fires_every_interval(sched: Scheduled) -> None:
    sched.call("schedule.create", {"name": "tick", "prompt": "p", "every": 3600})
    for hour in (1, 2):
        sched.at(T0 + hour * 3600)
    assert [r["scheduled_for"] for r in sched.runs("tick")] == [T0 + 7200, T0 + 3600]


def test_k1_a_fixed_target_session_gets_each_run_and_a_deleted_one_fails_the_run(sched: Scheduled) -> None:
    target = sched.call("session.create", {"title": "notes"})
    sched.daily(session_id=target["id"])
    sched.at(EIGHT)
    [run] = sched.runs("daily summary")
    assert run["session_id"] == target["id"]
    sched.call("session.wait", {"submission_id": run["submission_id"], "timeout": 10})
    sched.call("session.delete", {"session_id": target["id"]})
    sched.at(EIGHT + DAY)
    latest = sched.runs("daily summary")[0]
    assert latest["outcome"] == "failed"
    assert "session" in latest["error"]


def test_k1_dst_a_time_skipped_in_spring_fires_at_the_first_valid_minute(sched: Scheduled) -> None:
    # 2026-03-29: Paris moves from 02:00 to 03:00; "30 2 * * *" has no 02:30 that day.
    sched.clock.set(datetime(2026, 3, 27, 12, 0, tzinfo=PARIS).timestamp())
    sched.call("schedule.create", {"name": "night", "prompt": "p", "cron": "30 2 * * *", "timezone": "Europe/Paris"})
    three = datetime(2026, 3, 29, 3, 0, tzinfo=PARIS).timestamp()
    assert (
        sched.call("schedule.get", {"schedule": "night"})["next_at"]
        == datetime(2026, 3, 28, 2, 30, tzinfo=PARIS).timestamp()
    )
    sched.at(datetime(2026, 3, 28, 2, 30, tzinfo=PARIS).timestamp())
    assert sched.call("schedule.get", {"schedule": "night"})["next_at"] == three
    sched.at(three)
    assert sched.runs("night")[0]["scheduled_for"] == three


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"cron": "61 * * * *"}, "cron"),
        ({"cron": "0 8 * *"}, "cron"),
        ({"cron": "0 8 * * *", "timezone": "Mars/Olympus"}, "timezone"),
        ({"every": 5}, "every"),
        ({"at": T0 - 60}, "at"),
        ({"cron": "0 8 * * *", "every": 600}, "cron, every, at"),
        ({}, "cron, every, at"),
        ({"cron": "0 8 * * *", "role": "nobody"}, "role"),
        ({"cron": "0 8 * * *", "model": "nowhere/x"}, "model"),
        ({"cron": "0 8 * * *", "name": ""}, "name"),
        ({"cron": "0 8 * * *", "session_id": "ses_missing"}, "ses_missing"),
    ],
)
def test_k1_bad_input_is_refused_naming_the_field(sched: Scheduled, params: dict[str, Any], field: str) -> None:
    with pytest.raises(RpcError) as caught:
        sched.call("schedule.create", {"name": "x", "prompt": "p", **params})
    assert field in caught.value.message
    assert sched.call("schedule.list") == []


def test_k1_update_changes_fields_and_refuses_a_taken_name(sched: Scheduled) -> None:
    sched.daily()
    sched.daily("other")
    changed = sched.call("schedule.update", {"schedule": "other", "cron": "0 9 * * *", "prompt": "New."})
    assert changed["prompt"] == "New."
    assert changed["next_at"] == EIGHT + 3600
    with pytest.raises(RpcError) as caught:
        sched.call("schedule.update", {"schedule": "other", "name": "daily summary"})
    assert "name" in caught.value.message
    sched.call("schedule.delete", {"schedule": "other"})
    assert [s["name"] for s in sched.call("schedule.list")] == ["daily summary"]
    with pytest.raises(RpcError):
        sched.call("schedule.get", {"schedule": "other"})


async def _subscribe(live: LiveGateway, session_id: str) -> Subscription:
    assert live.gateway is not None
    return live.gateway.runtime.subscribe(session_id)


async def _queue_event(subscription: Subscription) -> QueueChanged:
    while True:
        event = await asyncio.wait_for(subscription.get(), 10)
        if isinstance(event, QueueChanged) and event.pending:
            return event


def test_k1_a_run_into_a_busy_fixed_session_is_announced_and_waits_its_turn(sched: Scheduled) -> None:
    live = sched.live
    target = sched.call("session.create", {"title": "notes"})["id"]
    gate = Gate("held")
    live.model.enqueue([TextDelta(text="Work"), gate, TextDelta(text="ed.")], "the scheduled answer")
    first = sched.call("session.send", {"session_id": target, "text": "busy"})
    wait_gate(gate)
    subscription = live.run(_subscribe(live, target))
    sched.daily(session_id=target)
    sched.at(EIGHT)
    [run] = sched.runs("daily summary")
    assert run["outcome"] == "pending"  # queued behind the work in progress
    event = live.run(_queue_event(subscription))
    assert [item.id for item in event.pending] == [run["submission_id"]]
    gate.open()
    assert sched.call("session.wait", {"submission_id": first["id"], "timeout": 10})["state"] == "completed"
    done = sched.call("session.wait", {"submission_id": run["submission_id"], "timeout": 10})
    assert done["state"] == "completed"


def test_k1_update_null_clears_a_field_back_to_its_default_and_absent_keeps_it(sched: Scheduled) -> None:
    target = sched.call("session.create", {"title": "notes"})["id"]
    made = sched.daily(model="offline/offline", tools=["read_file"], session_id=target, catch_up="once")
    assert (made["provider"], made["model"], made["tools"], made["session_id"]) == (
        "offline",
        "offline",
        ["read_file"],
        target,
    )
    kept = sched.call("schedule.update", {"schedule": "daily summary", "prompt": "Only this."})
    assert (kept["model"], kept["tools"], kept["session_id"], kept["timing"]["catch_up"]) == (
        "offline",
        ["read_file"],
        target,
        "once",
    )
    cleared = sched.call(
        "schedule.update",
        {"schedule": "daily summary", "model": None, "tools": None, "session_id": None, "catch_up": None},
    )
    assert (cleared["provider"], cleared["model"], cleared["tools"], cleared["session_id"]) == ("", "", None, None)
    assert cleared["timing"].get("catch_up", "skip") == "skip"  # the default, left out of the timing
    assert cleared["timing"]["cron"] == "0 8 * * *"
    assert cleared["prompt"] == "Only this."
    sched.at(EIGHT)  # no fixed session any more: the run makes a Background session of its own
    [run] = sched.runs("daily summary")
    assert run["session_id"] != target
    assert sched.call("session.get", {"session_id": run["session_id"]})["session"]["kind"] == "background"
    emptied = sched.call("schedule.update", {"schedule": "daily summary", "tools": []})
    assert emptied["tools"] == []  # an empty list is "no tools", not "left out"


@pytest.mark.parametrize("field", ["name", "prompt", "cron", "every", "at", "start"])
def test_k1_update_refuses_null_for_a_field_without_a_default_naming_it(sched: Scheduled, field: str) -> None:
    sched.daily()
    with pytest.raises(RpcError) as caught:
        sched.call("schedule.update", {"schedule": "daily summary", field: None})
    assert caught.value.message.startswith(f"{field}: cannot be cleared")
    assert sched.call("schedule.get", {"schedule": "daily summary"})["prompt"] == "Summarise the day."


def test_k1_a_schedules_role_model_and_tools_reach_its_runs(tmp_path: Path) -> None:
    clock = ManualWallClock(T0)
    live = LiveGateway(tmp_path, serve=False, wall_clock=clock)
    (live.profile.roles_dir / "scribe.toml").write_text(
        'identity = "You are the night scribe."\nsoul = "Short notes."\n'
    )
    config = live.profile.config_path
    config.write_text(config.read_text() + '\n[providers.spare]\nkind = "offline"\nmodels = ["offline"]\n')
    with live:
        _role_model_and_tools(Scheduled(live, clock))


def _role_model_and_tools(sched: Scheduled) -> None:
    live = sched.live
    sched.daily("notes", role="scribe", tools=["read_file"])
    sched.daily("elsewhere", model="spare/offline", tools=[])
    live.model.enqueue("Noted.")
    sched.at(EIGHT)
    notes = sched.runs("notes")[0]
    elsewhere = sched.runs("elsewhere")[0]
    for run in (notes, elsewhere):
        done = sched.call("session.wait", {"submission_id": run["submission_id"], "timeout": 30})
        assert done["state"] == "completed", done
    scribe = sched.call("session.get", {"session_id": notes["session_id"]})["session"]
    assert (scribe["role"], scribe["tools"]["enabled"]) == ("scribe", ["read_file"])
    request = next(r for r in live.model.requests if "night scribe" in r.system)
    assert [tool.name for tool in request.tools] == ["read_file"]  # the run's model call saw its tools only
    spare = sched.call("session.get", {"session_id": elsewhere["session_id"]})["session"]
    assert (spare["provider"], spare["model"], spare["role"]) == ("spare", "offline", "default")
    assert spare["tools"]["enabled"] == []
