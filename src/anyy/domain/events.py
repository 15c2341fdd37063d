"""What the runtime tells clients while it works: one tagged union, pushed by the Gateway as events."""

from __future__ import annotations

from typing import Any

import msgspec


class TextDeltaEvent(msgspec.Struct, kw_only=True, frozen=True, tag="text_delta"):
    session_id: str
    execution_id: str
    text: str


class ThinkingDeltaEvent(msgspec.Struct, kw_only=True, frozen=True, tag="thinking_delta"):
    session_id: str
    execution_id: str
    text: str


class EntriesAppended(msgspec.Struct, kw_only=True, frozen=True, tag="entries_appended"):
    session_id: str
    entry_ids: list[int]


class QueueChanged(msgspec.Struct, kw_only=True, frozen=True, tag="queue_changed"):
    session_id: str


class ExecutionStateChanged(msgspec.Struct, kw_only=True, frozen=True, tag="execution_state"):
    session_id: str
    execution_id: str
    state: str
    error: str | None = None
    note: str | None = None


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
)
