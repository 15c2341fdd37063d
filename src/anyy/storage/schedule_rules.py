"""What every backend's schedules share: the checks, the errors people read, and (for the two SQL
backends, whose tables are the same) the columns and row conversions."""

from __future__ import annotations

from typing import Any

import msgspec

from anyy.domain.errors import Conflict, InvalidInput, NotFound
from anyy.domain.schedule_records import MAX_NAME, NewSchedule, Schedule, ScheduleRun
from anyy.domain.schedules import Timing
from anyy.storage.rules import check_workspace

SCHEDULE_COLUMNS = (
    "id, name, timing, prompt, role, provider, model, tools, session_id, paused, considered, next_at, "
    "workspace, created_at, updated_at"
)
# A run and its outcome: its submission's state, read now (a run that could not be queued failed).
RUN_SELECT = (
    "SELECT r.schedule_id, r.scheduled_for, r.claimed_at, r.session_id, r.submission_id, "
    "CASE WHEN r.error IS NOT NULL THEN 'failed' ELSE coalesce(s.state, 'deleted') END, r.error "
    "FROM schedule_runs r LEFT JOIN submissions s ON s.id = r.submission_id"
)

_encode = msgspec.json.Encoder()
_timing = msgspec.json.Decoder(Timing)
_tools = msgspec.json.Decoder(list[str])


def check_name(name: object) -> str:
    if not isinstance(name, str) or not name.strip():
        raise InvalidInput("name: a schedule needs a name (unique in the profile), for example 'daily summary'")
    if len(name) > MAX_NAME or any(ord(c) < 32 for c in name):
        raise InvalidInput(f"name: at most {MAX_NAME} characters, on one line")
    return name


def check_new(new: NewSchedule) -> None:
    check_name(new.name)
    check_workspace(new.workspace)
    if not new.prompt.strip():
        raise InvalidInput("prompt: a schedule needs a prompt to send at each run")


def missing(profile: str, ref: str) -> NotFound:
    return NotFound(f"no schedule {ref!r} in profile {profile!r} (see `anyy schedule list`)")


def name_taken(name: str) -> Conflict:
    return Conflict(
        f"name: a schedule named {name!r} exists already; choose another name, or change that one "
        f"(`anyy schedule update {name} …`)"
    )


def schedule_values(s: Schedule | NewSchedule) -> tuple[Any, ...]:
    """The columns after ``id`` and before ``created_at``, in SCHEDULE_COLUMNS' order."""
    tools = None if s.tools is None else _encode.encode(s.tools).decode()
    timing = _encode.encode(s.timing).decode()
    return (
        s.name,
        timing,
        s.prompt,
        s.role,
        s.provider,
        s.model,
        tools,
        s.session_id,
        int(s.paused),
        s.considered,
        s.next_at,
        s.workspace,
    )


def schedule_from_row(row: tuple[Any, ...]) -> Schedule:
    (
        sid,
        name,
        timing,
        prompt,
        role,
        provider,
        model,
        tools,
        session_id,
        paused,
        considered,
        next_at,
        workspace,
        created,
        updated,
    ) = row
    return Schedule(
        id=sid,
        name=name,
        timing=_timing.decode(timing),
        prompt=prompt,
        role=role,
        provider=provider,
        model=model,
        tools=None if tools is None else _tools.decode(tools),
        session_id=session_id,
        paused=bool(paused),
        considered=considered,
        next_at=next_at,
        workspace=workspace,
        created_at=created,
        updated_at=updated,
    )


def run_from_row(row: tuple[Any, ...]) -> ScheduleRun:
    schedule_id, scheduled_for, claimed_at, session_id, submission_id, outcome, error = row
    return ScheduleRun(
        schedule_id=schedule_id,
        scheduled_for=scheduled_for,
        claimed_at=claimed_at,
        session_id=session_id,
        submission_id=submission_id,
        outcome=outcome,
        error=error,
    )
