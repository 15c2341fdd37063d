"""The stored context as messages (A6): pinned on a context holding every kind of item, whole and fed on."""

from __future__ import annotations

import msgspec

from anyy.domain.context import ContextItem, ModelContext
from anyy.domain.entries import AssistantData, EntryKind, Reasoning, ToolCallData, ToolResultData, encode_data
from anyy.domain.model_io import (
    BRANCH_SUMMARY_PREFIX,
    INTERRUPTED_NOTE,
    SUMMARY_PREFIX,
    AssistantMessage,
    ImagePart,
    Message,
    MessageFold,
    ToolCallPart,
    ToolResultMessage,
    UserMessage,
    context_to_messages,
)

THOUGHT = Reasoning(kind="thinking", text="look first", signature="sig")
PICTURE = ImagePart(media_type="image/png", data=b"\x89PNG", name="a.png")


def _item(entry_id: int, kind: EntryKind, text: str, data: msgspec.Struct | None = None) -> ContextItem:
    raw = encode_data(kind, data) if data is not None else None  # as a store keeps the payload
    return (entry_id, int(kind), text, raw.decode() if raw else None)


ITEMS: list[ContextItem] = [
    _item(1, EntryKind.USER, "what is here?"),
    _item(2, EntryKind.ASSISTANT, "let me look", AssistantData(provider="p", model="m")),
    _item(
        3, EntryKind.TOOL_CALL, "", ToolCallData(call_id="c1", name="ls", arguments={"path": "."}, reasoning=[THOUGHT])
    ),
    _item(4, EntryKind.TOOL_CALL, "", ToolCallData(call_id="c2", name="cat")),
    _item(5, EntryKind.TOOL_RESULT, "a.txt", ToolResultData(call_id="c1", name="ls")),
    _item(6, EntryKind.TOOL_RESULT, "no such file", ToolResultData(call_id="c2", name="cat", is_error=True)),
    _item(7, EntryKind.ASSISTANT, "half an ans", AssistantData(interrupted=True)),
    _item(8, EntryKind.ASSISTANT, ""),  # an empty answer, then one with text: one message
    _item(9, EntryKind.ASSISTANT, "a second answer"),
    (10, int(EntryKind.NOTICE), "not for the model", None),
    _item(11, EntryKind.BRANCH_SUMMARY, "we tried sed"),
    _item(12, EntryKind.USER, "go on"),
    _item(13, EntryKind.TOOL_CALL, "", ToolCallData(call_id="c3", name="ls")),  # no answer text, no result yet
]

EXPECTED: list[Message] = [
    UserMessage(text=SUMMARY_PREFIX + "older talk"),
    UserMessage(text="what is here?", images=(PICTURE,)),
    AssistantMessage(
        text="let me look",
        tool_calls=(
            ToolCallPart(call_id="c1", name="ls", arguments={"path": "."}),
            ToolCallPart(call_id="c2", name="cat", arguments={}),
        ),
        reasoning=(THOUGHT,),
    ),
    ToolResultMessage(call_id="c1", name="ls", text="a.txt"),
    ToolResultMessage(call_id="c2", name="cat", text="no such file", is_error=True),
    AssistantMessage(text="half an ans" + INTERRUPTED_NOTE),
    AssistantMessage(text="a second answer"),
    UserMessage(text=BRANCH_SUMMARY_PREFIX + "we tried sed"),
    UserMessage(text="go on"),
    AssistantMessage(tool_calls=(ToolCallPart(call_id="c3", name="ls", arguments={}),)),
]


def _context(items: list[ContextItem]) -> ModelContext:
    return ModelContext(items=items, summary="older talk", compaction=None, head=None, tokens=0)


def test_a6_a_mixed_context_becomes_these_messages() -> None:
    assert context_to_messages(_context(ITEMS), {1: (PICTURE,)}) == EXPECTED


def test_a6_a_fold_fed_on_at_any_point_gives_what_one_conversion_gives() -> None:
    for cut in range(len(ITEMS) + 1):
        fold = MessageFold("older talk")
        fold.feed(ITEMS[:cut], {1: (PICTURE,)})
        assert list(fold.messages()) == context_to_messages(_context(ITEMS[:cut]), {1: (PICTURE,)}), cut
        fold.feed(ITEMS[cut:], {1: (PICTURE,)})
        assert list(fold.messages()) == EXPECTED, cut
