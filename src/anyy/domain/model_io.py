"""What goes to a model and what comes back, independent of any provider's wire format.

A provider adapter turns a :class:`ModelRequest` into its API's request and its stream into
:data:`ProviderEvent` values; nothing else in anyy knows a provider's format.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

import msgspec

from anyy.domain.context import ModelContext, interrupted_answer, tool_payload
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
    messages: tuple[Message, ...]
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
    messages: list[Message] = []
    if context.summary:
        messages.append(UserMessage(text=SUMMARY_PREFIX + context.summary))
    pending_text = ""
    pending_calls: list[ToolCallPart] = []
    pending_reasoning: tuple[Reasoning, ...] = ()
    open_assistant = False

    def flush() -> None:
        nonlocal pending_text, pending_calls, pending_reasoning, open_assistant
        if open_assistant:
            messages.append(
                AssistantMessage(text=pending_text, tool_calls=tuple(pending_calls), reasoning=pending_reasoning)
            )
        pending_text, pending_calls, pending_reasoning, open_assistant = "", [], (), False

    for item in context.items:
        kind = item[1]
        if kind == EntryKind.ASSISTANT:
            if open_assistant and (pending_calls or pending_text):
                flush()
            pending_text += item[2] + (INTERRUPTED_NOTE if interrupted_answer(kind, item[3]) else "")
            open_assistant = True
        elif kind == EntryKind.TOOL_CALL:
            data = tool_payload(item)
            if not pending_calls and data.get("reasoning"):
                pending_reasoning = tuple(msgspec.convert(data["reasoning"], list[Reasoning]))
            pending_calls.append(
                ToolCallPart(
                    call_id=data.get("call_id", ""), name=data.get("name", ""), arguments=data.get("arguments", {})
                )
            )
            open_assistant = True
        elif kind == EntryKind.TOOL_RESULT:
            flush()
            data = tool_payload(item)
            messages.append(
                ToolResultMessage(
                    call_id=data.get("call_id", ""),
                    name=data.get("name", ""),
                    text=item[2],
                    is_error=bool(data.get("is_error", False)),
                )
            )
        elif kind == EntryKind.USER:
            flush()
            messages.append(UserMessage(text=item[2], images=images.get(item[0], ()) if images else ()))
        elif kind == EntryKind.BRANCH_SUMMARY:
            flush()
            messages.append(UserMessage(text=BRANCH_SUMMARY_PREFIX + item[2]))
    flush()
    return messages
