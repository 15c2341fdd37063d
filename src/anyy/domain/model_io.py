"""What goes to a model and what comes back, independent of any provider's wire format.

A provider adapter turns a :class:`ModelRequest` into its API's request and its stream into
:data:`ProviderEvent` values; nothing else in anyy knows a provider's format.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal

import msgspec

from anyy.domain.context import ContextItem, ModelContext, Prefix, interrupted_answer, tool_payload
from anyy.domain.entries import EntryKind, Reasoning, Usage


class ToolSpec(msgspec.Struct, kw_only=True, frozen=True):
    """A tool as the model sees it: a name, what it does, and a JSON Schema of its arguments."""

    name: str
    description: str
    parameters: dict[str, Any]


class ToolCallPart(msgspec.Struct, kw_only=True, frozen=True):
    call_id: str
    name: str
    arguments: dict[str, Any]


class ImagePart(msgspec.Struct, kw_only=True, frozen=True):
    """An image attached to a user message (N5): its media type (image/png...) and its bytes."""

    media_type: str
    data: bytes
    name: str = ""


class UserMessage(msgspec.Struct, kw_only=True, frozen=True, tag="user"):
    text: str
    images: tuple[ImagePart, ...] = ()


class AssistantMessage(msgspec.Struct, kw_only=True, frozen=True, tag="assistant"):
    text: str = ""
    tool_calls: tuple[ToolCallPart, ...] = ()
    reasoning: tuple[Reasoning, ...] = ()  # what the provider wants back before the calls (see Reasoning)


class ToolResultMessage(msgspec.Struct, kw_only=True, frozen=True, tag="tool_result"):
    call_id: str
    name: str
    text: str
    is_error: bool = False


Message = UserMessage | AssistantMessage | ToolResultMessage


class ModelRequest(msgspec.Struct, kw_only=True, frozen=True):
    model: str
    system: str
    messages: Sequence[Message]  # a tuple, or the runtime's snapshot of a session's kept messages
    tools: tuple[ToolSpec, ...] = ()
    effort: str = ""  # "" lets the provider choose; otherwise low | medium | high (adapters map it)
    max_tokens: int = 4096


def image_count(request: ModelRequest) -> int:
    return sum(len(message.images) for message in request.messages if isinstance(message, UserMessage))


def refuse_images(provider: str, model: str, hint: str = "") -> str:
    """The error for a model that reads text only, given before any call is made (N5)."""
    return (
        f"the model {provider}/{model} does not accept images, and this conversation has image attachments: "
        "switch to a model that reads images, or remove the images (edit the message, or branch before it)."
        + (f" {hint}" if hint else "")
    )


# -- the normalised stream ---------------------------------------------------------------------------
StopReason = Literal["end", "tool_use", "length", "refusal", "cancelled"]


class TextDelta(msgspec.Struct, kw_only=True, frozen=True, tag="text"):
    text: str


class ThinkingDelta(msgspec.Struct, kw_only=True, frozen=True, tag="thinking"):
    text: str


class ReasoningEvent(msgspec.Struct, kw_only=True, frozen=True, tag="reasoning"):
    """A whole reasoning block, once it ended, with what is needed to hand it back (a signature)."""

    block: Reasoning


class ToolCallEvent(msgspec.Struct, kw_only=True, frozen=True, tag="tool_call"):
    call_id: str
    name: str
    arguments: dict[str, Any]


class UsageEvent(msgspec.Struct, kw_only=True, frozen=True, tag="usage"):
    usage: Usage


class StopEvent(msgspec.Struct, kw_only=True, frozen=True, tag="stop"):
    reason: StopReason
    raw_reason: str = ""  # the provider's own word for it, for people reading the history


ProviderEvent = TextDelta | ThinkingDelta | ReasoningEvent | ToolCallEvent | UsageEvent | StopEvent

ErrorClass = Literal["transient", "overflow", "fatal"]


# -- from the stored context to messages ------------------------------------------------------------
SUMMARY_PREFIX = "Summary of the earlier conversation (older messages were compacted):\n\n"
BRANCH_SUMMARY_PREFIX = "Summary of a branch of this conversation that was left:\n\n"
# After an answer cut short, so the model knows it stopped there and need not pretend it finished (D4).
INTERRUPTED_NOTE = "\n\n[This answer was interrupted here and never finished.]"


def context_to_messages(
    context: ModelContext, images: Mapping[int, tuple[ImagePart, ...]] | None = None
) -> list[Message]:
    """The stored context as provider-neutral messages; ``images`` are the image attachments of user
    entries, by entry id.

    Consecutive assistant text and tool calls become one assistant message (as every API expects);
    a compaction summary and branch summaries are given to the model as user-side context.
    """
    fold = MessageFold(context.summary)
    fold.feed(context.items, images)
    return list(fold.messages())


class MessageFold:
    """:func:`context_to_messages` as a fold that can be continued: items appended to a context are fed
    on, and :meth:`messages` gives the messages of everything fed so far (the runtime keeps one per
    active session, so a model call converts only what was appended since the last one)."""

    def __init__(self, summary: str | None) -> None:
        self.closed: list[Message] = [UserMessage(text=SUMMARY_PREFIX + summary)] if summary else []
        self._text = ""
        self._calls: list[ToolCallPart] = []
        self._reasoning: tuple[Reasoning, ...] = ()
        self._open = False  # an assistant message is being gathered

    def _pending(self) -> AssistantMessage:
        return AssistantMessage(text=self._text, tool_calls=tuple(self._calls), reasoning=self._reasoning)

    def _flush(self) -> None:
        if self._open:
            self.closed.append(self._pending())
        self._text, self._calls, self._reasoning, self._open = "", [], (), False

    def feed(self, items: Iterable[ContextItem], images: Mapping[int, tuple[ImagePart, ...]] | None = None) -> None:
        for item in items:
            kind = item[1]
            if kind == EntryKind.ASSISTANT:
                if self._open and (self._calls or self._text):
                    self._flush()
                self._text += item[2] + (INTERRUPTED_NOTE if interrupted_answer(kind, item[3]) else "")
                self._open = True
            elif kind == EntryKind.TOOL_CALL:
                self._call(tool_payload(item))
            elif kind == EntryKind.TOOL_RESULT:
                self._flush()
                data = tool_payload(item)
                self.closed.append(
                    ToolResultMessage(
                        call_id=data.get("call_id", ""),
                        name=data.get("name", ""),
                        text=item[2],
                        is_error=bool(data.get("is_error", False)),
                    )
                )
            elif kind == EntryKind.USER:
                self._flush()
                self.closed.append(UserMessage(text=item[2], images=images.get(item[0], ()) if images else ()))
            elif kind == EntryKind.BRANCH_SUMMARY:
                self._flush()
                self.closed.append(UserMessage(text=BRANCH_SUMMARY_PREFIX + item[2]))

    def _call(self, data: dict[str, Any]) -> None:
        if not self._calls and data.get("reasoning"):
            self._reasoning = tuple(msgspec.convert(data["reasoning"], list[Reasoning]))
        self._calls.append(
            ToolCallPart(
                call_id=data.get("call_id", ""), name=data.get("name", ""), arguments=data.get("arguments", {})
            )
        )
        self._open = True

    def messages(self) -> Prefix[Message]:
        """The messages so far, the assistant message being gathered included (it stays open): a snapshot
        made without copying (``closed`` only grows)."""
        return Prefix(self.closed, len(self.closed), (self._pending(),) if self._open else ())
