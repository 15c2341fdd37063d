"""The queue and executions over SQL where the two SQL backends agree (their tables are the same): the
statements are written with ``?`` marks; a backend says how it holds a row it is about to change (SQLite's
write transaction holds the whole file; PostgreSQL locks the row, and fences a session another Gateway
took over) and whom it tells of a change (PostgreSQL's other Gateways). The parts that differ (adding an
item, listing executions, recording a pass, recovery) stay in each backend's ``queue`` module."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec

from anyy.domain.entries import Attachment
from anyy.domain.errors import InvalidInput
from anyy.domain.queue import (
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
)
from anyy.storage import rules
from anyy.storage.ownership import ToolProcess
from anyy.storage.rows import SUBMISSION_COLUMNS, submission_from_row

_json = msgspec.json.Encoder()
SUBMISSION_FROM = "FROM submissions s JOIN sessions x ON x.num = s.session_num"
EXECUTION_FROM = "FROM executions e JOIN sessions x ON x.num = e.session_num"
QUEUE_ORDER = "ORDER BY CASE s.kind WHEN 'steering' THEN 0 ELSE 1 END, s.position"


class QueueSql:
    """Queue and execution methods of :class:`anyy.storage.protocol.SessionStore` over the backend's core."""

    clock: Any
    conn: Any
    _tx: Any
    _one: Any
    _session_num: Any
    _submission: Any
    _execution: Any
    _add_object_ref: Any
    _notify: Any  # (session_id, kind): other Gateways of the store are told (nothing to tell for SQLite)

    def _sql(self, text: str) -> str:
        return text

    def _held_submission(self, submission_id: str) -> tuple[int, Submission]:
        """Inside a write transaction: the item, held until the transaction ends."""
        raise NotImplementedError

    def _held_execution(self, execution_id: str, *, fence: bool = False) -> tuple[int, int, Execution]:
        """Inside a write transaction: the execution, held until it ends; ``fence``: the session must still
        be this Gateway's."""
        raise NotImplementedError

    # -- submissions -----------------------------------------------------------------------------
    def _refs_for(self, sub_num: int, attachments: Sequence[Attachment]) -> None:
        self.conn.execute(self._sql("DELETE FROM object_refs WHERE holder = ?"), (-sub_num,))
        for att in attachments:
            self._add_object_ref(-sub_num, att.object, created=False)
            if att.size:  # a claimed size is checked (G5): lists and contexts show it as the file's
                found = self.conn.execute(self._sql("SELECT size FROM objects WHERE hash = ?"), (att.object,))
                (actual,) = found.fetchone()
                if actual != att.size:
                    raise rules.attachment_size(att.object, att.size, actual)

    def get_submission(self, submission_id: str) -> Submission:
        submission: Submission = self._submission(submission_id)[1]
        return submission

    def list_submissions(self, session_id: str, *, states: Sequence[str] = ("pending",)) -> list[Submission]:
        num = self._session_num(session_id)
        marks = ",".join("?" * len(states))
        rows = self.conn.execute(
            self._sql(
                f"SELECT {SUBMISSION_COLUMNS} {SUBMISSION_FROM} WHERE s.session_num = ? AND s.state IN ({marks}) "
                f"{QUEUE_ORDER}"
            ),
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
            sub_num, sub = self._held_submission(submission_id)
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
                self._sql(
                    "UPDATE submissions SET kind = ?, text = ?, attachments = ?, version = version + 1, "
                    "updated_at = ? WHERE num = ?"
                ),
                (new.kind, new.text, _json.encode(new.attachments).decode(), self.clock(), sub_num),
            )
            if attachments is not None:
                self._refs_for(sub_num, new.attachments)
            self._notify(sub.session_id, "change")
        return self.get_submission(submission_id)

    def cancel_submission(self, submission_id: str, *, version: int | None = None) -> Submission:
        with self._tx() as conn:
            sub_num, sub = self._held_submission(submission_id)
            check_editable(sub, version)
            conn.execute(
                self._sql(
                    "UPDATE submissions SET state = 'cancelled', version = version + 1, updated_at = ? WHERE num = ?"
                ),
                (self.clock(), sub_num),
            )
            self._notify(sub.session_id, "change")
        return self.get_submission(submission_id)

    def clear_queue(self, session_id: str, *, kind: SubmissionKind | None = None) -> list[Submission]:
        with self._tx() as conn:
            num = self._session_num(session_id)
            cleared = [sub for sub in self.list_submissions(session_id) if kind is None or sub.kind == kind]
            conn.cursor().executemany(
                self._sql(
                    "UPDATE submissions SET state = 'cleared', version = version + 1, updated_at = ? "
                    "WHERE id = ? AND session_num = ?"
                ),
                [(self.clock(), sub.id, num) for sub in cleared],
            )
            self._notify(session_id, "change")
        return [self.get_submission(sub.id) for sub in cleared]

    # -- executions ------------------------------------------------------------------------------
    def get_execution(self, execution_id: str) -> Execution:
        execution: Execution = self._execution(execution_id)[2]
        return execution

    def set_execution_state(
        self, execution_id: str, state: ExecutionState, *, error: str | None = None, note: str | None = None
    ) -> Execution:
        with self._tx() as conn:
            _num, exe_num, execution = self._held_execution(execution_id, fence=True)
            check_execution_transition(execution.state, state)
            final = state in FINAL_EXECUTION_STATES
            conn.execute(
                self._sql(
                    "UPDATE executions SET state = ?, error = coalesce(?, error), note = coalesce(?, note), "
                    "ended_at = ? WHERE num = ?"
                ),
                (state, error, note, self.clock() if final else None, exe_num),
            )
            conn.execute(
                self._sql(
                    "UPDATE submissions SET state = ?, error = coalesce(?, error), version = version + 1, "
                    "updated_at = ? WHERE execution_id = ? AND state IN ('taken', 'suspended')"
                ),
                (outcome_for(state), error, self.clock(), execution_id),
            )
            if final:
                self._drop_running_pass(exe_num)
        return self.get_execution(execution_id)

    def execution_begun(self, execution_id: str) -> bool:
        _num, exe_num, execution = self._execution(execution_id)
        if execution.passes:
            return True
        found = self.conn.execute(
            self._sql(
                "SELECT EXISTS (SELECT 1 FROM stream_texts WHERE exe_num = ?) "
                "OR EXISTS (SELECT 1 FROM tool_runs WHERE exe_num = ?)"
            ),
            (exe_num, exe_num),
        ).fetchone()
        return bool(found[0])

    # -- what a running pass has said and done so far (D3, D4) -----------------------------------
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
                self._sql(
                    "INSERT INTO tool_runs (exe_num, call_id, seq, name, arguments, pid, started, parent) VALUES (?, "
                    "?, (SELECT count(*) FROM tool_runs WHERE exe_num = ?), ?, ?, ?, ?, ?) "
                    "ON CONFLICT (exe_num, call_id) DO UPDATE SET pid = coalesce(excluded.pid, tool_runs.pid), "
                    "started = coalesce(excluded.started, tool_runs.started)"
                ),
                (exe_num, call_id, exe_num, name, encoded, pid, started, parent),
            )

    def save_tool_output(self, execution_id: str, call_id: str, text: str, *, result: bool = False) -> None:
        with self._tx() as conn:
            exe_num = self._running_exe(execution_id)
            sql = (
                "UPDATE tool_runs SET output = ?, done = TRUE WHERE exe_num = ? AND call_id = ?"
                if result
                else "UPDATE tool_runs SET output = output || ? WHERE exe_num = ? AND call_id = ?"
            )
            conn.execute(self._sql(sql), (text, exe_num, call_id))

    def leftover_tools(self) -> list[ToolProcess]:
        rows = self.conn.execute(
            "SELECT e.id, t.call_id, t.pid, t.started FROM tool_runs t JOIN executions e ON e.num = t.exe_num "
            "WHERE e.state IN ('running', 'retry_wait') AND t.pid IS NOT NULL AND NOT done ORDER BY e.num, t.seq"
        ).fetchall()
        return [ToolProcess(execution_id=r[0], call_id=r[1], pid=r[2], started=r[3]) for r in rows]

    def _drop_running_pass(self, exe_num: int) -> None:
        self.conn.execute(self._sql("DELETE FROM stream_texts WHERE exe_num = ?"), (exe_num,))
        self.conn.execute(self._sql("DELETE FROM tool_runs WHERE exe_num = ?"), (exe_num,))

    def _running_exe(self, execution_id: str) -> int:
        _num, exe_num, execution = self._held_execution(execution_id)
        if execution.state in FINAL_EXECUTION_STATES:
            raise rules.execution_ended(execution_id, execution.state)
        return exe_num

    def _kept_calls(self, exe_num: int) -> list[rules.KeptCall]:
        rows = self.conn.execute(
            self._sql(
                "SELECT call_id, name, arguments, output, done, parent FROM tool_runs WHERE exe_num = ? ORDER BY seq"
            ),
            (exe_num,),
        ).fetchall()
        return [
            rules.KeptCall(call_id=r[0], name=r[1], arguments=r[2], output=r[3], done=bool(r[4]), parent=r[5])
            for r in rows
        ]

    def _kept_stream(self, exe_num: int) -> rules.KeptStream | None:
        rows = self.conn.execute(
            self._sql("SELECT kind, provider, model, text FROM stream_texts WHERE exe_num = ? ORDER BY seq"),
            (exe_num,),
        ).fetchall()
        return rules.kept_stream(rows)
