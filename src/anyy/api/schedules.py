"""Schedules (SPEC K1) as the wire carries them: the methods' parameters and results.

A schedule fires by ``cron`` (5 fields, in ``timezone``), ``every`` (seconds, at least 60, from
``start``) or ``at`` (one time, epoch seconds): exactly one of the three. Times are epoch seconds.
"""

from __future__ import annotations

from typing import Literal

import msgspec
from msgspec import UNSET, UnsetType

from anyy.api.params import Params

ScheduleKind = Literal["cron", "interval", "once"]
CatchUp = Literal["skip", "once"]


class Timing(msgspec.Struct, kw_only=True, frozen=True, omit_defaults=True):
    kind: ScheduleKind
    cron: str = ""
    every: float = 0.0
    start: float = 0.0
    at: float = 0.0
    timezone: str = "UTC"
    catch_up: CatchUp = "skip"


class ScheduleRun(msgspec.Struct, kw_only=True):
    """One run: claimed (durably, once) for ``scheduled_for``; ``outcome`` is its prompt's state now
    (pending, taken, completed, failed, interrupted…), "failed" with ``error`` when it could not be queued."""

    schedule_id: str
    scheduled_for: float
    claimed_at: float
    session_id: str | None
    submission_id: str | None
    outcome: str
    error: str | None


class Schedule(msgspec.Struct, kw_only=True):
    id: str
    name: str
    timing: Timing
    prompt: str
    role: str
    provider: str  # "" with model "": the profile's default model at each run
    model: str
    tools: list[str] | None  # None: the profile's tools at each run
    session_id: str | None  # the fixed target session; None: a new Background session per run
    paused: bool
    next_at: float | None  # None: never again (a one-time schedule that ran), or paused
    created_at: float
    updated_at: float
    last_run: ScheduleRun | None = None
    workspace: str | None = None  # its runs' workspace (W1); None: the profile's default at each run


class ScheduleCreateParams(Params):
    name: str
    prompt: str
    cron: str | None = None
    every: float | None = None
    at: float | None = None
    start: float | None = None  # interval: the first run (default: one interval from now)
    timezone: str = "UTC"
    catch_up: CatchUp = "skip"
    role: str = "default"
    model: str = ""  # "provider/model" or a virtual model (alias); "": the profile's default
    tools: list[str] | None = None
    session_id: str | None = None  # run in this session instead of a new Background session each time
    paused: bool = False
    # Its runs' workspace (W1): absolute, on the Gateway's host; None: the profile's [workspaces] default at
    # each run, else the Gateway's working directory.
    workspace: str | None = None


class ScheduleUpdateParams(Params):
    """A field left out keeps its value; a field given changes; a new cron/every/at replaces the timing.
    ``null`` clears a field back to its default — ``role`` to "default", ``model`` to the profile's
    default model, ``tools`` to the profile's tools, ``session_id`` to a new Background session per run,
    ``timezone`` to "UTC", ``catch_up`` to "skip"; the other fields have no default and refuse ``null``."""

    schedule: str  # id or name
    name: str | UnsetType | None = UNSET
    prompt: str | UnsetType | None = UNSET
    cron: str | UnsetType | None = UNSET
    every: float | UnsetType | None = UNSET
    at: float | UnsetType | None = UNSET
    start: float | UnsetType | None = UNSET
    timezone: str | UnsetType | None = UNSET  # null: back to "UTC"
    catch_up: CatchUp | UnsetType | None = UNSET  # null: back to "skip"
    role: str | UnsetType | None = UNSET  # null: back to "default"
    model: str | UnsetType | None = UNSET  # null (or ""): back to the profile's default model
    tools: list[str] | UnsetType | None = UNSET  # null: back to the profile's tools; []: no tools
    session_id: str | UnsetType | None = UNSET  # null: a new Background session per run again
    workspace: str | UnsetType | None = UNSET  # null: back to the profile's default workspace


class ScheduleRef(Params):
    schedule: str  # id or name


class ScheduleRunsParams(Params):
    schedule: str
    limit: int = 20
