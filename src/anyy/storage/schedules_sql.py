"""Schedules and their runs (SPEC K1) over SQL, for the two SQL backends (their tables are the same): the
statements are written with ``?`` marks, and a backend says how it differs (its placeholders, its
unique-violation error, its ``greatest``, how it holds a session row). A run's claim, its session and its
queued prompt are one transaction."""

from __future__ import annotations

from typing import Any

from anyy.domain.paging import check_limit
from anyy.domain.queue import check_new_submission
from anyy.domain.schedule_records import NewSchedule, RunClaim, Schedule, ScheduleRun
from anyy.storage import schedule_rules as rules
from commons.ids import new_id

_MARKS = ", ".join(["?"] * 15)
_BY_REF = f"SELECT {rules.SCHEDULE_COLUMNS} FROM schedules WHERE id = ? OR name = ?"


class SchedulesSql:
    """The schedule methods of :class:`anyy.storage.protocol.SessionStore`, over the backend's core."""

    clock: Any
    conn: Any
    profile: str
    _nums: dict[str, int]
    _tx: Any
    _one: Any
    _insert_session: Any
    _notify: Any  # (session_id, kind): with several Gateways, the run's prompt is any Gateway's if this one fails
    _unique_violation: type[Exception]  # what the backend raises for a taken name
    _greatest = "max"  # the SQL function of the larger of two values

    def _sql(self, text: str) -> str:
        return text

    def _held_session_num(self, session_id: str) -> int:
        """Inside a write transaction: the session's number, its row held until the transaction ends."""
        raise NotImplementedError

    def _rows(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        rows: list[tuple[Any, ...]] = self.conn.execute(self._sql(sql), params).fetchall()
        return rows

    def create_schedule(self, new: NewSchedule) -> Schedule:
        rules.check_new(new)
        now = self.clock()
        schedule_id = new_id("sch")
        try:
            with self._tx() as conn:
                conn.execute(
                    self._sql(f"INSERT INTO schedules ({rules.SCHEDULE_COLUMNS}) VALUES ({_MARKS})"),
                    (schedule_id, *rules.schedule_values(new), now, now),
                )
        except self._unique_violation:
            raise rules.name_taken(new.name) from None
        return self.get_schedule(schedule_id)

    def get_schedule(self, ref: str) -> Schedule:
        row = self._one(self._sql(_BY_REF), (ref, ref))
        if row is None:
            raise rules.missing(self.profile, ref)
        return rules.schedule_from_row(row)

    def list_schedules(self) -> list[Schedule]:
        rows = self._rows(f"SELECT {rules.SCHEDULE_COLUMNS} FROM schedules ORDER BY name")
        return [rules.schedule_from_row(row) for row in rows]

    def due_schedules(self, now: float) -> list[Schedule]:
        rows = self._rows(
            f"SELECT {rules.SCHEDULE_COLUMNS} FROM schedules WHERE paused = 0 AND next_at IS NOT NULL "
            "AND next_at <= ? ORDER BY next_at",
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
                    self._sql(
                        "UPDATE schedules SET name = ?, timing = ?, prompt = ?, role = ?, provider = ?, model = ?, "
                        "tools = ?, session_id = ?, paused = ?, considered = ?, next_at = ?, workspace = ?, "
                        "updated_at = ? WHERE id = ?"
                    ),
                    (*rules.schedule_values(schedule), self.clock(), schedule.id),
                )
                if cur.rowcount == 0:
                    raise rules.missing(self.profile, schedule.id)
        except self._unique_violation:
            raise rules.name_taken(schedule.name) from None
        return self.get_schedule(schedule.id)

    def delete_schedule(self, ref: str) -> None:
        found = self.get_schedule(ref)
        with self._tx() as conn:
            conn.execute(self._sql("DELETE FROM schedule_runs WHERE schedule_id = ?"), (found.id,))
            conn.execute(self._sql("DELETE FROM schedules WHERE id = ?"), (found.id,))

    def claim_run(self, claim: RunClaim) -> ScheduleRun | None:
        prompt = check_new_submission(claim.prompt)
        now = self.clock()
        with self._tx() as conn:
            cur = conn.execute(
                self._sql(
                    "INSERT INTO schedule_runs (schedule_id, scheduled_for, claimed_at, error) VALUES (?, ?, ?, ?) "
                    "ON CONFLICT DO NOTHING"
                ),
                (claim.schedule_id, claim.scheduled_for, now, claim.error),
            )
            if cur.rowcount == 0:
                return None  # claimed before: by this Gateway before a restart, or by another one
            if claim.error is None:
                self._queue_run(conn, claim, prompt.kind, prompt.text, now)
            conn.execute(
                self._sql(
                    f"UPDATE schedules SET considered = {self._greatest}(considered, ?), next_at = ? WHERE id = ?"
                ),
                (claim.considered, claim.next_at, claim.schedule_id),
            )
        return self._run(claim.schedule_id, claim.scheduled_for)

    def _queue_run(self, conn: Any, claim: RunClaim, kind: str, text: str, now: float) -> None:
        """Inside the claim's transaction: the run's session (new, or the schedule's own) and its prompt."""
        if claim.session is not None:
            session_id, num = self._insert_session(conn, claim.session)
            self._nums[session_id] = num
        else:
            session_id = claim.session_id or ""
            num = self._held_session_num(session_id)
        submission_id = new_id("sub")
        conn.execute(
            self._sql(
                "INSERT INTO submissions (id, session_num, kind, text, attachments, state, position, created_at, "
                "updated_at) SELECT ?, ?, ?, ?, '[]', 'pending', coalesce(max(position), 0) + 1, ?, ? "
                "FROM submissions WHERE session_num = ?"
            ),
            (submission_id, num, kind, text, now, now, num),
        )
        conn.execute(
            self._sql(
                "UPDATE schedule_runs SET session_id = ?, submission_id = ? WHERE schedule_id = ? AND scheduled_for = ?"
            ),
            (session_id, submission_id, claim.schedule_id, claim.scheduled_for),
        )
        # The run's wake-up, durable with the claim: a claimant that dies (or loses its store connection)
        # before it starts the run leaves it to any Gateway, which runs it once (P7).
        self._notify(session_id, "work")

    def _run(self, schedule_id: str, scheduled_for: float) -> ScheduleRun:
        row = self._one(
            self._sql(f"{rules.RUN_SELECT} WHERE r.schedule_id = ? AND r.scheduled_for = ?"),
            (schedule_id, scheduled_for),
        )
        assert row is not None
        return rules.run_from_row(row)

    def list_runs(self, ref: str, *, limit: int = 50) -> list[ScheduleRun]:
        check_limit(limit)
        found = self.get_schedule(ref)
        rows = self._rows(
            f"{rules.RUN_SELECT} WHERE r.schedule_id = ? ORDER BY r.scheduled_for DESC LIMIT ?", (found.id, limit)
        )
        return [rules.run_from_row(row) for row in rows]

    def pending_runs(self) -> list[ScheduleRun]:
        rows = self._rows(f"{rules.RUN_SELECT} WHERE s.state = 'pending' ORDER BY r.claimed_at")
        return [rules.run_from_row(row) for row in rows]
