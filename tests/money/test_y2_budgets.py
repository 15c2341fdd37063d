"""Y2: budgets are checked before each model call with the call's worst case, so at most one call crosses
a limit; a spent budget ends the execution ``budget_exhausted`` with a notice saying which budget and how to
raise it, sends nothing more to the model, and raising it then continuing goes on. A delegated child spends
from its parent's budget, and the model has no way to raise one."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from anyy.api.events import ExecutionStateChanged
from anyy.domain.budgets import scopes_for
from anyy.domain.entries import EntryKind
from anyy.domain.pricing import usd_to_nano
from anyy.domain.sessions import NewSession, Origin, Session
from anyy.runtime.deps import Deps
from tests.fakes.model_server import FakeModelServer, Reply
from tests.money.support import KEYS, TIMEOUT, money_profile, new_chat, running, turn

# gpt-4o: $2.50 input, $10 output per million. A call of 10,000 input and 1,000 output tokens costs $0.035;
# its worst case before the call is its 4,096 output tokens at $10: $0.04096.
CALL = {"input_tokens": 10_000, "output_tokens": 1_000}


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeModelServer]:
    for name, value in KEYS.items():
        monkeypatch.setenv(name, value)
    fake = FakeModelServer()
    fake.start()
    yield fake
    fake.stop()


async def _notices(deps: Deps, session_id: str) -> list[str]:
    path = await deps.owner.call(lambda s: s.path(session_id))
    return [e.text for e in path if e.kind == EntryKind.NOTICE]


async def test_y2_session_budget_stops_before_the_call_that_could_pass_it(
    tmp_path: Path, server: FakeModelServer
) -> None:
    server.enqueue(*(Reply(text=[f"answer {i}"], **CALL) for i in range(3)))  # type: ignore[arg-type]
    profile = money_profile(tmp_path / "home", server, "\n[budgets]\nsession = 0.10\nwarn_at = 0.7\n")
    async with running(profile, tmp_path / "work") as (runtime, deps):
        session = await new_chat(deps, profile, "gpt", "gpt-4o")
        assert await turn(runtime, deps, session, "one") == "completed"  # 0 + 0.041 <= 0.10; spent 0.035
        assert await turn(runtime, deps, session, "two") == "completed"  # 0.035 + 0.041 <= 0.10; spent 0.07
        assert await turn(runtime, deps, session, "three") == "budget_exhausted"  # 0.07 + 0.041 > 0.10
        assert len(server.received) == 2  # the third call was never made
        notices = await _notices(deps, session.id)
        assert any(f"session {session.id}" in n and "anyy budget set session:" in n for n in notices), notices
        # Before the second call, 0.035 spent + its worst case 0.041 reached 70%: one warning.
        assert [n for n in notices if n.startswith("Budget warning")] == [notices[0]]
        [line] = await deps.owner.call(lambda s: s.usage_report("session"))
        assert line.cost_nano == 2 * usd_to_nano(0.035)

        # Raised for this session, a continuation answers the message the budget stopped.
        await deps.owner.call(lambda s: s.set_budget(f"session:{session.id}", usd_to_nano(1.0)))
        events = deps.bus.subscribe(session.id)
        await runtime.continue_queue(session.id)

        async def completed() -> None:
            while True:
                event = await events.get()
                if isinstance(event, ExecutionStateChanged) and event.state == "completed":
                    return

        await asyncio.wait_for(completed(), TIMEOUT)
        events.close()
    assert len(server.received) == 3


async def test_y2_profile_day_budget_covers_every_session(tmp_path: Path, server: FakeModelServer) -> None:
    server.enqueue(Reply(text=["a"], **CALL))  # type: ignore[arg-type]
    profile = money_profile(tmp_path / "home", server, "\n[budgets]\nday = 0.06\n")
    async with running(profile, tmp_path / "work") as (runtime, deps):
        first = await new_chat(deps, profile, "gpt", "gpt-4o")
        assert await turn(runtime, deps, first, "one") == "completed"  # spent 0.035
        other = await new_chat(deps, profile, "gpt", "gpt-4o")
        assert await turn(runtime, deps, other, "two") == "budget_exhausted"  # 0.035 + 0.041 > 0.06
        [notice] = [n for n in await _notices(deps, other.id) if n.startswith("Budget exhausted")]
        assert "the profile's daily budget is $0.060" in notice
        assert "[budgets] of config.toml" in notice
    assert len(server.received) == 1


def test_y2_a_delegated_child_spends_from_its_parents_budget_and_cannot_have_its_own() -> None:
    parent_id = "ses_parent"
    child = NewSession(kind="background", origin=Origin(kind="delegate", parent_session_id=parent_id))
    session = _as_session(child, "ses_child")
    overrides = {"session:ses_child": usd_to_nano(1000)}  # even a limit set on the child's own id is not it
    [scope] = scopes_for(session, {"session": 1.0}, overrides, 0.0)
    assert (scope.key, scope.limit_nano, scope.value) == (f"session:{parent_id}", usd_to_nano(1.0), parent_id)


def test_y2_a_schedules_sessions_fall_under_its_daily_budget_and_the_profiles() -> None:
    run = NewSession(kind="background", origin=Origin(kind="schedule", name="nightly", schedule_id="sch_1"))
    scopes = scopes_for(_as_session(run, "ses_run"), {"day": 5.0, "schedule": 0.5}, {}, 86_400 * 3 + 60)
    assert [(s.key, s.since) for s in scopes] == [("day", 86_400 * 3), ("schedule:sch_1", 86_400 * 3)]
    assert "schedule nightly" in scopes[1].label


def _as_session(new: NewSession, session_id: str) -> Session:
    return Session(
        id=session_id,
        kind=new.kind,
        title="",
        role="default",
        provider="",
        model="",
        effort="",
        tools={},
        steering_mode="one-at-a-time",
        follow_up_mode="one-at-a-time",
        goal=None,
        head=None,
        forked_from=None,
        created_at=0.0,
        updated_at=0.0,
        origin=new.origin,
    )
