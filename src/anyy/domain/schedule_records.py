"""What a store keeps of schedules (SPEC K1): the schedule itself and one row per run.

A run is identified by ``(schedule_id, scheduled_for)``. Claiming it is one transaction of the store:
the claim row (unique on that pair), the Background session it runs in (or the fixed target session)
and the prompt queued there are written together, before anything runs. So a run whose claim committed
has its prompt durably queued exactly once, and a second claim of the same pair — after a restart, or by
another Gateway sharing the database — finds the row and does nothing. The run's outcome is its
submission's state, read when the run is listed: it cannot go stale.
"""

from __future__ import annotations

import msgspec

from anyy.domain.queue import NewSubmission
from anyy.domain.schedules import Timing
from anyy.domain.sessions import NewSession

MAX_NAME = 100


class Schedule(msgspec.Struct, kw_only=True):
    id: str
    name: str  # unique in the profile
    timing: Timing
    prompt: str
    role: str
    provider: str  # "" with model "": the profile's default model at each run
    model: str
    tools: list[str] | None  # None: the profile's tools at each run
    session_id: str | None  # a fixed target session; None: a new Background session per run
    paused: bool
    considered: float  # every scheduled time up to this one was dealt with
    next_at: float | None  # the next scheduled time (None: never again)
    created_at: float
    updated_at: float
    workspace: str | None = None  # its runs' workspace (W1); None: the profile's default workspace


class NewSchedule(msgspec.Struct, kw_only=True):
    name: str
    timing: Timing
    prompt: str
    role: str = "default"
    provider: str = ""
    model: str = ""
    tools: list[str] | None = None
    session_id: str | None = None
    paused: bool = False
    considered: float = 0.0
    next_at: float | None = None
    workspace: str | None = None  # absolute (W1); None: the profile's default workspace


class ScheduleRun(msgspec.Struct, kw_only=True):
    schedule_id: str
    scheduled_for: float
    claimed_at: float
    session_id: str | None
    submission_id: str | None
    outcome: str  # the prompt's submission state (pending, running, done, failed…), "failed" with an error
    error: str | None  # why the run could not be queued (its fixed session was deleted…)


class RunClaim(msgspec.Struct, kw_only=True):
    """One run to claim: the pair that identifies it, what it runs (a new session, or a fixed one), and
    the schedule's progress that goes with it. With ``error``, the run is recorded as failed, nothing runs."""

    schedule_id: str
    scheduled_for: float
    considered: float
    next_at: float | None
    prompt: NewSubmission
    session: NewSession | None = None
    session_id: str | None = None
    error: str | None = None
