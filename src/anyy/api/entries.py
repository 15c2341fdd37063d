"""Entries as clients read them: the entry with its kind by name and its payload as a typed union, one
struct per kind, told apart by ``kind`` (the same word as the entry's own ``kind``).

These mirror the payloads the sessions keep (``anyy.domain.entries``); a test keeps the two in step.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

EntryKindName = Literal[
    "user",
    "assistant",
    "tool_call",
    "tool_result",
    "question",
    "answer",
    "compaction",
    "branch_summary",
    "label",
    "model_change",
    "notice",
]


class Usage(msgspec.Struct, kw_only=True, omit_defaults=True):
    """Tokens a provider reported for one response."""

    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0
    reasoning: int = 0  # of ``output``: the model's reasoning tokens

    @property
    def context_tokens(self) -> int:
        """What the model re-read for this response: its whole prompt."""
        return self.input + self.cache_read + self.cache_write


class Attachment(msgspec.Struct, kw_only=True, omit_defaults=True):
    """A file sent with a message, stored once in the profile's objects/ by its hash."""

    object: str
    name: str
    media_type: str = "application/octet-stream"
    size: int = 0


class Reasoning(msgspec.Struct, kw_only=True, frozen=True, omit_defaults=True):
    kind: str  # "thinking" | "redacted_thinking"
    text: str = ""
    signature: str = ""
    data: str = ""


class InnerCall(msgspec.Struct, kw_only=True, omit_defaults=True):
    """A tool a Codemode script called, recorded with the script's result."""

    name: str
    arguments: dict[str, Any] = {}
    result: str = ""
    is_error: bool = False


class _Data(msgspec.Struct, kw_only=True, omit_defaults=True, tag_field="kind"):
    """Base of the payloads: ``kind`` names the entry kind."""


class UserData(_Data, tag="user"):
    attachments: list[Attachment] = []


class AssistantData(_Data, tag="assistant"):
    provider: str = ""
    model: str = ""
    usage: Usage | None = None
    stop_reason: str = ""
    interrupted: bool = False
    thinking: str = ""
    cost: int | None = None  # nano-dollars; None with a usage: unpriced


class ToolCallData(_Data, tag="tool_call"):
    call_id: str
    name: str
    arguments: dict[str, Any] = {}
    reasoning: list[Reasoning] = []


class ToolResultData(_Data, tag="tool_result"):
    call_id: str
    name: str = ""
    is_error: bool = False
    synthetic: bool = False
    inner_calls: list[InnerCall] = []


class QuestionData(_Data, tag="question"):
    call_id: str = ""


class AnswerData(_Data, tag="answer"):
    question: int


class CompactionData(_Data, tag="compaction"):
    first_kept: int
    tokens_before: int = 0


class BranchSummaryData(_Data, tag="branch_summary"):
    from_entry: int


class LabelData(_Data, tag="label"):
    target: int


class ModelChangeData(_Data, tag="model_change"):
    provider: str = ""
    model: str = ""
    effort: str = ""
    previous: list[str] | None = None  # [provider, model, effort] it replaced (navigation restores it)


class NoticeData(_Data, tag="notice"):
    level: Literal["info", "warning", "error"] = "info"
    # Set on the notice of a failed turn (U2): the execution that failed and whether trying again may work
    # (a transient provider error) rather than needing a change first (an unknown model, a missing key).
    failed_execution: str = ""
    retryable: bool = False


EntryData = (
    UserData
    | AssistantData
    | ToolCallData
    | ToolResultData
    | QuestionData
    | AnswerData
    | CompactionData
    | BranchSummaryData
    | LabelData
    | ModelChangeData
    | NoticeData
)

DATA_BY_KIND: dict[str, type[EntryData]] = {
    cls.__struct_config__.tag: cls  # type: ignore[misc]
    for cls in (
        UserData,
        AssistantData,
        ToolCallData,
        ToolResultData,
        QuestionData,
        AnswerData,
        CompactionData,
        BranchSummaryData,
        LabelData,
        ModelChangeData,
        NoticeData,
    )
}


class EntryView(msgspec.Struct, kw_only=True):
    """An entry as clients read it: ``kind`` by name (user, assistant, tool_call, tool_result, question,
    answer, compaction, branch_summary, label, model_change, notice) and ``data``, its typed payload."""

    id: int
    parent: int | None
    kind: EntryKindName
    text: str
    data: EntryData
    created_at: float
    object: str | None
