"""Submissions (the steering and follow-up queues) and executions, with their outcomes."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec

from anyy.domain.entries import Entry, EntryKind, NewEntry, UserData
from anyy.domain.queue import (
    ACTIVE_EXECUTION_STATES,
    FINAL_EXECUTION_STATES,
    Execution,
    NewSubmission,
    Submission,
    check_editable,
    check_new_submission,
    same_send,
)
from anyy.storage import rules
from anyy.storage.postgres.core import PgCore
from anyy.storage.postgres.entries import EntriesPart, Prepared
from anyy.storage.queue_sql import EXECUTION_FROM, SUBMISSION_FROM, QueueSql
from anyy.storage.rows import (
    EXECUTION_COLUMNS,
    SUBMISSION_COLUMNS,
    execution_from_row,
    submission_from_row,
)
from commons.ids import new_id

_json = msgspec.json.Encoder()


class QueuePart(EntriesPart, PgCore, QueueSql):
    def _sql(self, text: str) -> str:
        return text.replace("?", "%s")

    def _held_submission(self, submission_id: str) -> tuple[int, Submission]:
        return self._submission(submission_id, lock=True)

    def _held_execution(self, execution_id: str, *, fence: bool = False) -> tuple[int, int, Execution]:
        held = self._execution(execution_id, lock=True)
        if fence:
            self._fence(held[0], held[2].session_id)
        return held

    # -- submissions -----------------------------------------------------------------------------
    def _submission(self, submission_id: str, *, lock: bool = False) -> tuple[int, Submission]:
        """``lock``: inside a transaction, hold the item until it ends (a concurrent edit waits, then sees
        the new version)."""
        row = self._one(
            f"SELECT s.num, {SUBMISSION_COLUMNS} {SUBMISSION_FROM} WHERE s.id = %s AND x.status = 'active'"
            + (" FOR UPDATE OF s" if lock else ""),
            (submission_id,),
        )
        if row is None:
            raise rules.missing_submission(self.profile, submission_id)
        return row[0], submission_from_row(row[1:])

    def add_submission(self, session_id: str, new: NewSubmission) -> Submission:
        new = check_new_submission(new)
        now = self.clock()
        submission_id = new_id("sub")
        with self._tx() as conn:
            num = self._session_num(session_id, lock=True)
            if new.key is not None:
                found = conn.execute(
                    "SELECT id FROM submissions WHERE session_num = %s AND idem_key = %s", (num, new.key)
                ).fetchone()
                if found is not None:  # a retried send: the first one's submission, nothing added
                    return same_send(self.get_submission(found[0]), new)
            self._insert_submission(conn, num, submission_id, new, now)
            self._notify(session_id, "work")
            self._notify(session_id, "change")
        return self.get_submission(submission_id)

    def _insert_submission(self, conn: Any, num: int, submission_id: str, new: NewSubmission, now: float) -> None:
        """Inside a transaction: a checked submission at the end of session ``num``'s queue."""
        cur = conn.execute(
            "INSERT INTO submissions (id, session_num, kind, text, attachments, state, position, "
            "created_at, updated_at, idem_key) SELECT %s, %s, %s, %s, %s, 'pending', "
            "coalesce(max(position), 0) + 1, %s, %s, %s FROM submissions WHERE session_num = %s RETURNING num",
            (submission_id, num, new.kind, new.text, _json.encode(new.attachments).decode(), now, now, new.key, num),
        )
        inserted = cur.fetchone()
        assert inserted is not None
        self._refs_for(inserted[0], new.attachments)

    # -- executions ------------------------------------------------------------------------------
    def _execution(self, execution_id: str, *, lock: bool = False) -> tuple[int, int, Execution]:
        row = self._one(
            f"SELECT e.session_num, {EXECUTION_COLUMNS} {EXECUTION_FROM} WHERE e.id = %s AND x.status = 'active'"
            + (" FOR UPDATE OF e" if lock else ""),
            (execution_id,),
        )
        if row is None:
            raise rules.missing_execution(self.profile, execution_id)
        ids = [
            r[0]
            for r in self.conn.execute(
                "SELECT id FROM submissions WHERE execution_id = %s ORDER BY num", (execution_id,)
            )
        ]
        return row[0], row[1], execution_from_row(row[1:], ids)

    def _take(self, num: int, execution_id: str, submission_ids: Sequence[str], *, record_inputs: bool) -> None:
        taken: list[tuple[str, Submission]] = []
        for submission_id in submission_ids:
            sub_num, sub = self._submission(submission_id, lock=True)
            owner = self._one("SELECT session_num FROM submissions WHERE num = %s", (sub_num,))
            if owner is None or owner[0] != num:
                raise rules.not_this_session(submission_id)
            check_editable(sub, None)
            self.conn.execute(
                "UPDATE submissions SET state = 'taken', execution_id = %s, version = version + 1, "
                "updated_at = %s WHERE num = %s",
                (execution_id, self.clock(), sub_num),
            )
            taken.append((submission_id, sub))
        if record_inputs and taken:
            # What the user sent becomes part of the conversation in the same transaction that takes it.
            session_id = taken[0][1].session_id
            entries = [
                NewEntry(
                    kind=EntryKind.USER,
                    text=sub.text,
                    data=UserData(attachments=sub.attachments) if sub.attachments else None,
                )
                for _, sub in taken
            ]
            appended = self._append_prepared(session_id, [self._prepare(new) for new in entries])
            self.conn.cursor().executemany(
                "UPDATE submissions SET entry_id = %s WHERE id = %s",
                [(entry.id, submission_id) for entry, (submission_id, _) in zip(appended, taken, strict=True)],
            )

    def start_execution(
        self, session_id: str, submission_ids: Sequence[str], *, record_inputs: bool = False
    ) -> Execution:
        execution_id = new_id("exe")
        with self._tx() as conn:
            num = self._session_num(session_id, lock=True)
            self._fence(num, session_id)
            busy = conn.execute(
                "SELECT id, state FROM executions WHERE session_num = %s AND state IN ('running', 'retry_wait', "
                "'suspended')",
                (num,),
            ).fetchone()
            if busy is not None:
                raise rules.session_busy(session_id, busy[0], busy[1])
            conn.execute(
                "INSERT INTO executions (id, session_num, state, started_at) VALUES (%s, %s, 'running', %s)",
                (execution_id, num, self.clock()),
            )
            if self.member is not None:  # the queue's wake-up is taken with its items (P7)
                conn.execute("UPDATE sessions SET wake = false WHERE num = %s AND wake", (num,))
            self._take(num, execution_id, submission_ids, record_inputs=record_inputs)
        return self.get_execution(execution_id)

    def take_submissions(
        self, execution_id: str, submission_ids: Sequence[str], *, record_inputs: bool = False
    ) -> list[Submission]:
        with self._tx():
            num, _exe_num, execution = self._execution(execution_id, lock=True)
            self._fence(num, execution.session_id)
            if execution.state not in ACTIVE_EXECUTION_STATES:
                raise rules.execution_ended(execution_id, execution.state)
            self._take(num, execution_id, submission_ids, record_inputs=record_inputs)
        return [self.get_submission(sid) for sid in submission_ids]

    def record_pass(
        self, execution_id: str, entries: Sequence[NewEntry], *, link_submissions: Sequence[str] = ()
    ) -> list[Entry]:
        prepared = [self._prepare(new) for new in entries]
        return self._record_pass(execution_id, prepared, link_submissions)

    def _record_pass(
        self, execution_id: str, prepared: Sequence[Prepared], link_submissions: Sequence[str]
    ) -> list[Entry]:
        with self._tx() as conn:
            num, exe_num, execution = self._execution(execution_id, lock=True)
            self._fence(num, execution.session_id)
            if execution.state in FINAL_EXECUTION_STATES:
                raise rules.execution_ended(execution_id, execution.state)
            appended = self._append_prepared(execution.session_id, prepared)
            users = [entry.id for entry in appended if entry.kind == EntryKind.USER]
            if len(link_submissions) > len(users):
                raise rules.too_many_links()
            for submission_id, entry_id in zip(link_submissions, users, strict=False):
                conn.execute(
                    "UPDATE submissions SET entry_id = %s WHERE id = %s AND execution_id = %s",
                    (entry_id, submission_id, execution_id),
                )
            conn.execute("UPDATE executions SET passes = passes + 1 WHERE num = %s", (exe_num,))
            self._drop_running_pass(exe_num)
        return appended

    def list_executions(self, session_id: str, *, active_only: bool = False) -> list[Execution]:
        num = self._session_num(session_id)
        where = " AND e.state IN ('running', 'retry_wait', 'suspended')" if active_only else ""
        # One query, each execution with its submissions (other Gateways re-read this on every change hint).
        rows = self._all(
            f"SELECT {EXECUTION_COLUMNS}, coalesce((SELECT array_agg(s.id ORDER BY s.num) FROM submissions s "
            f"WHERE s.execution_id = e.id), '{{}}') {EXECUTION_FROM} WHERE e.session_num = %s{where} ORDER BY e.num",
            (num,),
        )
        return [execution_from_row(row[:-1], list(row[-1])) for row in rows]

    def last_execution(self, session_id: str) -> Execution | None:
        num = self._session_num(session_id)
        rows = self._all(
            f"SELECT {EXECUTION_COLUMNS}, coalesce((SELECT array_agg(s.id ORDER BY s.num) FROM submissions s "
            f"WHERE s.execution_id = e.id), '{{}}') {EXECUTION_FROM} WHERE e.session_num = %s "
            "ORDER BY e.num DESC LIMIT 1",
            (num,),
        )
        return execution_from_row(rows[0][:-1], list(rows[0][-1])) if rows else None

    def save_stream_text(
        self, execution_id: str, text: str, *, provider: str, model: str, first: bool = False, thinking: str = ""
    ) -> None:
        pieces = rules.stream_pieces(text, thinking)
        with self._tx() as conn:
            exe_num = self._running_exe(execution_id)
            if first:
                conn.execute("DELETE FROM stream_texts WHERE exe_num = %s", (exe_num,))
            # One statement whatever the kinds: thinking and text saved together cost no extra round trip.
            conn.execute(
                "INSERT INTO stream_texts (exe_num, seq, kind, provider, model, text, saved_at) SELECT %s, "
                "base.seq + p.n, p.kind, %s, %s, p.text, %s FROM unnest(%s::text[], %s::text[]) WITH ORDINALITY "
                "AS p(kind, text, n), (SELECT coalesce(max(seq), 0) AS seq FROM stream_texts WHERE exe_num = %s) base",
                (exe_num, provider, model, self.clock(), [k for k, _ in pieces], [t for _, t in pieces], exe_num),
            )

    def recover_interrupted(self, note: str) -> list[Execution]:
        if self.member is not None:  # a Gateway of a shared store recovers only what dead Gateways left
            return self._recover_orphans()
        rows = self.conn.execute(
            "SELECT e.id, e.num, x.id, x.origin IS NOT NULL FROM executions e JOIN sessions x "
            "ON x.num = e.session_num WHERE e.state IN ('running', 'retry_wait') AND x.status = 'active'"
        ).fetchall()
        recovered = []
        for execution_id, _exe_num, session_id, unattended in rows:
            if unattended and not self.execution_begun(execution_id):  # run again from its start (P7)
                recovered.append(self.get_execution(execution_id))
                continue
            with self._tx():
                self._recover_execution(execution_id, session_id, note)
            recovered.append(self.get_execution(execution_id))
        return recovered

    def _recover_orphans(self) -> list[Execution]:
        raise NotImplementedError  # the leases part

    def _recover_execution(self, execution_id: str, session_id: str, note: str) -> None:
        """Inside a transaction: the execution was running when its Gateway died; it is interrupted, with a
        visible notice, and the items it had taken too. Nothing starts again by itself (S7)."""
        exe_num = self._execution(execution_id)[1]
        # What it had streamed and the tool calls it had made come first, then the notice (D3, D4).
        entries, full_note = rules.recovered_entries(note, self._kept_stream(exe_num), self._kept_calls(exe_num))
        self._append_prepared(session_id, [self._prepare(new) for new in entries])
        self.conn.execute(
            "UPDATE executions SET state = 'interrupted', note = %s, ended_at = %s WHERE id = %s",
            (full_note, self.clock(), execution_id),
        )
        self.conn.execute(
            "UPDATE submissions SET state = 'interrupted', version = version + 1, updated_at = %s "
            "WHERE execution_id = %s AND state IN ('taken', 'suspended')",
            (self.clock(), execution_id),
        )
        self._drop_running_pass(exe_num)
