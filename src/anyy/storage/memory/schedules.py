"""Schedules and their runs (SPEC K1), in memory. A claim checks everything before it changes anything,
so the claim, the run's session and its queued prompt appear together or not at all."""

from __future__ import annotations

import msgspec

from anyy.domain.paging import check_limit
from anyy.domain.queue import check_new_submission
from anyy.domain.schedule_records import NewSchedule, RunClaim, Schedule, ScheduleRun
from anyy.storage import schedule_rules as rules
from anyy.storage.memory.data import RunRecord, copied
from anyy.storage.memory.queue import QueuePart
from commons.ids import new_id


class SchedulesPart(QueuePart):
    def create_schedule(self, new: NewSchedule) -> Schedule:
        self._check_open()
        rules.check_new(new)
        self._check_free(new.name, None)
        now = self.clock()
        fields = msgspec.structs.asdict(new)
        schedule = Schedule(id=new_id("sch"), created_at=now, updated_at=now, **copied(fields))
        self.data.schedules[schedule.id] = schedule
        return copied(schedule)

    def _check_free(self, name: str, own_id: str | None) -> None:
        if any(s.name == name and s.id != own_id for s in self.data.schedules.values()):
            raise rules.name_taken(name)

    def _schedule(self, ref: str) -> Schedule:
        self._check_open()
        found = self.data.schedules.get(ref) or next((s for s in self.data.schedules.values() if s.name == ref), None)
        if found is None:
            raise rules.missing(self.profile, ref)
        return found

    def get_schedule(self, ref: str) -> Schedule:
        return copied(self._schedule(ref))

    def list_schedules(self) -> list[Schedule]:
        self._check_open()
        return copied(sorted(self.data.schedules.values(), key=lambda s: s.name))

    def due_schedules(self, now: float) -> list[Schedule]:
        self._check_open()
        due = [s for s in self.data.schedules.values() if not s.paused and s.next_at is not None and s.next_at <= now]
        return copied(sorted(due, key=lambda s: s.next_at or 0.0))

    def next_fire_time(self) -> float | None:
        self._check_open()
        times = [s.next_at for s in self.data.schedules.values() if not s.paused and s.next_at is not None]
        return min(times, default=None)

    def update_schedule(self, schedule: Schedule) -> Schedule:
        rules.check_name(schedule.name)
        current = self._schedule(schedule.id)
        if current.id != schedule.id:
            raise rules.missing(self.profile, schedule.id)
        self._check_free(schedule.name, schedule.id)
        updated = msgspec.structs.replace(copied(schedule), created_at=current.created_at, updated_at=self.clock())
        self.data.schedules[schedule.id] = updated
        return copied(updated)

    def delete_schedule(self, ref: str) -> None:
        found = self._schedule(ref)
        del self.data.schedules[found.id]
        self.data.schedule_runs = [r for r in self.data.schedule_runs if r.schedule_id != found.id]

    def claim_run(self, claim: RunClaim) -> ScheduleRun | None:
        prompt = check_new_submission(claim.prompt)
        schedule = self._schedule(claim.schedule_id)
        if any(
            r.schedule_id == claim.schedule_id and r.scheduled_for == claim.scheduled_for
            for r in self.data.schedule_runs
        ):
            return None
        if claim.error is None and claim.session is None:
            self._record(claim.session_id or "")  # the fixed session exists, or NotFound before any change
        record = RunRecord(
            schedule_id=claim.schedule_id,
            scheduled_for=claim.scheduled_for,
            claimed_at=self.clock(),
            session_id=None,
            submission_id=None,
            error=claim.error,
        )
        if claim.error is None:
            session_id = self.create_session(claim.session).id if claim.session is not None else claim.session_id or ""
            record.session_id = session_id
            record.submission_id = self.add_submission(session_id, prompt).id
        self.data.schedule_runs.append(record)
        schedule.considered = max(schedule.considered, claim.considered)
        schedule.next_at = claim.next_at
        return self._run_of(record)

    def _run_of(self, record: RunRecord) -> ScheduleRun:
        outcome = "failed" if record.error is not None else "deleted"
        found = self.data.submissions.get(record.submission_id or "")
        if record.error is None and found is not None:
            outcome = found.submission.state
        return ScheduleRun(
            schedule_id=record.schedule_id,
            scheduled_for=record.scheduled_for,
            claimed_at=record.claimed_at,
            session_id=record.session_id,
            submission_id=record.submission_id,
            outcome=outcome,
            error=record.error,
        )

    def list_runs(self, ref: str, *, limit: int = 50) -> list[ScheduleRun]:
        check_limit(limit)
        found = self._schedule(ref)
        mine = sorted(
            (r for r in self.data.schedule_runs if r.schedule_id == found.id),
            key=lambda r: r.scheduled_for,
            reverse=True,
        )
        return [self._run_of(r) for r in mine[:limit]]

    def pending_runs(self) -> list[ScheduleRun]:
        self._check_open()
        runs = [self._run_of(r) for r in self.data.schedule_runs]
        return [run for run in runs if run.outcome == "pending"]
