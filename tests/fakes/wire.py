"""The wire formats of the fake model server: a neutral :class:`Reply` rendered as the SSE events of
OpenAI Chat Completions, OpenAI Responses or Anthropic Messages."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from anyy.providers.gates import Flag


@dataclass
class ToolCall:
    """A tool call to stream; ``raw_arguments`` replaces the JSON of ``arguments`` (to send broken JSON)."""

    name: str
    arguments: dict[str, Any]
    call_id: str = ""
    raw_arguments: str | None = None

    @property
    def json(self) -> str:
        return self.raw_arguments if self.raw_arguments is not None else json.dumps(self.arguments)


@dataclass
class Reply:
    """A streamed answer. ``text`` pieces become one delta each; ``finish`` is the wire's own word
    (default: tool_calls/tool_use when there are calls, else stop/end_turn).

    Faults, counted in wire events (SSE messages) from the start of the stream:
    ``hold_at``: wait there until ``hold`` is set (tests of cancellation); ``cut_at``: drop the connection
    there without ending the body; ``end_at``: end the body there cleanly, leaving out the rest (no finish,
    no ``[DONE]``); ``error_at``: send the API's in-stream error event there, then end.
    """

    text: Sequence[str] = ()
    thinking: Sequence[str] = ()
    tool_calls: Sequence[ToolCall] = ()
    input_tokens: int = 11
    output_tokens: int = 7
    cache_read: int = 0
    cache_write: int = 0
    reasoning_tokens: int = 0  # of output_tokens (the OpenAI wire reports them apart)
    usage: bool = True
    finish: str | None = None
    hold_at: int | None = None
    hold: Flag = field(default_factory=Flag)
    cut_at: int | None = None
    end_at: int | None = None
    error_at: int | None = None
    error_type: str = "overloaded_error"
    error_message: str = "Overloaded"


@dataclass
class ErrorReply:
    """An HTTP error answer, rendered as the API's JSON error body."""

    status: int
    message: str
    type: str = "invalid_request_error"
    code: str | None = None
    headers: dict[str, str] = field(default_factory=dict)


def sse(data: dict[str, Any] | str, event: str | None = None) -> bytes:
    text = data if isinstance(data, str) else json.dumps(data)
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {text}\n\n".encode()


def _pieces(text: str, size: int = 5) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def openai_events(reply: Reply, model: str) -> Iterator[bytes]:
    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        return sse(
            {
                "id": "chatcmpl-fake",
                "object": "chat.completion.chunk",
                "created": 0,
                "model": model,
                "choices": [choice],
            }
        )

    yield chunk({"role": "assistant", "content": ""})
    for piece in reply.thinking:
        yield chunk({"reasoning_content": piece})
    for piece in reply.text:
        yield chunk({"content": piece})
    for index, call in enumerate(reply.tool_calls):
        call_id = call.call_id or f"call_{index}"
        head = {"index": index, "id": call_id, "type": "function", "function": {"name": call.name, "arguments": ""}}
        yield chunk({"tool_calls": [head]})
        for piece in _pieces(call.json):
            yield chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
    yield chunk({}, reply.finish or ("tool_calls" if reply.tool_calls else "stop"))
    if reply.usage:
        usage: dict[str, Any] = {
            "prompt_tokens": reply.input_tokens + reply.cache_read,
            "completion_tokens": reply.output_tokens,
            "total_tokens": reply.input_tokens + reply.cache_read + reply.output_tokens,
            "prompt_tokens_details": {"cached_tokens": reply.cache_read},
        }
        if reply.reasoning_tokens:
            usage["completion_tokens_details"] = {"reasoning_tokens": reply.reasoning_tokens}
        yield sse(
            {
                "id": "chatcmpl-fake",
                "object": "chat.completion.chunk",
                "created": 0,
                "model": model,
                "choices": [],
                "usage": usage,
            }
        )
    yield sse("[DONE]")


