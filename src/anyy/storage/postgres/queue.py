"""Submissions (the steering and follow-up queues) and executions, with their outcomes."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec

from anyy.domain.entries import Attachment, Entry, EntryKind, NewEntry, UserData
from anyy.domain.errors import InvalidInput
from anyy.domain.queue import (
    ACTIVE_EXECUTION_STATES,
    FINAL_EXECUTION_STATES,
    SUBMISSION_KINDS,
    Execution,
    ExecutionState,
    NewSubmission,
    Submission,
    SubmissionKind,
    check_editable,
    check_execution_transition,
    check_new_submission,
    outcome_for,
    same_send,
)
from anyy.storage import rules
from anyy.storage.ownership import ToolProcess
from anyy.storage.postgres.core import PgCore
from anyy.storage.postgres.entries import EntriesPart, Prepared
from anyy.storage.sqlite.rows import (
    EXECUTION_COLUMNS,
    SUBMISSION_COLUMNS,
    execution_from_row,
    submission_from_row,
)
from commons.ids import new_id

_json = msgspec.json.Encoder()
_SUBMISSION_FROM = "FROM submissions s JOIN sessions x ON x.num = s.session_num"
_EXECUTION_FROM = "FROM executions e JOIN sessions x ON x.num = e.session_num"
_QUEUE_ORDER = "ORDER BY CASE s.kind WHEN 'steering' THEN 0 ELSE 1 END, s.position"


class QueuePart(EntriesPart, PgCore):
    # -- submissions -----------------------------------------------------------------------------
    def _submission(self, submission_id: str, *, lock: bool = False) -> tuple[int, Submission]:
        """``lock``: inside a transaction, hold the item until it ends (a concurrent edit waits, then sees
        the new version)."""
        row = self._one(
            f"SELECT s.num, {SUBMISSION_COLUMNS} {_SUBMISSION_FROM} WHERE s.id = %s AND x.status = 'active'"
            + (" FOR UPDATE OF s" if lock else ""),
            (submission_id,),
        )
        if row is None:
            raise rules.missing_submission(self.profile, submission_id)
        return row[0], submission_from_row(row[1:])

    def _refs_for(self, sub_num: int, attachments: Sequence[Attachment]) -> None:
        self.conn.execute("DELETE FROM object_refs WHERE holder = %s", (-sub_num,))
        for att in attachments:
            self._add_object_ref(-sub_num, att.object, created=False)

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

    def get_submission(self, submission_id: str) -> Submission:
        return self._submission(submission_id)[1]

    def list_submissions(self, session_id: str, *, states: Sequence[str] = ("pending",)) -> list[Submission]:
        num = self._session_num(session_id)
        marks = ",".join(["%s"] * len(states))
        rows = self.conn.execute(
            f"SELECT {SUBMISSION_COLUMNS} {_SUBMISSION_FROM} WHERE s.session_num = %s AND s.state IN ({marks}) "
            f"{_QUEUE_ORDER}",
            (num, *states),
        ).fetchall()
        return [submission_from_row(row) for row in rows]

    def update_submission(
        self,
        submission_id: str,
        *,
        version: int | None = None,
        text: str | None = None,
        attachments: Sequence[object] | None = None,
        kind: SubmissionKind | None = None,
    ) -> Submission:
        if kind is not None and kind not in SUBMISSION_KINDS:
            raise InvalidInput(f"unknown submission kind {kind!r}; use one of {', '.join(SUBMISSION_KINDS)}")
        with self._tx() as conn:
            sub_num, sub = self._submission(submission_id, lock=True)
            check_editable(sub, version)
            new = NewSubmission(
                kind=kind if kind is not None else sub.kind,
                text=text if text is not None else sub.text,
                attachments=(
                    msgspec.convert(attachments, list[Attachment]) if attachments is not None else sub.attachments
                ),
            )
            new = check_new_submission(new)
            conn.execute(
                "UPDATE submissions SET kind = %s, text = %s, attachments = %s, version = version + 1, "
                "updated_at = %s WHERE num = %s",
                (new.kind, new.text, _json.encode(new.attachments).decode(), self.clock(), sub_num),
            )
            if attachments is not None:
                self._refs_for(sub_num, new.attachments)
            self._notify(sub.session_id, "change")
        return self.get_submission(submission_id)

    def cancel_submission(self, submission_id: str, *, version: int | None = None) -> Submission:
        with self._tx() as conn:
            sub_num, sub = self._submission(submission_id, lock=True)
            check_editable(sub, version)
            conn.execute(
                "UPDATE submissions SET state = 'cancelled', version = version + 1, updated_at = %s WHERE num = %s",
                (self.clock(), sub_num),
            )
            self._notify(sub.session_id, "change")
        return self.get_submission(submission_id)

    def clear_queue(self, session_id: str, *, kind: SubmissionKind | None = None) -> list[Submission]:
        with self._tx() as conn:
            num = self._session_num(session_id)
            cleared = [sub for sub in self.list_submissions(session_id) if kind is None or sub.kind == kind]
            conn.cursor().executemany(
                "UPDATE submissions SET state = 'cleared', version = version + 1, updated_at = %s "
                "WHERE id = %s AND session_num = %s",
                [(self.clock(), sub.id, num) for sub in cleared],
            )
            self._notify(session_id, "change")
        return [self.get_submission(sub.id) for sub in cleared]

    # -- executions ------------------------------------------------------------------------------
    def _execution(self, execution_id: str, *, lock: bool = False) -> tuple[int, int, Execution]:
        row = self._one(
            f"SELECT e.session_num, {EXECUTION_COLUMNS} {_EXECUTION_FROM} WHERE e.id = %s AND x.status = 'active'"
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

    def set_execution_state(
        self, execution_id: str, state: ExecutionState, *, error: str | None = None, note: str | None = None
    ) -> Execution:
        with self._tx() as conn:
            num, exe_num, execution = self._execution(execution_id, lock=True)
            self._fence(num, execution.session_id)
            check_execution_transition(execution.state, state)
            final = state in FINAL_EXECUTION_STATES
            conn.execute(
                "UPDATE executions SET state = %s, error = coalesce(%s, error), note = coalesce(%s, note), "
                "ended_at = %s WHERE num = %s",
                (state, error, note, self.clock() if final else None, exe_num),
            )
            conn.execute(
                "UPDATE submissions SET state = %s, error = coalesce(%s, error), version = version + 1, "
                "updated_at = %s WHERE execution_id = %s AND state IN ('taken', 'suspended')",
                (outcome_for(state), error, self.clock(), execution_id),
            )
            if final:
                self._drop_running_pass(exe_num)
        return self.get_execution(execution_id)

    def get_execution(self, execution_id: str) -> Execution:
        return self._execution(execution_id)[2]

    def list_executions(self, session_id: str, *, active_only: bool = False) -> list[Execution]:
        num = self._session_num(session_id)
        where = " AND e.state IN ('running', 'retry_wait', 'suspended')" if active_only else ""
        # One query, each execution with its submissions (other Gateways re-read this on every change hint).
        rows = self._all(
            f"SELECT {EXECUTION_COLUMNS}, coalesce((SELECT array_agg(s.id ORDER BY s.num) FROM submissions s "
            f"WHERE s.execution_id = e.id), '{{}}') {_EXECUTION_FROM} WHERE e.session_num = %s{where} ORDER BY e.num",
            (num,),
        )
        return [execution_from_row(row[:-1], list(row[-1])) for row in rows]

    def last_execution(self, session_id: str) -> Execution | None:
        num = self._session_num(session_id)
        rows = self._all(
            f"SELECT {EXECUTION_COLUMNS}, coalesce((SELECT array_agg(s.id ORDER BY s.num) FROM submissions s "
            f"WHERE s.execution_id = e.id), '{{}}') {_EXECUTION_FROM} WHERE e.session_num = %s "
            "ORDER BY e.num DESC LIMIT 1",
            (num,),
        )
        return execution_from_row(rows[0][:-1], list(rows[0][-1])) if rows else None

    def save_stream_text(
        self, execution_id: str, text: str, *, provider: str, model: str, first: bool = False, thinking: str = ""
    ) -> None:
        pieces = rules.stream_pieces(text, thinking)
        with self._tx() as conn:
            _num, exe_num, execution = self._execution(execution_id, lock=True)
            if execution.state in FINAL_EXECUTION_STATES:
                raise rules.execution_ended(execution_id, execution.state)
            if first:
                conn.execute("DELETE FROM stream_texts WHERE exe_num = %s", (exe_num,))
            # One statement whatever the kinds: thinking and text saved together cost no extra round trip.
            conn.execute(
                "INSERT INTO stream_texts (exe_num, seq, kind, provider, model, text, saved_at) SELECT %s, "
                "base.seq + p.n, p.kind, %s, %s, p.text, %s FROM unnest(%s::text[], %s::text[]) WITH ORDINALITY "
                "AS p(kind, text, n), (SELECT coalesce(max(seq), 0) AS seq FROM stream_texts WHERE exe_num = %s) base",
                (exe_num, provider, model, self.clock(), [k for k, _ in pieces], [t for _, t in pieces], exe_num),
            )

    def record_tool_call(
        self,
        execution_id: str,
        call_id: str,
        *,
        name: str,
        arguments: dict[str, Any],
        pid: int | None = None,
        started: int | None = None,
        parent: str = "",
    ) -> None:
        encoded = msgspec.json.encode(arguments).decode()
        with self._tx() as conn:
            exe_num = self._running_exe(execution_id)
            conn.execute(
                "INSERT INTO tool_runs (exe_num, call_id, seq, name, arguments, pid, started, parent) VALUES (%s, "
                "%s, (SELECT count(*) FROM tool_runs WHERE exe_num = %s), %s, %s, %s, %s, %s) "
                "ON CONFLICT (exe_num, call_id) DO UPDATE SET pid = coalesce(excluded.pid, tool_runs.pid), "
                "started = coalesce(excluded.started, tool_runs.started)",
                (exe_num, call_id, exe_num, name, encoded, pid, started, parent),
            )

    def save_tool_output(self, execution_id: str, call_id: str, text: str, *, result: bool = False) -> None:
        with self._tx() as conn:
            exe_num = self._running_exe(execution_id)
            sql = (
                "UPDATE tool_runs SET output = %s, done = TRUE WHERE exe_num = %s AND call_id = %s"
                if result
                else "UPDATE tool_runs SET output = output || %s WHERE exe_num = %s AND call_id = %s"
            )
            conn.execute(sql, (text, exe_num, call_id))

    def leftover_tools(self) -> list[ToolProcess]:
        rows = self.conn.execute(
            "SELECT e.id, t.call_id, t.pid, t.started FROM tool_runs t JOIN executions e ON e.num = t.exe_num "
            "WHERE e.state IN ('running', 'retry_wait') AND t.pid IS NOT NULL AND NOT done ORDER BY e.num, t.seq"
        ).fetchall()
        return [ToolProcess(execution_id=r[0], call_id=r[1], pid=r[2], started=r[3]) for r in rows]

    def _drop_running_pass(self, exe_num: int) -> None:
        self.conn.execute("DELETE FROM stream_texts WHERE exe_num = %s", (exe_num,))
        self.conn.execute("DELETE FROM tool_runs WHERE exe_num = %s", (exe_num,))

    def _running_exe(self, execution_id: str) -> int:
        _num, exe_num, execution = self._execution(execution_id, lock=True)
        if execution.state in FINAL_EXECUTION_STATES:
            raise rules.execution_ended(execution_id, execution.state)
        return exe_num

    def _kept_calls(self, exe_num: int) -> list[rules.KeptCall]:
        rows = self.conn.execute(
            "SELECT call_id, name, arguments, output, done, parent FROM tool_runs WHERE exe_num = %s ORDER BY seq",
            (exe_num,),
        ).fetchall()
        return [
            rules.KeptCall(call_id=r[0], name=r[1], arguments=r[2], output=r[3], done=bool(r[4]), parent=r[5])
            for r in rows
        ]

    def _kept_stream(self, exe_num: int) -> rules.KeptStream | None:
        rows = self.conn.execute(
            "SELECT kind, provider, model, text FROM stream_texts WHERE exe_num = %s ORDER BY seq", (exe_num,)
        ).fetchall()
        return rules.kept_stream(rows)

    def recover_interrupted(self, note: str) -> list[Execution]:
        if self.member is not None:  # a Gateway of a shared store recovers only what dead Gateways left
            return self._recover_orphans()
        rows = self.conn.execute(
            "SELECT e.id, e.num, x.id FROM executions e JOIN sessions x ON x.num = e.session_num "
            "WHERE e.state IN ('running', 'retry_wait') AND x.status = 'active'"
        ).fetchall()
        recovered = []
        for execution_id, _exe_num, session_id in rows:
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
