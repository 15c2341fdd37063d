"""Schedules and their runs (SPEC K1); a run's claim, session and queued prompt are one transaction."""

from __future__ import annotations

from typing import Any

import psycopg

from anyy.domain.paging import check_limit
from anyy.domain.queue import check_new_submission
from anyy.domain.schedule_records import NewSchedule, RunClaim, Schedule, ScheduleRun
from anyy.storage import schedule_rules as rules
from anyy.storage.postgres.sessions import SessionsPart
from commons.ids import new_id

_MARKS = ", ".join(["%s"] * 14)
_BY_REF = f"SELECT {rules.SCHEDULE_COLUMNS} FROM schedules WHERE id = %s OR name = %s"


class SchedulesPart(SessionsPart):
    def create_schedule(self, new: NewSchedule) -> Schedule:
        rules.check_new(new)
        now = self.clock()
        schedule_id = new_id("sch")
        try:
            with self._tx() as conn:
                conn.execute(
                    f"INSERT INTO schedules ({rules.SCHEDULE_COLUMNS}) VALUES ({_MARKS})",
                    (schedule_id, *rules.schedule_values(new), now, now),
                )
        except psycopg.errors.UniqueViolation:
            raise rules.name_taken(new.name) from None
        return self.get_schedule(schedule_id)

    def get_schedule(self, ref: str) -> Schedule:
        row = self._one(_BY_REF, (ref, ref))
        if row is None:
            raise rules.missing(self.profile, ref)
        return rules.schedule_from_row(row)

    def list_schedules(self) -> list[Schedule]:
        rows = self._all(f"SELECT {rules.SCHEDULE_COLUMNS} FROM schedules ORDER BY name")
        return [rules.schedule_from_row(row) for row in rows]

    def due_schedules(self, now: float) -> list[Schedule]:
        rows = self._all_rows(
            f"SELECT {rules.SCHEDULE_COLUMNS} FROM schedules WHERE paused = 0 AND next_at IS NOT NULL "
            "AND next_at <= %s ORDER BY next_at",
            (now,),
        )
        return [rules.schedule_from_row(row) for row in rows]

    def next_fire_time(self) -> float | None:
        row = self._one("SELECT min(next_at) FROM schedules WHERE paused = 0 AND next_at IS NOT NULL")
        return None if row is None or row[0] is None else float(row[0])

    def update_schedule(self, schedule: Schedule) -> Schedule:
        rules.check_name(schedule.name)
        try:
            with self._tx() as conn:
                cur = conn.execute(
                    "UPDATE schedules SET name = %s, timing = %s, prompt = %s, role = %s, provider = %s, model = %s, "
                    "tools = %s, session_id = %s, paused = %s, considered = %s, next_at = %s, updated_at = %s "
                    "WHERE id = %s",
                    (*rules.schedule_values(schedule), self.clock(), schedule.id),
                )
                if cur.rowcount == 0:
                    raise rules.missing(self.profile, schedule.id)
        except psycopg.errors.UniqueViolation:
            raise rules.name_taken(schedule.name) from None
        return self.get_schedule(schedule.id)

    def delete_schedule(self, ref: str) -> None:
        found = self.get_schedule(ref)
        with self._tx() as conn:
            conn.execute("DELETE FROM schedule_runs WHERE schedule_id = %s", (found.id,))
            conn.execute("DELETE FROM schedules WHERE id = %s", (found.id,))

    def claim_run(self, claim: RunClaim) -> ScheduleRun | None:
        prompt = check_new_submission(claim.prompt)
        now = self.clock()
        with self._tx() as conn:
            cur = conn.execute(
                "INSERT INTO schedule_runs (schedule_id, scheduled_for, claimed_at, error) VALUES (%s, %s, %s, %s) "
                "ON CONFLICT DO NOTHING",
                (claim.schedule_id, claim.scheduled_for, now, claim.error),
            )
            if cur.rowcount == 0:
                return None  # claimed before: by this Gateway before a restart, or by another one
            if claim.error is None:
                if claim.session is not None:
                    session_id, num = self._insert_session(conn, claim.session)
                    self._nums[session_id] = num
                else:
                    session_id = claim.session_id or ""
                    num = self._session_num(session_id, lock=True)
                submission_id = new_id("sub")
                conn.execute(
                    "INSERT INTO submissions (id, session_num, kind, text, attachments, state, position, created_at, "
                    "updated_at) SELECT %s, %s, %s, %s, '[]', 'pending', coalesce(max(position), 0) + 1, %s, %s "
                    "FROM submissions WHERE session_num = %s",
                    (submission_id, num, prompt.kind, prompt.text, now, now, num),
                )
                conn.execute(
                    "UPDATE schedule_runs SET session_id = %s, submission_id = %s WHERE schedule_id = %s "
                    "AND scheduled_for = %s",
                    (session_id, submission_id, claim.schedule_id, claim.scheduled_for),
                )
            conn.execute(
                "UPDATE schedules SET considered = greatest(considered, %s), next_at = %s WHERE id = %s",
                (claim.considered, claim.next_at, claim.schedule_id),
            )
        return self._run(claim.schedule_id, claim.scheduled_for)

    def _run(self, schedule_id: str, scheduled_for: float) -> ScheduleRun:
        row = self._one(
            f"{rules.RUN_SELECT} WHERE r.schedule_id = %s AND r.scheduled_for = %s", (schedule_id, scheduled_for)
        )
        assert row is not None
        return rules.run_from_row(row)

    def list_runs(self, ref: str, *, limit: int = 50) -> list[ScheduleRun]:
        check_limit(limit)
        found = self.get_schedule(ref)
        rows = self.conn.execute(
            f"{rules.RUN_SELECT} WHERE r.schedule_id = %s ORDER BY r.scheduled_for DESC LIMIT %s", (found.id, limit)
        ).fetchall()
        return [rules.run_from_row(row) for row in rows]

    def _all_rows(self, sql: str, params: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        rows: list[tuple[Any, ...]] = self.conn.execute(sql, params).fetchall()
        return rows

    def pending_runs(self) -> list[ScheduleRun]:
        rows = self.conn.execute(f"{rules.RUN_SELECT} WHERE s.state = 'pending' ORDER BY r.claimed_at").fetchall()
        return [rules.run_from_row(row) for row in rows]
