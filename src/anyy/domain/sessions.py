"""Sessions and their settings: what a conversation owns besides its tree of entries."""

from __future__ import annotations

from typing import Any, Generic, Literal, Protocol, TypeVar

import msgspec

SessionKind = Literal["chat", "background"]
QueueMode = Literal["all", "one-at-a-time"]
GoalState = Literal["active", "paused"]
SESSION_KINDS: tuple[SessionKind, ...] = ("chat", "background")
QUEUE_MODES: tuple[QueueMode, ...] = ("all", "one-at-a-time")


class Goal(msgspec.Struct, kw_only=True):
    text: str
    state: GoalState = "active"


OriginKind = Literal["schedule", "delegate", "resident", "import"]
ORIGIN_KINDS: tuple[OriginKind, ...] = ("schedule", "delegate", "resident", "import")


class Origin(msgspec.Struct, kw_only=True, frozen=True, omit_defaults=True):
    """Why a Background session exists (SPEC K4), fixed when it is created: a schedule's run (which
    schedule, for which scheduled time), a delegated task (the parent session and its tool call), or a
    resident. ``name`` is the schedule's or resident's name when the session was made (for lists)."""

    kind: OriginKind
    name: str = ""
    schedule_id: str | None = None
    scheduled_for: float | None = None
    parent_session_id: str | None = None
    parent_call_id: str | None = None
    resident_id: str | None = None
    # An imported chat session (I2): "FORMAT:ID", the format it came from and the source's own id.
    source: str | None = None


ActivityState = Literal["running", "retrying", "waiting_answer", "waiting_tasks", "queued", "idle"]


class Activity(msgspec.Struct, kw_only=True, frozen=True, omit_defaults=True):
    """What a Background session is doing, as lists show it (K4): ``state`` — running, retrying (waiting
    to call the model again), waiting_answer (a question for the user), waiting_tasks (for the tasks it
    delegated), queued (items wait and nothing runs: after a stop, a failure or a restart) or idle — and
    how its last execution ended."""

    state: ActivityState
    pending: int = 0  # items waiting in its queue
    outcome: str | None = None  # the last ended execution: completed, failed, interrupted, timed_out; None: none
    error: str | None = None  # that execution's error or note, when it did not complete
    ended_at: float | None = None
    tasks: int = 0  # the tasks it delegated (``session.children`` lists them)


class Session(msgspec.Struct, kw_only=True):
    id: str
    kind: SessionKind
    title: str
    role: str
    provider: str
    model: str
    effort: str
    tools: dict[str, Any]
    steering_mode: QueueMode
    follow_up_mode: QueueMode
    goal: Goal | None
    head: int | None
    forked_from: str | None
    created_at: float
    updated_at: float
    origin: Origin | None = None  # Background sessions: what made them (a fork has none)
    preview: str = ""  # the last message, cut short, in lists of sessions (U1); "" elsewhere
    activity: Activity | None = None  # Background sessions in lists: state and last outcome (K4); None elsewhere
    # The directory its tools work in (W1): absolute and canonical, fixed at creation, inherited by forks and
    # children, changed only while idle. None: a session made before workspaces (it runs in the Gateway's
    # working directory).
    workspace: str | None = None


class NewSession(msgspec.Struct, kw_only=True):
    kind: SessionKind = "chat"
    title: str = ""
    role: str = "default"
    provider: str = ""
    model: str = ""
    effort: str = ""
    tools: dict[str, Any] = {}
    steering_mode: QueueMode = "one-at-a-time"
    follow_up_mode: QueueMode = "one-at-a-time"
    origin: Origin | None = None
    workspace: str | None = None  # absolute (W1); the runtime makes it canonical and checks it exists


class Unset(msgspec.Struct, frozen=True):
    """Marks a field a patch leaves alone (``None`` may be a real value, as for ``goal``)."""


UNSET = Unset()


class SessionPatch(msgspec.Struct, kw_only=True):
    """Settings to change; fields left ``UNSET`` keep their value."""

    title: str | Unset = UNSET
    role: str | Unset = UNSET
    provider: str | Unset = UNSET
    model: str | Unset = UNSET
    effort: str | Unset = UNSET
    tools: dict[str, Any] | Unset = UNSET
    steering_mode: QueueMode | Unset = UNSET
    follow_up_mode: QueueMode | Unset = UNSET
    goal: Goal | Unset | None = UNSET
    workspace: str | Unset = UNSET  # absolute (W1)

    def changes(self) -> dict[str, Any]:
        return {name: value for name in self.__struct_fields__ if not isinstance(value := getattr(self, name), Unset)}


T = TypeVar("T")


class Page(msgspec.Struct, Generic[T], kw_only=True):
    """One page of a listing; pass ``next_cursor`` back to get the next one (``None``: the end)."""

    items: list[T]
    next_cursor: str | None


_STATE_WORDS: dict[str, str] = {
    "running": "running",
    "retrying": "retrying",
    "waiting_answer": "waiting for an answer",
    "waiting_tasks": "waiting for its delegated tasks",
    "queued": "queued, not running",
    "idle": "idle",
}


class ActivityFacts(Protocol):
    """What :func:`activity_words` reads: the domain's :class:`Activity` or the wire's."""

    @property
    def state(self) -> str: ...
    @property
    def pending(self) -> int: ...
    @property
    def outcome(self) -> str | None: ...
    @property
    def error(self) -> str | None: ...
    @property
    def tasks(self) -> int: ...


def activity_words(activity: ActivityFacts) -> str:
    """A Background session's state and last outcome in a few words, the same in every client (K4):
    "running", "waiting for an answer", "idle · last: failed (the model refused)", "queued, not running
    (2 waiting) · last: interrupted"…"""
    words = _STATE_WORDS[activity.state]
    if activity.pending and activity.state != "idle":
        words += f" ({activity.pending} waiting)"
    if activity.outcome is not None:
        error = " ".join((activity.error or "").split())
        reason = f" ({error[:97] + '...' if len(error) > 100 else error})" if error else ""
        words += f" · last: {activity.outcome}{reason}"
    if activity.tasks:
        words += f" · {activity.tasks} delegated task{'s' if activity.tasks != 1 else ''}"
    return words
