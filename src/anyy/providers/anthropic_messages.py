"""Anthropic's Messages API through the ``anthropic`` SDK, streamed.

One call is one ``messages.create(stream=True)``. The raw stream events map as: ``text_delta`` →
TextDelta, ``thinking_delta`` → ThinkingDelta, a ``tool_use`` block (its ``input_json_delta`` pieces
gathered) → one ToolCallEvent when the block stops, ``message_start`` and ``message_delta`` usage →
one UsageEvent (input, output, cache read, cache write), ``message_delta``'s stop reason → StopEvent.

Effort becomes an extended-thinking budget (low 1024, medium 4096, high 16384 tokens, added to
``max_tokens`` since thinking counts against it). Each ``thinking`` block (its text and its
``signature_delta``) or ``redacted_thinking`` block becomes one ReasoningEvent when it ends; the runtime
keeps them with the response's tool calls, and the passes that carry those calls' results hand them back
first in the assistant turn, verbatim, as the API requires when thinking is on. A pass continuing a tool
turn whose reasoning was not kept (recorded by another provider, or before anyy kept it) asks for no
thinking rather than be refused.

Retries and timeouts as for the OpenAI adapter: the SDK client retries nothing (``max_retries=0``; the
runtime owns retries, SPEC R3) and its HTTP timeouts stay on.
"""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator, Sequence
from typing import Any

import anthropic
import anyio
import httpx2

from anyy.domain.entries import Reasoning, Usage
from anyy.domain.model_io import (
    AssistantMessage,
    Message,
    ModelRequest,
    ProviderEvent,
    ReasoningEvent,
    StopEvent,
    StopReason,
    TextDelta,
    ThinkingDelta,
    ToolCallEvent,
    ToolResultMessage,
    UsageEvent,
)
from anyy.providers import http_errors
from anyy.providers.base import ProviderError
from anyy.providers.base_urls import anthropic_base_url
from anyy.providers.sdk_common import NO_KEY, SdkProvider
from anyy.providers.tool_arguments import parse_arguments

THINKING_BUDGET = {"low": 1024, "medium": 4096, "high": 16384}
_STOP: dict[str, StopReason] = {
    "end_turn": "end",
    "stop_sequence": "end",
    "pause_turn": "end",
    "tool_use": "tool_use",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "refusal": "refusal",
}


