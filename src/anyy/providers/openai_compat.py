"""Any OpenAI-compatible server (OpenAI, Ollama, vLLM, llama.cpp, OpenRouter, …) through the ``openai`` SDK.

One call is one streamed Chat Completions request (``stream=True`` with ``include_usage``). Text deltas
are passed on as they arrive; tool-call fragments are gathered by index and given as whole
``ToolCallEvent`` values, with their JSON arguments parsed, once the model has finished them.

Retries: the runtime retries transient errors itself (SPEC R3: at most 3, waiting 2, 4, 8 s…), so the
SDK client is made with ``max_retries=0`` and retries nothing; otherwise a rate limit would be retried
by both layers. HTTP timeouts (connect, read between two chunks, write, pool) stay on: a server that
stops answering becomes a transient error rather than a stream that hangs forever.

Importing this module imports the SDK: the registry imports it only when a provider of this kind is
first used. A provider belongs to the event loop it is first used on (its connection pool does).
"""

from __future__ import annotations

import base64
import json
import urllib.parse
from collections.abc import AsyncIterator, Mapping
from typing import Any, Literal

import anyio
import httpx2
import openai

from anyy.domain.entries import Usage
from anyy.domain.model_io import (
    AssistantMessage,
    ModelRequest,
    ProviderEvent,
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
from anyy.providers.base_urls import openai_base_url
from anyy.providers.sdk_common import NO_KEY, SdkProvider
from anyy.providers.tool_arguments import parse_arguments

# Servers that run without keys (Ollama, llama.cpp, vLLM) still get a bearer header: the SDK needs one.
_FINISH: dict[str, StopReason] = {
    "stop": "end",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "length": "length",
    "content_filter": "refusal",
}
TokenField = Literal["max_tokens", "max_completion_tokens"]


class OpenAICompatProvider(SdkProvider):
    """``stream()`` one Chat Completions call; see the module docstring.

    ``api_key``: the key itself ("" for servers that need none); ``key_env`` names where it came from,
    for messages only. ``token_field``: OpenAI's own API wants ``max_completion_tokens`` (reasoning
    models refuse ``max_tokens``); most other servers know only ``max_tokens``. By default the field
    follows the host.
    """

    def __init__(
        self,
        name: str,
        *,
        base_url: str,
        api_key: str = "",
        key_env: str = "",
        key_required: bool = False,
        images: bool = True,
        connect_timeout: float = 10.0,
        read_timeout: float = 300.0,
        token_field: TokenField | None = None,
    ) -> None:
        self._configure(
            name, openai_base_url(base_url), api_key=api_key, key_env=key_env, key_required=key_required, images=images
        )  # with or without /v1
        host = urllib.parse.urlsplit(self.base_url).hostname or ""
        self._token_field: TokenField = token_field or (
            "max_completion_tokens" if host == "api.openai.com" else "max_tokens"
        )
        self._client = openai.AsyncOpenAI(
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
            async for chunk in stream:
                for event in state.read(chunk):
                    yield event
        except openai.APIError as exc:
            raise self._error(exc) from exc
        except httpx2.TransportError as exc:
            raise self._transport_error(exc) from exc
        finally:
            # Cancelled or not, the request is closed now; shielded so that a cancellation arriving
            # during the close cannot leave the connection open.
            with anyio.CancelScope(shield=True):
                await stream.close()
        for event in state.ending(self.name):
            yield event

    async def _open(self, request: ModelRequest) -> Any:
        """The streamed response, once the request was checked and sent."""
        request = self._check(request)
        params = self._params(request)
        try:
            return await self._client.chat.completions.create(stream=True, **params)
        except openai.APIError as exc:
            raise self._error(exc) from exc
        except httpx2.TransportError as exc:  # the SDK wraps these; a transport it does not know may not
            raise self._transport_error(exc) from exc

    def _transport_error(self, exc: httpx2.TransportError) -> ProviderError:
        """An HTTP error the SDK let through unwrapped (older SDKs do, mid-stream): a timeout is still one."""
        if isinstance(exc, httpx2.TimeoutException):
            return http_errors.timed_out(self.name, self.base_url)
        return http_errors.dropped(self.name, type(exc).__name__)

    def _params(self, request: ModelRequest) -> dict[str, Any]:
        params: dict[str, Any] = {
            "model": request.model,
            "messages": to_openai_messages(request),
            "stream_options": {"include_usage": True},
            self._token_field: request.max_tokens,
        }
        if request.tools:
            params["tools"] = [
                {
                    "type": "function",
                    "function": {"name": t.name, "description": t.description, "parameters": t.parameters},
                }
                for t in request.tools
            ]
        if request.effort:
            params["reasoning_effort"] = request.effort
        return params

    def _error(self, exc: openai.APIError) -> ProviderError:
        if isinstance(exc, openai.APITimeoutError):
            return http_errors.timed_out(self.name, self.base_url)
        if isinstance(exc, openai.APIConnectionError):
            cause = exc.__cause__
            detail = str(cause) if cause is not None and str(cause) else exc.message
            if isinstance(cause, httpx2.RemoteProtocolError | httpx2.ReadError):
                return http_errors.dropped(self.name, detail)
            return http_errors.unreachable(self.name, self.base_url, detail)
        if isinstance(exc, openai.APIStatusError):
            body = _error_body(exc)
            return http_errors.status_error(
                self.name,
                exc.status_code,
                body=body,
                headers=dict(exc.response.headers),
                key_env=self._key_env,
                fallback=exc.message,
            )
        return http_errors.stream_error(self.name, body={"error": exc.body} if exc.body else {}, fallback=exc.message)


class _PartialCall:
    """A tool call arriving in fragments: the id and name come first, the JSON arguments in pieces."""

    def __init__(self) -> None:
        self.call_id = ""
        self.name = ""
        self.arguments: list[str] = []

    def add(self, call_id: str | None, name: str | None, arguments: str | None) -> None:
        if call_id:
            self.call_id = call_id
        # Most servers send the name once; some repeat it whole in every fragment, a few split it.
        if name and name != self.name:
            self.name = name if not self.name or name.startswith(self.name) else self.name + name
        if arguments:
            self.arguments.append(arguments)

    def event(self, index: int) -> ToolCallEvent:
        return ToolCallEvent(
            call_id=self.call_id or f"call_{index}", name=self.name, arguments=parse_arguments("".join(self.arguments))
        )


def to_openai_messages(request: ModelRequest) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    if request.system:
        messages.append({"role": "system", "content": request.system})
    for message in request.messages:
        if isinstance(message, AssistantMessage):
            item: dict[str, Any] = {"role": "assistant", "content": message.text or None}
            if message.tool_calls:
                item["tool_calls"] = [
                    {
                        "id": call.call_id,
                        "type": "function",
                        "function": {"name": call.name, "arguments": json.dumps(call.arguments)},
                    }
                    for call in message.tool_calls
                ]
            elif not message.text:
                item["content"] = ""
            messages.append(item)
        elif isinstance(message, ToolResultMessage):
            text = f"Error: {message.text}" if message.is_error else message.text
            messages.append({"role": "tool", "tool_call_id": message.call_id, "content": text})
        elif message.images:
            parts: list[dict[str, Any]] = [{"type": "text", "text": message.text}] if message.text else []
            parts += [
                {"type": "image_url", "image_url": {"url": f"data:{image.media_type};base64,{_base64(image.data)}"}}
                for image in message.images
            ]
            messages.append({"role": "user", "content": parts})
        else:
            messages.append({"role": "user", "content": message.text})
    return messages


def _base64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _usage(raw: Any) -> Usage:
    details = getattr(raw, "prompt_tokens_details", None)
    cached = getattr(details, "cached_tokens", None) or 0
    prompt = raw.prompt_tokens or 0
    out = getattr(raw, "completion_tokens_details", None)
    reasoning = getattr(out, "reasoning_tokens", None) or 0
    # prompt_tokens counts the cached part too; Usage keeps them apart (its context_tokens adds them up).
    # completion_tokens counts the reasoning tokens too (billed as output): Usage keeps that count as well.
    return Usage(
        input=max(0, prompt - cached), output=raw.completion_tokens or 0, cache_read=cached, reasoning=reasoning
    )


def _error_body(exc: openai.APIStatusError) -> Mapping[str, Any] | str:
    # The SDK keeps the inner "error" object as the body; some servers send {"error": "text"} or plain text.
    body = exc.body
    if isinstance(body, Mapping):
        return {"error": body} if "message" in body or "code" in body else body
    return body if isinstance(body, str) else {}


class _StreamState:
    """What a streamed response said so far: tool calls in pieces, the finish reason, the usage."""

    def __init__(self) -> None:
        self.calls: dict[int, _PartialCall] = {}
        self.finish: str | None = None
        self.had_calls = False
        self.usage: Usage | None = None

    def read(self, chunk: Any) -> list[ProviderEvent]:
        """The events one chunk makes (only choice 0 is asked for: n=1)."""
        if chunk.usage is not None:
            self.usage = _usage(chunk.usage)
        events: list[ProviderEvent] = []
        for choice in chunk.choices[:1]:
            delta = choice.delta
            thinking = getattr(delta, "reasoning_content", None) or getattr(delta, "reasoning", None)
            if isinstance(thinking, str) and thinking:
                events.append(ThinkingDelta(text=thinking))
            if delta.content:
                events.append(TextDelta(text=delta.content))
            if delta.refusal:  # the model's own words for declining: the user should read them
                events.append(TextDelta(text=delta.refusal))
            for part in delta.tool_calls or ():
                function = part.function
                call = self.calls.setdefault(part.index, _PartialCall())
                call.add(part.id, function.name if function else None, function.arguments if function else None)
            if choice.finish_reason is not None:
                self.finish = choice.finish_reason
                self.had_calls = self.had_calls or bool(self.calls)
                events += [self.calls[index].event(index) for index in sorted(self.calls)]
                self.calls.clear()
        return events

    def ending(self, name: str) -> list[ProviderEvent]:
        if self.finish is None:
            raise http_errors.dropped(name, "the stream ended without a finish reason")
        reason = _FINISH.get(self.finish, "end")
        if reason == "end" and self.had_calls:
            reason = "tool_use"  # some servers say "stop" after tool calls; the runtime must run them
        stop = StopEvent(reason=reason, raw_reason=self.finish)
        return [UsageEvent(usage=self.usage), stop] if self.usage is not None else [stop]
