"""Entries: the immutable nodes of a session's tree, one kind for each thing a session keeps (SPEC A2)."""

from __future__ import annotations

import enum
from collections.abc import Sequence
from typing import Any, Literal

import msgspec

from anyy.domain.errors import InvalidInput


class EntryKind(enum.IntEnum):
    """Stored as a small integer; spoken as its lower-case name."""

    USER = 1
    ASSISTANT = 2
    TOOL_CALL = 3
    TOOL_RESULT = 4
    QUESTION = 5
    ANSWER = 6
    COMPACTION = 7
    BRANCH_SUMMARY = 8
    LABEL = 9
    MODEL_CHANGE = 10
    NOTICE = 11

    @property
    def label(self) -> str:
        return self.name.lower()

    @classmethod
    def parse(cls, name: str) -> EntryKind:
        try:
            return cls[name.upper()]
        except KeyError:
            names = ", ".join(k.label for k in cls)
            raise InvalidInput(f"unknown entry kind {name!r}; the kinds are: {names}") from None


# Kinds whose text is indexed for full-text search: what people and the agent said.
SEARCHABLE_KINDS: frozenset[EntryKind] = frozenset(
    {EntryKind.USER, EntryKind.ASSISTANT, EntryKind.QUESTION, EntryKind.ANSWER}
)


class Usage(msgspec.Struct, kw_only=True, omit_defaults=True):
    """Tokens a provider reported for one response."""

    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0
    reasoning: int = 0  # of ``output``: the model's reasoning, as the provider reports it (Y1)

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


class UserData(msgspec.Struct, kw_only=True, omit_defaults=True):
    attachments: list[Attachment] = []


class AssistantData(msgspec.Struct, kw_only=True, omit_defaults=True):
    provider: str = ""
    model: str = ""
    usage: Usage | None = None
    stop_reason: str = ""
    interrupted: bool = False
    thinking: str = ""
    # What the call cost in nano-dollars (Y1); None with a usage: unpriced (its model has no price).
    cost: int | None = None


class Reasoning(msgspec.Struct, kw_only=True, frozen=True, omit_defaults=True):
    """A block of the model's reasoning that its API wants handed back verbatim while the tool calls it led
    to are answered (Anthropic's ``thinking`` with its ``signature``, or ``redacted_thinking`` with its
    opaque ``data``)."""

    kind: str  # "thinking" | "redacted_thinking"
    text: str = ""
    signature: str = ""
    data: str = ""


class ToolCallData(msgspec.Struct, kw_only=True, omit_defaults=True):
    call_id: str
    name: str
    arguments: dict[str, Any] = {}
    # On the first call of a response only: the reasoning blocks that preceded the calls, replayed with
    # them while their results go back to the model (kept with the calls: the context reads their data).
    reasoning: list[Reasoning] = []


INNER_RESULT_CHARS = 2000  # of each Codemode inner call's result kept in the history


class InnerCall(msgspec.Struct, kw_only=True, omit_defaults=True):
    """A tool a Codemode script called: recorded with the script's result, never sent to the model as a
    call of its own (the model made one call, ``run_script``)."""

    name: str
    arguments: dict[str, Any] = {}
    result: str = ""  # the beginning of what the tool returned
    is_error: bool = False


class ToolResultData(msgspec.Struct, kw_only=True, omit_defaults=True):
    call_id: str
    name: str = ""
    is_error: bool = False
    synthetic: bool = False
    inner_calls: list[InnerCall] = []  # the tools a Codemode script called, in order


class QuestionData(msgspec.Struct, kw_only=True, omit_defaults=True):
    call_id: str = ""


class AnswerData(msgspec.Struct, kw_only=True, omit_defaults=True):
    question: int


class CompactionData(msgspec.Struct, kw_only=True, omit_defaults=True):
    first_kept: int
    tokens_before: int = 0


class BranchSummaryData(msgspec.Struct, kw_only=True, omit_defaults=True):
    from_entry: int


class LabelData(msgspec.Struct, kw_only=True, omit_defaults=True):
    target: int


class ModelChangeData(msgspec.Struct, kw_only=True, omit_defaults=True):
    provider: str = ""
    model: str = ""
    effort: str = ""
    # The selection it replaced: navigating back before the session's first change restores it (M2).
    previous: list[str] | None = None  # [provider, model, effort]