class AnthropicProvider(SdkProvider):
    """``stream()`` one Messages call; see the module docstring."""

    def __init__(
        self,
        name: str,
        *,
        base_url: str = "https://api.anthropic.com",
        api_key: str = "",
        key_env: str = "",
        key_required: bool = False,
        images: bool = True,
        connect_timeout: float = 10.0,
        read_timeout: float = 300.0,
    ) -> None:
        self._configure(
            name,
            anthropic_base_url(base_url),
            api_key=api_key,
            key_env=key_env,
            key_required=key_required,
            images=images,
        )  # with or without /v1
        self._client = anthropic.AsyncAnthropic(
            # An explicit key also stops the SDK from looking for credentials in files and other variables.
            api_key=api_key or NO_KEY,
            base_url=self.base_url,
            max_retries=0,
            timeout=httpx2.Timeout(read_timeout, connect=connect_timeout),
        )

    def stream(self, request: ModelRequest) -> AsyncIterator[ProviderEvent]:
        return self._stream(request)

    async def _stream(self, request: ModelRequest) -> AsyncIterator[ProviderEvent]:
        stream = await self._open(request)
        state = _StreamState()
        try:
            async for event in stream:
                for made in state.read(event):
                    yield made
        except anthropic.APIError as exc:
            raise self._error(exc) from exc
        except httpx2.TransportError as exc:
            raise self._transport_error(exc) from exc
        finally:
            with anyio.CancelScope(shield=True):  # the request is closed now, even when cancelled
                await stream.close()
        if state.stop is None:
            raise http_errors.dropped(self.name, "the stream ended before the model's stop reason")
        yield UsageEvent(usage=state.usage)
        yield StopEvent(reason=_STOP.get(state.stop, "end"), raw_reason=state.stop)

    async def _open(self, request: ModelRequest) -> Any:
        """The streamed response, once the request was checked and sent."""
        request = self._check(request)
        try:
            return await self._client.messages.create(stream=True, **to_anthropic_params(request))
        except anthropic.APIError as exc:
            raise self._error(exc) from exc
        except httpx2.TransportError as exc:
            raise self._transport_error(exc) from exc

    def _transport_error(self, exc: httpx2.TransportError) -> ProviderError:
        # The SDK wraps transport errors raised before the stream starts, not those raised while reading it.
        if isinstance(exc, httpx2.TimeoutException):
            return http_errors.timed_out(self.name, self.base_url)
        if isinstance(exc, httpx2.ConnectError):
            return http_errors.unreachable(self.name, self.base_url, str(exc) or type(exc).__name__)
        return http_errors.dropped(self.name, str(exc) or type(exc).__name__)

    def _error(self, exc: anthropic.APIError) -> ProviderError:
        if isinstance(exc, anthropic.APITimeoutError):
            return http_errors.timed_out(self.name, self.base_url)
        if isinstance(exc, anthropic.APIConnectionError):
            cause = exc.__cause__
            if isinstance(cause, httpx2.TransportError):
                return self._transport_error(cause)
            return http_errors.unreachable(self.name, self.base_url, exc.message)
        if isinstance(exc, anthropic.APIStatusError):
            if exc.status_code == 200:  # an "error" event in a stream that had started
                return http_errors.stream_error(self.name, body=exc.body, fallback=exc.message)
            return http_errors.status_error(
                self.name,
                exc.status_code,
                body=exc.body,
                headers=dict(exc.response.headers),
                key_env=self._key_env,
                fallback=exc.message,
            )
        return http_errors.stream_error(self.name, body=exc.body, fallback=exc.message)


def to_anthropic_params(request: ModelRequest) -> dict[str, Any]:
    params: dict[str, Any] = {
        "model": request.model,
        "max_tokens": request.max_tokens,
        "messages": to_anthropic_messages(request),
    }
    if request.system:
        params["system"] = request.system
    if request.tools:
        params["tools"] = [
            {"name": t.name, "description": t.description, "input_schema": t.parameters} for t in request.tools
        ]
    # With thinking on, the API wants the open tool turn's thinking blocks back, first in that turn; a turn
    # whose blocks were not kept (recorded by another provider, say) is continued without thinking.
    budget = THINKING_BUDGET.get(request.effort)
    turn = _open_tool_turn(request.messages)
    if budget is not None and (turn is None or turn.reasoning):
        params["thinking"] = {"type": "enabled", "budget_tokens": budget}
        params["max_tokens"] = request.max_tokens + budget
        params["messages"] = to_anthropic_messages(request, replay=turn)
    return params


def _open_tool_turn(messages: Sequence[Message]) -> AssistantMessage | None:
    """The newest assistant message when it made tool calls: the tool turn this pass continues (its results,
    and perhaps steering, came after it)."""
    last = next((m for m in reversed(messages) if isinstance(m, AssistantMessage)), None)
    return last if last is not None and last.tool_calls else None


def to_anthropic_messages(request: ModelRequest, *, replay: AssistantMessage | None = None) -> list[dict[str, Any]]:
    """Messages as the API wants them: user and assistant turns alternating, each a list of blocks.

    Tool results are user-side blocks; consecutive user-side items (the results of one batch of calls,
    then perhaps a steering message) become one user turn, results first. Empty text blocks are refused
    by the API, so they are left out. ``replay``'s reasoning blocks (the open tool turn, when thinking is
    on) go first in its turn; no other turn carries them.
    """
    turns: list[dict[str, Any]] = []

    def add(role: str, blocks: list[dict[str, Any]]) -> None:
        if not blocks:
            return
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"].extend(blocks)
        else:
            turns.append({"role": role, "content": blocks})

    for message in request.messages:
        if isinstance(message, AssistantMessage):
            blocks: list[dict[str, Any]] = [_reasoning_block(r) for r in message.reasoning if message is replay]
            blocks += [{"type": "text", "text": message.text}] if message.text else []
            blocks += [
                {"type": "tool_use", "id": c.call_id, "name": c.name, "input": c.arguments} for c in message.tool_calls
            ]
            add("assistant", blocks)
        elif isinstance(message, ToolResultMessage):
            result: dict[str, Any] = {"type": "tool_result", "tool_use_id": message.call_id, "content": message.text}
            if message.is_error:
                result["is_error"] = True
            add("user", [result])
        elif message.text or message.images:
            images = [
                {
                    "type": "image",
                    "source": {
                        "type": "base64",
                        "media_type": image.media_type,
                        "data": base64.b64encode(image.data).decode("ascii"),
                    },
                }
                for image in message.images
            ]
            add("user", [*images, *([{"type": "text", "text": message.text}] if message.text else [])])
    return turns


