"""Helpers of the provider tests: run a stream to its end, or to its error, inside a fresh event loop."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Coroutine
from typing import Any, TypeVar

from anyy.domain.model_io import (
    Message,
    ModelRequest,
    ProviderEvent,
    TextDelta,
    ToolCallEvent,
    ToolSpec,
    UserMessage,
)
from anyy.providers.anthropic_messages import AnthropicProvider
from anyy.providers.base import Provider, ProviderError
from anyy.providers.openai_compat import OpenAICompatProvider
from tests.fakes.model_server import FakeModelServer

T = TypeVar("T")
APIS = ("openai", "anthropic")
READ_FILE = ToolSpec(
    name="read_file",
    description="Read a text file",
    parameters={"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
)


async def run(coro: Coroutine[Any, Any, T], timeout: float = 20.0) -> T:
    """Await a scenario, failing (not hanging) after ``timeout`` seconds."""
    return await asyncio.wait_for(coro, timeout)


def make_provider(api: str, fake: FakeModelServer, **options: Any) -> OpenAICompatProvider | AnthropicProvider:
    if api == "openai":
        options.setdefault("base_url", fake.openai_url)
        return OpenAICompatProvider("fake-openai", **options)
    options.setdefault("base_url", fake.anthropic_url)
    return AnthropicProvider("fake-anthropic", **options)


def request(*messages: Message, **fields: Any) -> ModelRequest:
    fields.setdefault("model", "fake-model")
    fields.setdefault("system", "You are terse.")
    return ModelRequest(messages=messages or (UserMessage(text="hello"),), **fields)


async def collect(provider: Provider, model_request: ModelRequest) -> list[ProviderEvent]:
    events: list[ProviderEvent] = []
    async with contextlib.aclosing(provider.stream(model_request)) as stream:  # type: ignore[type-var]
        async for event in stream:
            events.append(event)
    return events


async def stream_all(
    api: str, fake: FakeModelServer, model_request: ModelRequest, **options: Any
) -> list[ProviderEvent]:
    async def scenario() -> list[ProviderEvent]:
        provider = make_provider(api, fake, **options)
        try:
            return await collect(provider, model_request)
        finally:
            await provider.aclose()

    return await run(scenario())


async def stream_failure(
    api: str, fake: FakeModelServer, model_request: ModelRequest, **options: Any
) -> tuple[ProviderError, list[ProviderEvent]]:
    """The error a stream ends with, and the events it gave before."""
    seen: list[ProviderEvent] = []

    async def scenario() -> ProviderError:
        provider = make_provider(api, fake, **options)
        try:
            async for event in provider.stream(model_request):
                seen.append(event)
        except ProviderError as exc:
            return exc
        finally:
            await provider.aclose()
        raise AssertionError(f"the stream ended without an error: {seen}")

    return await run(scenario()), seen


def text_of(events: list[ProviderEvent]) -> str:
    return "".join(e.text for e in events if isinstance(e, TextDelta))


def calls_of(events: list[ProviderEvent]) -> list[ToolCallEvent]:
    return [e for e in events if isinstance(e, ToolCallEvent)]