def anthropic_events(reply: Reply, model: str) -> Iterator[bytes]:
    def event(name: str, **data: Any) -> bytes:
        return sse({"type": name, **data}, event=name)

    usage = {
        "input_tokens": reply.input_tokens,
        "output_tokens": 1,
        "cache_read_input_tokens": reply.cache_read,
        "cache_creation_input_tokens": reply.cache_write,
    }
    message: dict[str, Any] = {
        "id": "msg_fake",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": usage,
    }
    yield event("message_start", message=message)
    index = 0
    if reply.thinking:
        yield event(
            "content_block_start", index=index, content_block={"type": "thinking", "thinking": "", "signature": ""}
        )
        for piece in reply.thinking:
            yield event("content_block_delta", index=index, delta={"type": "thinking_delta", "thinking": piece})
        yield event("content_block_delta", index=index, delta={"type": "signature_delta", "signature": "sig"})
        yield event("content_block_stop", index=index)
        index += 1
    if reply.text:
        yield event("content_block_start", index=index, content_block={"type": "text", "text": ""})
        yield sse({"type": "ping"}, event="ping")
        for piece in reply.text:
            yield event("content_block_delta", index=index, delta={"type": "text_delta", "text": piece})
        yield event("content_block_stop", index=index)
        index += 1
    for number, call in enumerate(reply.tool_calls):
        block = {"type": "tool_use", "id": call.call_id or f"toolu_{number}", "name": call.name, "input": {}}
        yield event("content_block_start", index=index, content_block=block)
        for piece in _pieces(call.json):
            yield event("content_block_delta", index=index, delta={"type": "input_json_delta", "partial_json": piece})
        yield event("content_block_stop", index=index)
        index += 1
    stop = reply.finish or ("tool_use" if reply.tool_calls else "end_turn")
    delta_usage = {"output_tokens": reply.output_tokens} if reply.usage else {"output_tokens": 0}
    yield event("message_delta", delta={"stop_reason": stop, "stop_sequence": None}, usage=delta_usage)
    yield event("message_stop")


def responses_events(reply: Reply, model: str) -> Iterator[bytes]:
    """The OpenAI Responses stream: created, one message item (text deltas) and one function_call item per
    tool call, completed with the usage."""
    number = iter(range(1_000_000))

    def event(name: str, **data: Any) -> bytes:
        return sse({"type": name, "sequence_number": next(number), **data}, event=name)

    response: dict[str, Any] = {
        "id": "resp_fake",
        "object": "response",
        "created_at": 0,
        "status": "in_progress",
        "model": model,
        "output": [],
    }
    yield event("response.created", response=response)
    output: list[dict[str, Any]] = []
    if reply.text:
        item: dict[str, Any] = {"id": "msg_fake", "type": "message", "status": "in_progress", "role": "assistant"}
        yield event("response.output_item.added", output_index=0, item={**item, "content": []})
        part = {"type": "output_text", "text": "", "annotations": []}
        yield event("response.content_part.added", item_id="msg_fake", output_index=0, content_index=0, part=part)
        for piece in reply.text:
            yield event("response.output_text.delta", item_id="msg_fake", output_index=0, content_index=0, delta=piece)
        text = "".join(reply.text)
        yield event("response.output_text.done", item_id="msg_fake", output_index=0, content_index=0, text=text)
        part = {**part, "text": text}
        yield event("response.content_part.done", item_id="msg_fake", output_index=0, content_index=0, part=part)
        done = {**item, "status": "completed", "content": [part]}
        yield event("response.output_item.done", output_index=0, item=done)
        output.append(done)
    for number_, call in enumerate(reply.tool_calls):
        index = len(output)
        call_item = {
            "id": f"fc_{number_}",
            "type": "function_call",
            "status": "completed",
            "call_id": call.call_id or f"call_{number_}",
            "name": call.name,
            "arguments": call.json,
        }
        yield event("response.output_item.added", output_index=index, item={**call_item, "arguments": ""})
        yield event("response.output_item.done", output_index=index, item=call_item)
        output.append(call_item)
    usage = {
        "input_tokens": reply.input_tokens + reply.cache_read,
        "input_tokens_details": {"cached_tokens": reply.cache_read},
        "output_tokens": reply.output_tokens,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": reply.input_tokens + reply.cache_read + reply.output_tokens,
    }
    completed = {**response, "status": "completed", "output": output, **({"usage": usage} if reply.usage else {})}
    yield event("response.completed", response=completed)