def _reasoning_block(reasoning: Reasoning) -> dict[str, Any]:
    if reasoning.kind == "redacted_thinking":
        return {"type": "redacted_thinking", "data": reasoning.data}
    return {"type": "thinking", "thinking": reasoning.text, "signature": reasoning.signature}


def _merge_usage(usage: Usage, raw: Any) -> None:
    """``message_start`` carries the input side, ``message_delta`` the (cumulative) output and sometimes
    updated input counts; a value that is absent keeps what came before."""
    if raw is None:
        return
    for field, name in (
        ("input", "input_tokens"),
        ("output", "output_tokens"),
        ("cache_read", "cache_read_input_tokens"),
        ("cache_write", "cache_creation_input_tokens"),
    ):
        value = getattr(raw, name, None)
        if isinstance(value, int):
            setattr(usage, field, value)


class _StreamState:
    """What a streamed response said so far: usage, the stop reason, blocks still arriving in pieces."""

    def __init__(self) -> None:
        self.usage = Usage()
        self.stop: str | None = None
        self.tools: dict[int, tuple[str, str, list[str]]] = {}
        self.thinking: dict[int, tuple[list[str], list[str]]] = {}  # index → thinking pieces, signature pieces

    def read(self, event: Any) -> list[ProviderEvent]:
        """The events one server event makes."""
        if event.type == "message_start":
            _merge_usage(self.usage, event.message.usage)
        elif event.type == "content_block_start":
            return self._started(event.index, event.content_block)
        elif event.type == "content_block_delta":
            return self._delta(event.index, event.delta)
        elif event.type == "content_block_stop":
            return self._stopped(event.index)
        elif event.type == "message_delta":
            _merge_usage(self.usage, event.usage)
            if event.delta.stop_reason is not None:
                self.stop = event.delta.stop_reason
        return []

    def _started(self, index: int, block: Any) -> list[ProviderEvent]:
        if block.type == "tool_use":
            self.tools[index] = (block.id, block.name, [])
        elif block.type == "thinking":
            self.thinking[index] = ([block.thinking or ""], [block.signature or ""])
        elif block.type == "redacted_thinking":
            return [ReasoningEvent(block=Reasoning(kind="redacted_thinking", data=block.data))]
        return []

    def _delta(self, index: int, delta: Any) -> list[ProviderEvent]:
        if delta.type == "text_delta":
            return [TextDelta(text=delta.text)]
        if delta.type == "thinking_delta":
            if index in self.thinking:
                self.thinking[index][0].append(delta.thinking)
            return [ThinkingDelta(text=delta.thinking)]
        if delta.type == "signature_delta" and index in self.thinking:
            self.thinking[index][1].append(delta.signature)
        elif delta.type == "input_json_delta" and index in self.tools:
            self.tools[index][2].append(delta.partial_json)
        return []

    def _stopped(self, index: int) -> list[ProviderEvent]:
        if index in self.thinking:
            text, signature = self.thinking.pop(index)
            return [ReasoningEvent(block=Reasoning(kind="thinking", text="".join(text), signature="".join(signature)))]
        if index in self.tools:
            call_id, tool, pieces = self.tools.pop(index)
            return [ToolCallEvent(call_id=call_id, name=tool, arguments=parse_arguments("".join(pieces)))]
        return []
