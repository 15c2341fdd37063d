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
from anyy.storage.queue_sql import EXECUTION_FROM, SUBMISSION_FROM, QueueSql
from anyy.storage.rows import (
    EXECUTION_COLUMNS,
    SUBMISSION_COLUMNS,
    execution_from_row,
    submission_from_row,
)
from anyy.storage.sqlite.core import StoreCore
from anyy.storage.sqlite.entries import EntriesPart, Prepared
from commons.ids import new_id

_json = msgspec.json.Encoder()


class QueuePart(EntriesPart, StoreCore, QueueSql):
    def _held_submission(self, submission_id: str) -> tuple[int, Submission]:
        return self._submission(submission_id)  # the write transaction (IMMEDIATE) holds the whole file

    def _held_execution(self, execution_id: str, *, fence: bool = False) -> tuple[int, int, Execution]:
        return self._execution(execution_id)  # one Gateway per file: nobody to fence

    def _notify(self, session_id: str, kind: str) -> None:
        """Nobody else to tell: one Gateway per SQLite file."""

    # -- submissions -----------------------------------------------------------------------------
    def _submission(self, submission_id: str) -> tuple[int, Submission]:
        row = self._one(
            f"SELECT s.num, {SUBMISSION_COLUMNS} {SUBMISSION_FROM} WHERE s.id = ? AND x.status = 'active'",
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
            num = self._session_num(session_id)
            if new.key is not None:
                found = conn.execute(
                    "SELECT id FROM submissions WHERE session_num = ? AND idem_key = ?", (num, new.key)
                ).fetchone()
                if found is not None:  # a retried send: the first one's submission, nothing added
                    return same_send(self.get_submission(found[0]), new)
            self._insert_submission(conn, num, submission_id, new, now)
        return self.get_submission(submission_id)

    def _insert_submission(self, conn: Any, num: int, submission_id: str, new: NewSubmission, now: float) -> None:
        """Inside a write transaction: a checked submission at the end of session ``num``'s queue."""
        (position,) = conn.execute(
            "SELECT coalesce(max(position), 0) + 1 FROM submissions WHERE session_num = ?", (num,)
        ).fetchone()
        attachments = _json.encode(new.attachments).decode()
        cur = conn.execute(
            "INSERT INTO submissions (id, session_num, kind, text, attachments, state, position, "
            "created_at, updated_at, idem_key) VALUES (?, ?, ?, ?, ?, 'pending', ?, ?, ?, ?)",
            (submission_id, num, new.kind, new.text, attachments, position, now, now, new.key),
        )
        assert cur.lastrowid is not None
        self._refs_for(cur.lastrowid, new.attachments)

    # -- executions ------------------------------------------------------------------------------
    def _execution(self, execution_id: str) -> tuple[int, int, Execution]:
        row = self._one(
            f"SELECT e.session_num, {EXECUTION_COLUMNS} {EXECUTION_FROM} WHERE e.id = ? AND x.status = 'active'",
            (execution_id,),
        )
        if row is None:
            raise rules.missing_execution(self.profile, execution_id)
        ids = [
            r[0]
            for r in self.conn.execute(
                "SELECT id FROM submissions WHERE execution_id = ? ORDER BY num", (execution_id,)
            )
        ]
        return row[0], row[1], execution_from_row(row[1:], ids)

    def _take(self, num: int, execution_id: str, submission_ids: Sequence[str], *, record_inputs: bool) -> None:
        taken: list[tuple[str, Submission]] = []
        for submission_id in submission_ids:
            sub_num, sub = self._submission(submission_id)
            owner = self._one("SELECT session_num FROM submissions WHERE num = ?", (sub_num,))
            if owner is None or owner[0] != num:
                raise rules.not_this_session(submission_id)
            check_editable(sub, None)
            self.conn.execute(
                "UPDATE submissions SET state = 'taken', execution_id = ?, version = version + 1, "
                "updated_at = ? WHERE num = ?",
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
            appended = self._append_prepared(session_id, self._prepare_entries(entries))
            self.conn.executemany(
                "UPDATE submissions SET entry_id = ? WHERE id = ?",
                [(entry.id, submission_id) for entry, (submission_id, _) in zip(appended, taken, strict=True)],
            )

    def start_execution(
        self, session_id: str, submission_ids: Sequence[str], *, record_inputs: bool = False
    ) -> Execution:
        execution_id = new_id("exe")
        with self._tx() as conn:
            num = self._session_num(session_id)
            busy = conn.execute(
                "SELECT id, state FROM executions WHERE session_num = ? AND state IN ('running', 'retry_wait', "
                "'suspended')",
                (num,),
            ).fetchone()
            if busy is not None:
                raise rules.session_busy(session_id, busy[0], busy[1])
            conn.execute(
                "INSERT INTO executions (id, session_num, state, started_at) VALUES (?, ?, 'running', ?)",
                (execution_id, num, self.clock()),
            )
            self._take(num, execution_id, submission_ids, record_inputs=record_inputs)
        return self.get_execution(execution_id)

    def take_submissions(
        self, execution_id: str, submission_ids: Sequence[str], *, record_inputs: bool = False
    ) -> list[Submission]:
        with self._tx():
            num, _exe_num, execution = self._execution(execution_id)
            if execution.state not in ACTIVE_EXECUTION_STATES:
                raise rules.execution_ended(execution_id, execution.state)
            self._take(num, execution_id, submission_ids, record_inputs=record_inputs)
        return [self.get_submission(sid) for sid in submission_ids]

    def record_pass(
        self, execution_id: str, entries: Sequence[NewEntry], *, link_submissions: Sequence[str] = ()
    ) -> list[Entry]:
        prepared = self._prepare_entries(entries)
        try:
            return self._record_pass(execution_id, prepared, link_submissions)
        except BaseException:
            self._discard_bodies(prepared)
            raise

    def _record_pass(
        self, execution_id: str, prepared: Sequence[Prepared], link_submissions: Sequence[str]
    ) -> list[Entry]:
        with self._tx() as conn:
            _num, exe_num, execution = self._execution(execution_id)
            if execution.state in FINAL_EXECUTION_STATES:
                raise rules.execution_ended(execution_id, execution.state)
            appended = self._append_prepared(execution.session_id, prepared)
            users = [entry.id for entry in appended if entry.kind == EntryKind.USER]
            if len(link_submissions) > len(users):
                raise rules.too_many_links()
            for submission_id, entry_id in zip(link_submissions, users, strict=False):
                conn.execute(
                    "UPDATE submissions SET entry_id = ? WHERE id = ? AND execution_id = ?",
                    (entry_id, submission_id, execution_id),
                )
            conn.execute("UPDATE executions SET passes = passes + 1 WHERE num = ?", (exe_num,))
            self._drop_running_pass(exe_num)
        return appended

    def list_executions(self, session_id: str, *, active_only: bool = False) -> list[Execution]:
        num = self._session_num(session_id)
        where = " AND e.state IN ('running', 'retry_wait', 'suspended')" if active_only else ""
        ids = [
            r[0]
            for r in self.conn.execute(
                f"SELECT e.id FROM executions e WHERE e.session_num = ?{where} ORDER BY e.num", (num,)
            )
        ]
        return [self.get_execution(eid) for eid in ids]

    def last_execution(self, session_id: str) -> Execution | None:
        num = self._session_num(session_id)
        row = self.conn.execute(
            "SELECT e.id FROM executions e WHERE e.session_num = ? ORDER BY e.num DESC LIMIT 1", (num,)
        ).fetchone()
        return None if row is None else self.get_execution(row[0])

    def save_stream_text(
        self, execution_id: str, text: str, *, provider: str, model: str, first: bool = False, thinking: str = ""
    ) -> None:
        with self._tx() as conn:
            exe_num = self._running_exe(execution_id)
            if first:
                conn.execute("DELETE FROM stream_texts WHERE exe_num = ?", (exe_num,))
            for kind, piece in rules.stream_pieces(text, thinking):
                conn.execute(
                    "INSERT INTO stream_texts (exe_num, seq, kind, provider, model, text, saved_at) VALUES (?, "
                    "(SELECT coalesce(max(seq), 0) + 1 FROM stream_texts WHERE exe_num = ?), ?, ?, ?, ?, ?)",
                    (exe_num, exe_num, kind, provider, model, piece, self.clock()),
                )

    def recover_interrupted(self, note: str) -> list[Execution]:
        rows = self.conn.execute(
            "SELECT e.id, e.num, x.id, x.origin IS NOT NULL FROM executions e JOIN sessions x "
            "ON x.num = e.session_num WHERE e.state IN ('running', 'retry_wait') AND x.status = 'active'"
        ).fetchall()
        recovered = []
        for execution_id, exe_num, session_id, unattended in rows:
            if unattended and not self.execution_begun(execution_id):  # run again from its start (P7)
                recovered.append(self.get_execution(execution_id))
                continue
            entries, full_note = rules.recovered_entries(note, self._kept_stream(exe_num), self._kept_calls(exe_num))
            prepared = self._prepare_entries(entries)
            with self._tx() as conn:
                self._append_prepared(session_id, prepared)
                conn.execute(
                    "UPDATE executions SET state = 'interrupted', note = ?, ended_at = ? WHERE id = ?",
                    (full_note, self.clock(), execution_id),
                )
                conn.execute(
                    "UPDATE submissions SET state = 'interrupted', version = version + 1, updated_at = ? "
                    "WHERE execution_id = ? AND state IN ('taken', 'suspended')",
                    (self.clock(), execution_id),
                )
                self._drop_running_pass(exe_num)
            recovered.append(self.get_execution(execution_id))
        return recovered
