"""Submissions (the two queues) and executions of the in-memory store, with their outcomes."""

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
from anyy.storage.memory.data import SubmissionRecord, ToolRunRecord, copied
from anyy.storage.memory.sessions import SessionsPart
from anyy.storage.ownership import ToolProcess
from commons.ids import new_id


class QueuePart(SessionsPart):
    # -- submissions -------------------------------------------------------------------------------
    def _submission(self, submission_id: str) -> Submission:
        self._check_open()
        found = self.data.submissions.get(submission_id) if isinstance(submission_id, str) else None
        if found is None:
            raise rules.missing_submission(self.profile, submission_id)
        return found.submission

    def _check_attachments(self, attachments: Sequence[Attachment]) -> None:
        for attachment in attachments:
            found = self.data.objects.get(attachment.object)
            if found is None:
                raise rules.unknown_attachment(attachment.object)
            if attachment.size and attachment.size != len(found.data):
                raise rules.attachment_size(attachment.object, attachment.size, len(found.data))

    def add_submission(self, session_id: str, new: NewSubmission) -> Submission:
        new = check_new_submission(new)
        self._record(session_id)
        self._check_attachments(new.attachments)
        if new.key is not None:
            for record in self.data.submissions.values():
                if record.submission.session_id == session_id and record.key == new.key:
                    return same_send(copied(record.submission), new)  # a retried send: nothing added
        mine = [r.submission.position for r in self.data.submissions.values() if r.submission.session_id == session_id]
        now = self.clock()
        submission = Submission(
            id=new_id("sub"),
            session_id=session_id,
            kind=new.kind,
            text=new.text,
            attachments=copied(new.attachments),
            state="pending",
            position=max(mine, default=0) + 1,
            version=1,
            execution_id=None,
            entry_id=None,
            error=None,
            created_at=now,
            updated_at=now,
        )
        self.data.submissions[submission.id] = SubmissionRecord(
            num=self.data.next_submission, submission=submission, key=new.key
        )
        self.data.next_submission += 1
        return copied(submission)

    def get_submission(self, submission_id: str) -> Submission:
        return copied(self._submission(submission_id))

    def list_submissions(self, session_id: str, *, states: Sequence[str] = ("pending",)) -> list[Submission]:
        self._record(session_id)
        mine = [
            r.submission
            for r in self.data.submissions.values()
            if r.submission.session_id == session_id and r.submission.state in states
        ]
        mine.sort(key=lambda sub: (sub.kind != "steering", sub.position))
        return copied(mine)

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
        sub = self._submission(submission_id)
        check_editable(sub, version)
        new = check_new_submission(
            NewSubmission(
                kind=kind if kind is not None else sub.kind,
                text=text if text is not None else sub.text,
                attachments=(
                    msgspec.convert(attachments, list[Attachment]) if attachments is not None else sub.attachments
                ),
            )
        )
        self._check_attachments(new.attachments)
        sub.kind, sub.text, sub.attachments = new.kind, new.text, copied(new.attachments)
        sub.version += 1
        sub.updated_at = self.clock()
        return copied(sub)

    def cancel_submission(self, submission_id: str, *, version: int | None = None) -> Submission:
        sub = self._submission(submission_id)
        check_editable(sub, version)
        sub.state = "cancelled"
        sub.version += 1
        sub.updated_at = self.clock()
        return copied(sub)

    def clear_queue(self, session_id: str, *, kind: SubmissionKind | None = None) -> list[Submission]:
        cleared = [sub for sub in self.list_submissions(session_id) if kind is None or sub.kind == kind]
        now = self.clock()
        for listed in cleared:
            sub = self._submission(listed.id)
            sub.state = "cleared"
            sub.version += 1
            sub.updated_at = now
        return [self.get_submission(sub.id) for sub in cleared]

    # -- executions --------------------------------------------------------------------------------
    def _execution(self, execution_id: str) -> Execution:
        self._check_open()
        found = self.data.executions.get(execution_id) if isinstance(execution_id, str) else None
        if found is None:
            raise rules.missing_execution(self.profile, execution_id)
        return found

    def _take(self, session_id: str, execution: Execution, submission_ids: Sequence[str], *, record: bool) -> None:
        """Check every item first, then take them all (and record them as user entries): all or nothing."""
        taken: list[Submission] = []
        for submission_id in submission_ids:
            sub = self._submission(submission_id)
            if sub.session_id != session_id:
                raise rules.not_this_session(submission_id)
            check_editable(msgspec.structs.replace(sub, state="taken") if sub in taken else sub, None)
            taken.append(sub)
        prepared = []
        if record and taken:
            prepared = [
                self._prepare(
                    NewEntry(
                        kind=EntryKind.USER,
                        text=sub.text,
                        data=UserData(attachments=sub.attachments) if sub.attachments else None,
                    )
                )
                for sub in taken
            ]
        now = self.clock()
        for sub in taken:
            sub.state, sub.execution_id = "taken", execution.id
            sub.version += 1
            sub.updated_at = now
            execution.submission_ids.append(sub.id)
        execution.submission_ids.sort(key=lambda sid: self.data.submissions[sid].num)  # in the order they came
        if prepared:
            appended = self._append(self._record(session_id), prepared)
            for sub, entry in zip(taken, appended, strict=True):
                sub.entry_id = entry.id

    def start_execution(
        self, session_id: str, submission_ids: Sequence[str], *, record_inputs: bool = False
    ) -> Execution:
        self._record(session_id)
        busy = [
            e
            for e in self.data.executions.values()
            if e.session_id == session_id and e.state in ACTIVE_EXECUTION_STATES
        ]
        if busy:
            raise rules.session_busy(session_id, busy[0].id, busy[0].state)
        execution = Execution(
            id=new_id("exe"),
            session_id=session_id,
            state="running",
            submission_ids=[],
            passes=0,
            error=None,
            note=None,
            started_at=self.clock(),
            ended_at=None,
        )
        self._take(session_id, execution, submission_ids, record=record_inputs)
        self.data.executions[execution.id] = execution
        return copied(execution)

    def take_submissions(
        self, execution_id: str, submission_ids: Sequence[str], *, record_inputs: bool = False
    ) -> list[Submission]:
        execution = self._execution(execution_id)
        self._record(execution.session_id)
        if execution.state not in ACTIVE_EXECUTION_STATES:
            raise rules.execution_ended(execution_id, execution.state)
        self._take(execution.session_id, execution, submission_ids, record=record_inputs)
        return [self.get_submission(sid) for sid in submission_ids]

    def record_pass(
        self, execution_id: str, entries: Sequence[NewEntry], *, link_submissions: Sequence[str] = ()
    ) -> list[Entry]:
        prepared = [self._prepare(new) for new in entries]
        execution = self._execution(execution_id)
        record = self._record(execution.session_id)
        if execution.state in FINAL_EXECUTION_STATES:
            raise rules.execution_ended(execution_id, execution.state)
        users = sum(1 for item in prepared if item.kind == EntryKind.USER)
        if len(link_submissions) > users:
            raise rules.too_many_links()
        appended = self._append(record, prepared)
        user_ids = [entry.id for entry in appended if entry.kind == EntryKind.USER]
        for submission_id, entry_id in zip(link_submissions, user_ids, strict=False):
            found = self.data.submissions.get(submission_id)
            if found is not None and found.submission.execution_id == execution_id:
                found.submission.entry_id = entry_id
        execution.passes += 1
        self._drop_running_pass(execution_id)
        return appended

    def set_execution_state(
        self, execution_id: str, state: ExecutionState, *, error: str | None = None, note: str | None = None
    ) -> Execution:
        execution = self._execution(execution_id)
        self._record(execution.session_id)
        check_execution_transition(execution.state, state)
        outcome = outcome_for(state)
        now = self.clock()
        execution.state = state
        execution.error = error if error is not None else execution.error
        execution.note = note if note is not None else execution.note
        execution.ended_at = now if state in FINAL_EXECUTION_STATES else None
        self._settle(execution, outcome, error=error)
        if state in FINAL_EXECUTION_STATES:
            self._drop_running_pass(execution_id)
        return copied(execution)

    def execution_begun(self, execution_id: str) -> bool:
        execution = self._execution(execution_id)
        return bool(
            execution.passes or self.data.stream_texts.get(execution_id) or self.data.tool_runs.get(execution_id)
        )

    def _drop_running_pass(self, execution_id: str) -> None:
        self.data.stream_texts.pop(execution_id, None)
        self.data.tool_runs.pop(execution_id, None)

    def _running(self, execution_id: str) -> Execution:
        execution = self._execution(execution_id)
        self._record(execution.session_id)
        if execution.state in FINAL_EXECUTION_STATES:
            raise rules.execution_ended(execution_id, execution.state)
        return execution

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
        self._running(execution_id)
        encoded = msgspec.json.encode(arguments).decode()
        runs = self.data.tool_runs.setdefault(execution_id, {})
        run = runs.setdefault(call_id, ToolRunRecord(name=name, arguments=encoded, parent=parent))
        run.pid = pid if pid is not None else run.pid
        run.started = started if started is not None else run.started

    def save_tool_output(self, execution_id: str, call_id: str, text: str, *, result: bool = False) -> None:
        self._running(execution_id)
        run = self.data.tool_runs.get(execution_id, {}).get(call_id)
        if run is None:
            return
        run.output = text if result else run.output + text
        run.done = run.done or result

    def leftover_tools(self) -> list[ToolProcess]:
        return [
            ToolProcess(execution_id=execution_id, call_id=call_id, pid=run.pid, started=run.started)
            for execution_id, runs in self.data.tool_runs.items()
            if self.data.executions[execution_id].state in ("running", "retry_wait")
            for call_id, run in runs.items()
            if run.pid is not None and not run.done
        ]

    def save_stream_text(
        self, execution_id: str, text: str, *, provider: str, model: str, first: bool = False, thinking: str = ""
    ) -> None:
        execution = self._execution(execution_id)
        self._record(execution.session_id)
        if execution.state in FINAL_EXECUTION_STATES:
            raise rules.execution_ended(execution_id, execution.state)
        if first:
            self.data.stream_texts.pop(execution_id, None)
        kept = self.data.stream_texts.setdefault(execution_id, [])
        kept += [(kind, provider, model, piece) for kind, piece in rules.stream_pieces(text, thinking)]

    def _settle(self, execution: Execution, outcome: str, *, error: str | None = None) -> None:
        now = self.clock()
        for submission_id in execution.submission_ids:
            sub = self.data.submissions[submission_id].submission
            if sub.state in ("taken", "suspended"):
                sub.state = outcome  # type: ignore[assignment]
                sub.error = error if error is not None else sub.error
                sub.version += 1
                sub.updated_at = now

    def get_execution(self, execution_id: str) -> Execution:
        execution = self._execution(execution_id)
        self._record(execution.session_id)
        return copied(execution)

    def list_executions(self, session_id: str, *, active_only: bool = False) -> list[Execution]:
        self._record(session_id)
        return [
            copied(e)
            for e in self.data.executions.values()
            if e.session_id == session_id and (not active_only or e.state in ACTIVE_EXECUTION_STATES)
        ]

    def last_execution(self, session_id: str) -> Execution | None:
        found = self.list_executions(session_id)
        return found[-1] if found else None

    def recover_interrupted(self, note: str) -> list[Execution]:
        self._check_open()
        recovered = []
        for execution in list(self.data.executions.values()):
            record = self.data.sessions.get(execution.session_id)
            if record is None or not record.active or execution.state not in ("running", "retry_wait"):
                continue
            if record.session.origin is not None and not self.execution_begun(execution.id):
                recovered.append(copied(execution))  # unattended and not begun: run again from its start (P7)
                continue
            kept = rules.kept_stream(self.data.stream_texts.pop(execution.id, []))
            calls = [
                rules.KeptCall(
                    call_id=call_id, name=r.name, arguments=r.arguments, output=r.output, done=r.done, parent=r.parent
                )
                for call_id, r in self.data.tool_runs.pop(execution.id, {}).items()
            ]
            entries, full_note = rules.recovered_entries(note, kept, calls)
            self._append(record, [self._prepare(new) for new in entries])
            execution.state, execution.note, execution.ended_at = "interrupted", full_note, self.clock()
            self._settle(execution, "interrupted")
            recovered.append(copied(execution))
        return recovered
