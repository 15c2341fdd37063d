"""K1: schedules and their runs in every backend. A run's claim, its session and its queued prompt are
one transaction; the same (schedule, scheduled time) is claimed once, whatever happens after."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

from anyy.domain.errors import Conflict, InvalidInput, NotFound
from anyy.domain.queue import NewSubmission
from anyy.domain.schedule_records import NewSchedule, RunClaim, Schedule
from anyy.domain.schedules import Timing
from anyy.domain.sessions import NewSession, Origin
from anyy.storage.protocol import SessionStore
from tests.conformance.backends import open_backend
from tests.conformance.conftest import OpenStore, Reopen

DAILY = Timing(kind="cron", cron="0 8 * * *", timezone="Europe/Paris", catch_up="once")
T0 = 1_790_000_000.0


def _new(name: str = "daily summary", **kw: object) -> NewSchedule:
    return NewSchedule(name=name, timing=DAILY, prompt="Summarise yesterday.", next_at=T0, **kw)  # type: ignore[arg-type]


def _claim(schedule_id: str, at: float = T0, **kw: object) -> RunClaim:
    origin = Origin(kind="schedule", name="daily summary", schedule_id=schedule_id, scheduled_for=at)
    fields: dict[str, object] = {"session": NewSession(kind="background", title="daily summary", origin=origin)}
    fields.update(kw)
    return RunClaim(
        schedule_id=schedule_id,
        scheduled_for=at,
        considered=at + 1,
        next_at=at + 86_400,
        prompt=NewSubmission(text="Summarise yesterday."),
        **fields,  # type: ignore[arg-type]
    )


def test_k1_a_schedule_is_kept_across_reopen_and_found_by_id_or_name(store: SessionStore, reopen: Reopen) -> None:
    made = store.create_schedule(_new(tools=["read_file"], role="default"))
    assert made.id.startswith("sch_")
    assert made.timing == DAILY
    assert not made.paused
    assert made.next_at == T0
    store = reopen(store)
    assert store.get_schedule(made.id) == made
    assert store.get_schedule("daily summary") == made
    assert [s.id for s in store.list_schedules()] == [made.id]


def test_k1_names_are_unique_and_checked(store: SessionStore) -> None:
    store.create_schedule(_new())
    with pytest.raises(Conflict, match="name"):
        store.create_schedule(_new())
    with pytest.raises(InvalidInput, match="name"):
        store.create_schedule(_new(name="  "))
    other = store.create_schedule(_new(name="weekly"))
    with pytest.raises(Conflict, match="name"):
        store.update_schedule(_replace(other, name="daily summary"))
    assert [s.name for s in store.list_schedules()] == ["daily summary", "weekly"]


def _replace(schedule: Schedule, **changes: object) -> Schedule:
    return msgspec.structs.replace(schedule, **changes)


def test_k1_update_pause_and_delete(store: SessionStore) -> None:
    made = store.create_schedule(_new())
    paused = store.update_schedule(_replace(made, paused=True, prompt="Other."))
    assert paused.paused
    assert paused.prompt == "Other."
    assert paused.created_at == made.created_at
    store.claim_run(_claim(made.id))
    store.delete_schedule("daily summary")
    with pytest.raises(NotFound, match="schedule"):
        store.get_schedule(made.id)
    assert store.list_schedules() == []
    with pytest.raises(NotFound):
        store.delete_schedule(made.id)


def test_k1_a_claim_writes_the_run_its_session_and_its_queued_prompt_once(store: SessionStore, reopen: Reopen) -> None:
    made = store.create_schedule(_new())
    run = store.claim_run(_claim(made.id))
    assert run is not None
    assert run.outcome == "pending"
    assert run.error is None
    assert run.session_id
    session = store.get_session(run.session_id)
    assert session.kind == "background"
    assert session.origin is not None
    assert session.origin.schedule_id == made.id
    [queued] = store.list_submissions(run.session_id)
    assert queued.id == run.submission_id
    assert queued.text == "Summarise yesterday."
    after = store.get_schedule(made.id)
    assert after.considered == T0 + 1
    assert after.next_at == T0 + 86_400
    store = reopen(store)
    assert store.claim_run(_claim(made.id)) is None  # a second claim of the same run (after a restart) does nothing
    assert len(store.list_sessions(kind="background").items) == 1
    assert [r.scheduled_for for r in store.list_runs(made.id)] == [T0]
    assert [r.submission_id for r in store.pending_runs()] == [run.submission_id]


def test_k1_a_claim_from_a_second_store_on_the_same_data_loses(store: SessionStore, reopen: Reopen) -> None:
    made = store.create_schedule(_new())
    first = store.claim_run(_claim(made.id))
    store = reopen(store)
    assert first is not None
    assert store.claim_run(_claim(made.id)) is None
    second = store.claim_run(_claim(made.id, at=T0 + 86_400))
    assert second is not None
    assert second.session_id != first.session_id
    assert [r.scheduled_for for r in store.list_runs(made.id)] == [T0 + 86_400, T0]
    assert [r.scheduled_for for r in store.list_runs("daily summary", limit=1)] == [T0 + 86_400]


def test_k1_a_run_into_a_fixed_session_queues_there(store: SessionStore) -> None:
    target = store.create_session(NewSession(title="my notes"))
    made = store.create_schedule(_new(session_id=target.id))
    run = store.claim_run(_claim(made.id, session=None, session_id=target.id))
    assert run is not None
    assert run.session_id == target.id
    assert [s.id for s in store.list_submissions(target.id)] == [run.submission_id]
    gone = store.create_session(NewSession(title="gone"))
    store.delete_session(gone.id)
    with pytest.raises(NotFound):
        store.claim_run(_claim(made.id, at=T0 + 60, session=None, session_id=gone.id))
    assert [r.scheduled_for for r in store.list_runs(made.id)] == [T0]  # nothing of the refused claim stays
    failed = store.claim_run(_claim(made.id, at=T0 + 60, session=None, error="its session was deleted"))
    assert failed is not None
    assert failed.outcome == "failed"
    assert failed.error == "its session was deleted"
    assert failed.session_id is None


def test_k1_the_outcome_follows_the_prompt(store: SessionStore) -> None:
    made = store.create_schedule(_new())
    run = store.claim_run(_claim(made.id))
    assert run is not None
    assert run.session_id
    assert run.submission_id
    execution = store.start_execution(run.session_id, [run.submission_id], record_inputs=True)
    assert [r.outcome for r in store.list_runs(made.id)] == ["taken"]
    assert store.pending_runs() == []
    store.set_execution_state(execution.id, "completed")
    assert [r.outcome for r in store.list_runs(made.id)] == ["completed"]


def test_k1_schedules_are_per_store(open_store: OpenStore) -> None:
    one, two = open_store("one"), open_store("two")
    made = one.create_schedule(_new())
    with pytest.raises(NotFound):
        two.get_schedule(made.id)


def test_k1_the_timer_reads_the_due_schedules_and_the_earliest_fire_time(store: SessionStore) -> None:
    assert store.next_fire_time() is None
    early = store.create_schedule(NewSchedule(name="early", timing=DAILY, prompt="p", next_at=T0))
    store.create_schedule(NewSchedule(name="late", timing=DAILY, prompt="p", next_at=T0 + 600))
    store.create_schedule(NewSchedule(name="paused", timing=DAILY, prompt="p", next_at=T0 - 600, paused=True))
    store.create_schedule(NewSchedule(name="done", timing=DAILY, prompt="p", next_at=None))
    assert store.next_fire_time() == T0
    assert store.due_schedules(T0 - 1) == []
    assert [s.name for s in store.due_schedules(T0)] == ["early"]
    assert [s.name for s in store.due_schedules(T0 + 600)] == ["early", "late"]
    store.update_schedule(_replace(early, paused=True))
    assert store.next_fire_time() == T0 + 600


def test_k1_a_snapshot_keeps_schedules_and_their_runs(store: SessionStore, backend: str, tmp_path: Path) -> None:
    made = store.create_schedule(_new())
    run = store.claim_run(_claim(made.id))
    target = tmp_path / "snapshot"
    target.mkdir()
    store.snapshot(target)
    copy = open_backend(backend, target)
    try:
        assert copy.get_schedule(made.id) == store.get_schedule(made.id)
        assert copy.list_runs(made.id) == store.list_runs(made.id)
        assert run is not None
        assert copy.claim_run(_claim(made.id)) is None  # the claim travels with the copy
    finally:
        copy.close()
