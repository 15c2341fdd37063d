"""Residents' heartbeats (K3) with an injected wall clock: a heartbeat wakes the resident's session with
a follow-up; last and next wake are kept; heartbeats missed while no Gateway ran give one wake, not a
burst; a wake already claimed (a Gateway killed after claiming it) never fires again after a restart."""

from __future__ import annotations

import asyncio
from pathlib import Path

from anyy.domain.model_io import TextDelta
from anyy.domain.residents import Resident
from anyy.domain.sessions import NewSession
from anyy.providers.gates import Gate
from anyy.runtime.residents import ResidentSpec
from anyy.storage.sqlite import SqliteStore
from tests.runtime.harness import TIMEOUT, Harness

SPEC = ResidentSpec(name="inbox", instructions="Keep the inbox tidy.", heartbeat_seconds=1800, heartbeat_note="tick")


class SteppedClock:
    """Wall time the test sets; a sleep ends once the time set reaches its end. ``waits`` counts the
    sleeps begun, so a test knows the heartbeat loop looked at what was due and now waits."""

    def __init__(self, t: float) -> None:
        self.t = t
        self.waits: list[float] = []
        self._moved = asyncio.Event()

    def now(self) -> float:
        return self.t

    async def sleep(self, seconds: float) -> None:
        end = self.t + seconds
        self.waits.append(seconds)
        self._moved.set()
        while self.t < end:
            self._moved.clear()
            await self._moved.wait()

    def set(self, t: float) -> None:
        self.t = t
        self._moved.set()

    async def waiting(self, more_than: int = 0) -> float:
        """Once more than ``more_than`` sleeps began: the last one's length."""

        async def begun() -> None:
            while len(self.waits) <= more_than:
                self._moved.clear()
                await self._moved.wait()

        await asyncio.wait_for(begun(), TIMEOUT)
        return self.waits[-1]


def harness(tmp_path: Path, t: float) -> tuple[Harness, SteppedClock]:
    h = Harness(tmp_path)
    h.wall = clock = SteppedClock(t)
    return h, clock


async def wakes(h: Harness, resident: Resident) -> list[str]:
    return [t for t in await h.texts(resident.session_id) if t.startswith("user:[heartbeat]")]


async def test_k3_a_heartbeat_wakes_the_resident_once_per_interval(tmp_path: Path) -> None:
    h, clock = harness(tmp_path, 0.0)
    async with h:
        resident, secret = await h.rt.residents.create(SPEC, NewSession())
        assert secret is None  # no webhook asked for
        assert resident.next_wake_at == 1800.0
        assert await clock.waiting() == 1800.0
        h.model.enqueue("tidied")
        seen = len(clock.waits)
        clock.set(1800.0)  # due
        await h.state("completed")
        assert await wakes(h, resident) == ["user:[heartbeat] tick\n\nStanding instructions: Keep the inbox tidy."]
        assert await clock.waiting(seen) == 1800.0  # the next one, an interval later
        again = await h.rt.residents.get("inbox")
        assert (again.last_wake_at, again.last_trigger, again.next_wake_at) == (1800.0, "heartbeat", 3600.0)
        session = await h.store(lambda s: s.get_session(resident.session_id))
        assert session.kind == "background"
        assert session.origin.resident_id == resident.id


async def test_k3_missed_heartbeats_give_one_wake_and_a_claimed_one_never_fires_twice(tmp_path: Path) -> None:
    h, clock = harness(tmp_path, 0.0)
    async with h:
        resident, _ = await h.rt.residents.create(SPEC, NewSession())
    # No Gateway ran from 0 to 10 000: five heartbeats were missed; one wake comes at start.
    h, clock = harness(tmp_path, 10_000.0)
    h.model.enqueue("caught up")
    async with h:
        await h.state("completed")
        assert len(await wakes(h, resident)) == 1
        await clock.waiting()
        after = await h.rt.residents.get("inbox")
        assert after.next_wake_at == 11_800.0
    # A Gateway claimed the 11 800 wake and was killed before it recorded anything else.
    store = SqliteStore(tmp_path / "state.db", profile="test")
    try:
        assert store.claim_wake(resident.id, 11_800.0)
        assert not store.claim_wake(resident.id, 11_800.0)
    finally:
        store.close()
    h, clock = harness(tmp_path, 12_000.0)
    async with h:
        assert await clock.waiting() > 0  # the loop looked at what was due, and now waits
        assert len(await wakes(h, resident)) == 1  # the claimed wake did not fire again
        assert (await h.rt.residents.get("inbox")).next_wake_at == 13_600.0


async def test_k3_a_paused_resident_has_no_heartbeat_until_resumed(tmp_path: Path) -> None:
    h, clock = harness(tmp_path, 0.0)
    async with h:
        resident, _ = await h.rt.residents.create(SPEC, NewSession())
        paused = await h.rt.residents.pause("inbox", True)
        assert paused.paused
        assert paused.next_wake_at is None
        clock.t = 5000.0
        resumed = await h.rt.residents.pause("inbox", False)
        assert resumed.next_wake_at == 6800.0
        assert await wakes(h, resident) == []


async def test_k3_heartbeats_do_not_pile_up_behind_a_busy_session(tmp_path: Path) -> None:
    h, clock = harness(tmp_path, 0.0)
    async with h:
        resident, _ = await h.rt.residents.create(SPEC, NewSession())
        await clock.waiting()
        held = Gate("busy")
        h.model.enqueue([held, TextDelta(text="slow")])
        for t in (1800.0, 3600.0, 5400.0):  # the first runs (held); the second queues; the third is skipped
            seen = len(clock.waits)
            clock.set(t)
            await clock.waiting(seen)
        pending = await h.store(lambda s: s.list_submissions(resident.session_id))
        assert [p.text.split("\n")[0] for p in pending] == ["[heartbeat] tick"]
        assert (await h.rt.residents.get("inbox")).next_wake_at == 7200.0
        h.model.enqueue("done")
        held.open()