class NoticeData(msgspec.Struct, kw_only=True, omit_defaults=True):
    level: Literal["info", "warning", "error"] = "info"
    # Set on the notice of a failed turn (U2): the execution that failed and whether trying again may work
    # (a transient provider error) rather than needing a change first (an unknown model, a missing key).
    failed_execution: str = ""
    retryable: bool = False


DATA_TYPES: dict[EntryKind, type[msgspec.Struct]] = {
    EntryKind.USER: UserData,
    EntryKind.ASSISTANT: AssistantData,
    EntryKind.TOOL_CALL: ToolCallData,
    EntryKind.TOOL_RESULT: ToolResultData,
    EntryKind.QUESTION: QuestionData,
    EntryKind.ANSWER: AnswerData,
    EntryKind.COMPACTION: CompactionData,
    EntryKind.BRANCH_SUMMARY: BranchSummaryData,
    EntryKind.LABEL: LabelData,
    EntryKind.MODEL_CHANGE: ModelChangeData,
    EntryKind.NOTICE: NoticeData,
}


class NewEntry(msgspec.Struct, kw_only=True):
    """What a caller appends. ``data`` is checked against the kind's schema by :func:`encode_data`.
    ``created_at``: when it happened, for an entry written after the fact (an imported session's, I2);
    ``None``: now, by the store's clock."""

    kind: EntryKind
    text: str = ""
    data: msgspec.Struct | dict[str, Any] | None = None
    created_at: float | None = None


def check_created_at(value: float | None) -> float | None:
    """A given time must be a finite number of seconds since the epoch."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < 1e11:
        raise InvalidInput(f"an entry's time must be seconds since the epoch, not {value!r}")
    return float(value)


class Entry(msgspec.Struct, kw_only=True):
    """A stored entry. ``data`` is the kind's payload as plain JSON values."""

    id: int
    parent: int | None
    kind: EntryKind
    text: str
    data: dict[str, Any]
    created_at: float
    object: str | None = None

    def payload(self) -> Any:
        """The kind's typed payload (``ToolCallData`` for a tool call, …)."""
        return msgspec.convert(self.data, DATA_TYPES[self.kind])


_encoder = msgspec.json.Encoder()


# Kinds whose payload may be left out entirely (every field has a default): the common, fast case.
_EMPTY_OK: frozenset[EntryKind] = frozenset(
    kind for kind, schema in DATA_TYPES.items() if not any(f.required for f in msgspec.structs.fields(schema))
)


def encode_data(kind: EntryKind, data: msgspec.Struct | dict[str, Any] | None) -> bytes | None:
    """Validate a payload against its kind and encode it; ``None`` when there is nothing to keep."""
    if data is None and kind in _EMPTY_OK:
        return None
    schema = DATA_TYPES[kind]
    if data is None:
        try:
            typed = schema()
        except TypeError:
            raise InvalidInput(f"a {kind.label} entry needs data ({schema.__name__})") from None
    elif isinstance(data, dict):
        try:
            typed = msgspec.convert(data, schema)
        except msgspec.ValidationError as exc:
            raise InvalidInput(f"invalid data for a {kind.label} entry: {exc}") from None
    elif isinstance(data, schema):
        typed = data
    else:
        raise InvalidInput(f"a {kind.label} entry takes {schema.__name__}, not {type(data).__name__}")
    raw = _encoder.encode(typed)
    return None if raw == b"{}" else raw


_decoder = msgspec.json.Decoder(dict[str, Any])


def decode_data(raw: str | bytes | None) -> dict[str, Any]:
    return {} if raw is None else _decoder.decode(raw)


Selection = tuple[str, str, str]  # provider, model, effort


def selection_at(old_path: Sequence[Entry], new_path: Sequence[Entry]) -> Selection | None:
    """The model selection that applies at the end of ``new_path`` after navigating there from the end of
    ``old_path`` (M2, D12), or ``None`` when it is the one in force. The newest model change on the new
    path decides; with none there, the session's first selection applies, which the oldest change on
    the old path remembers (none there either: the selection never changed, it stays)."""
    for entry in reversed(new_path):
        if entry.kind == EntryKind.MODEL_CHANGE:
            data = entry.data
            return (str(data.get("provider", "")), str(data.get("model", "")), str(data.get("effort", "")))
    for entry in old_path:
        if entry.kind == EntryKind.MODEL_CHANGE:
            previous = entry.data.get("previous")
            if isinstance(previous, list) and len(previous) == 3:
                return (str(previous[0]), str(previous[1]), str(previous[2]))
            return None  # recorded before changes remembered what they replaced
    return None
