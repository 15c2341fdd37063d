"""Rows to domain values, and the column lists that go with them: the SQL both SQL backends share (SQLite and
PostgreSQL read the same columns the same way)."""

from __future__ import annotations

from typing import Any

import msgspec

from anyy.domain import entry_ids
from anyy.domain.entries import Attachment, Entry, EntryKind, decode_data
from anyy.domain.queue import Execution, Submission
from anyy.domain.sessions import Goal, Origin, Session

# The last entry a session appended: one step down the primary key, whatever the session's size.
LAST_ENTRY_SQL = (
    f"(SELECT max(id) FROM entries WHERE id BETWEEN (sessions.num << {entry_ids.SEQ_BITS}) "
    f"AND ((sessions.num << {entry_ids.SEQ_BITS}) | {entry_ids.MAX_SEQ}))"
)
# The session's head as callers see it (see the `head` column in the first migration).
HEAD_SQL = (
    f"CASE WHEN sessions.head IS NULL THEN {LAST_ENTRY_SQL} WHEN sessions.head = 0 THEN NULL ELSE sessions.head END"
)
SESSION_COLUMNS = (
    "id, kind, title, role, provider, model, effort, tools, steering_mode, follow_up_mode, goal, "
    f"{HEAD_SQL}, forked_from, created_at, updated_at, origin, workspace"
)
ENTRY_COLUMNS = "id, parent, kind, text, data, obj, created_at"
SUBMISSION_COLUMNS = (
    "s.id, x.id, s.kind, s.text, s.attachments, s.state, s.position, s.version, s.execution_id, s.entry_id, "
    "s.error, s.created_at, s.updated_at"
)
EXECUTION_COLUMNS = "e.num, e.id, x.id, e.state, e.passes, e.error, e.note, e.started_at, e.ended_at"

_goal = msgspec.json.Decoder(Goal)
_origin = msgspec.json.Decoder(Origin)
_tools = msgspec.json.Decoder(dict[str, Any])
_attachments = msgspec.json.Decoder(list[Attachment])


def session_from_row(row: tuple[Any, ...]) -> Session:
    (
        sid,
        kind,
        title,
        role,
        provider,
        model,
        effort,
        tools,
        steering,
        follow_up,
        goal,
        head,
        forked,
        created,
        updated,
        origin,
        workspace,
    ) = row
    return Session(
        id=sid,
        kind=kind,
        title=title,
        role=role,
        provider=provider,
        model=model,
        effort=effort,
        tools=_tools.decode(tools),
        steering_mode=steering,
        follow_up_mode=follow_up,
        goal=_goal.decode(goal) if goal else None,
        head=head,
        forked_from=forked,
        created_at=created,
        updated_at=updated,
        origin=_origin.decode(origin) if origin else None,
        workspace=workspace,
    )


def entry_from_row(row: tuple[Any, ...], text: str | None = None) -> Entry:
    """``text`` replaces the row's text when the body was loaded from objects/."""
    entry_id, parent, kind, row_text, data, obj, created = row
    return Entry(
        id=entry_id,
        parent=parent,
        kind=EntryKind(kind),
        text=text if text is not None else (row_text or ""),
        data=decode_data(data),
        object=obj,
        created_at=created,
    )


def submission_from_row(row: tuple[Any, ...]) -> Submission:
    (
        sid,
        session_id,
        kind,
        text,
        attachments,
        state,
        position,
        version,
        execution_id,
        entry_id,
        error,
        created,
        updated,
    ) = row
    return Submission(
        id=sid,
        session_id=session_id,
        kind=kind,
        text=text,
        attachments=_attachments.decode(attachments),
        state=state,
        position=position,
        version=version,
        execution_id=execution_id,
        entry_id=entry_id,
        error=error,
        created_at=created,
        updated_at=updated,
    )


def execution_from_row(row: tuple[Any, ...], submission_ids: list[str]) -> Execution:
    _num, eid, session_id, state, passes, error, note, started, ended = row
    return Execution(
        id=eid,
        session_id=session_id,
        state=state,
        submission_ids=submission_ids,
        passes=passes,
        error=error,
        note=note,
        started_at=started,
        ended_at=ended,
    )
