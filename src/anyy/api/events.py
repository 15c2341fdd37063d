"""What the runtime tells clients while it works: one tagged union (``type``), pushed by the Gateway as
``event`` notifications. Events carry what a client needs to show the change without asking again: the
appended entries themselves, the submissions an execution took, the question it waits on, the queue."""

from __future__ import annotations

from typing import Any

import msgspec

from anyy.api.entries import EntryView
from anyy.api.sessions import ExecutionState, Question, Submission


class TextDeltaEvent(msgspec.Struct, kw_only=True, frozen=True, tag="text_delta"):
    session_id: str
    execution_id: str
    text: str


class ThinkingDeltaEvent(msgspec.Struct, kw_only=True, frozen=True, tag="thinking_delta"):
    session_id: str
    execution_id: str
    text: str


class EntriesAppended(msgspec.Struct, kw_only=True, frozen=True, tag="entries_appended"):
    """Entries recorded in the session, in order, each as ``session.history`` shows it."""

    session_id: str
    entry_ids: list[int]
    entries: list[EntryView] = []


class QueueChanged(msgspec.Struct, kw_only=True, frozen=True, tag="queue_changed"):
    """The session's queue or settings changed; ``pending`` is the queue now (as ``session.queue.list``)."""

    session_id: str
    pending: list[Submission] = []


class ExecutionStateChanged(msgspec.Struct, kw_only=True, frozen=True, tag="execution_state"):
    """An execution moved on. ``submission_ids``: every submission it took so far (the ones it started
    with, then steering taken at checkpoints); ``question``: what it asks, when it is suspended."""

    session_id: str
    execution_id: str
    state: ExecutionState
    error: str | None = None
    note: str | None = None
    submission_ids: list[str] = []
    question: Question | None = None


class RetryWaiting(msgspec.Struct, kw_only=True, frozen=True, tag="retry_wait"):
    session_id: str
    execution_id: str
    attempt: int  # 1 for the first retry
    of: int  # retries allowed
    delay: float  # seconds until the retry
    error: str


class ToolStarted(msgspec.Struct, kw_only=True, frozen=True, tag="tool_started"):
    session_id: str
    execution_id: str
    call_id: str  # a Codemode script's own calls: "<the script's call id>.<n>", n from 1
    name: str
    arguments: dict[str, Any]
    parent_call_id: str = ""  # set for a call a Codemode script made: the script's call (run_script)


class ToolFinished(msgspec.Struct, kw_only=True, frozen=True, tag="tool_finished"):
    session_id: str
    execution_id: str
    call_id: str
    name: str
    is_error: bool
    synthetic: bool
    parent_call_id: str = ""  # as in ToolStarted


class Notice(msgspec.Struct, kw_only=True, frozen=True, tag="notice"):
    """Something a person should read: a summary that was not applied, a retry that was cancelled…"""

    session_id: str
    level: str
    text: str


class SessionRenamed(msgspec.Struct, kw_only=True, frozen=True, tag="session_renamed"):
    """The session's title changed: named from its first message, then by the model, or renamed (U1)."""

    session_id: str
    title: str


RuntimeEvent = (
    TextDeltaEvent
    | ThinkingDeltaEvent
    | EntriesAppended
    | QueueChanged
    | ExecutionStateChanged
    | RetryWaiting
    | ToolStarted
    | ToolFinished
    | Notice
    | SessionRenamed
)
