"""The wire contract of the Gateway's API: every method's parameters and result, the entries as clients
read them (a typed payload per kind) and the events. msgspec types only: this package imports nothing
else of anyy, so the Gateway, the runtime and every client can share it (it is the lowest layer).
"""

from anyy.api.entries import EntryData, EntryView
from anyy.api.events import (
    EntriesAppended,
    ExecutionStateChanged,
    Notice,
    QueueChanged,
    RetryWaiting,
    RuntimeEvent,
    SessionRenamed,
    TextDeltaEvent,
    ThinkingDeltaEvent,
    ToolFinished,
    ToolStarted,
)
from anyy.api.methods import METHODS, MethodSpec

__all__ = [
    "METHODS",
    "EntriesAppended",
    "EntryData",
    "EntryView",
    "ExecutionStateChanged",
    "MethodSpec",
    "Notice",
    "QueueChanged",
    "RetryWaiting",
    "RuntimeEvent",
    "SessionRenamed",
    "TextDeltaEvent",
    "ThinkingDeltaEvent",
    "ToolFinished",
    "ToolStarted",
]
