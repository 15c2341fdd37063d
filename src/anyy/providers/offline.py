"""The offline model: deterministic, no network, no key. The default model of a new profile (SPEC M5).

Out of the box it answers by the rules in :mod:`anyy.providers.offline_replies` (it says it is the
offline model, and a few cues such as ``read FILE`` or ``run: COMMAND`` make it call tools). Tests
script it instead, like llm's ``MockModel``::

    model = OfflineProvider()
    model.enqueue(
        "a whole answer as text",
        [ToolCallEvent(call_id="c1", name="shell", arguments={"command": "ls"})],
        [TextDelta(text="half an ans"), ProviderError("transient", "dropped")],   # a cut-off stream
        ProviderError("overflow", "too long"),                                    # fails at once
        [gate, TextDelta(text="late")],                                           # waits for gate.open()
    )

Each ``stream()`` call takes the next scripted response, else answers by the rules. A response is a
string (one text answer), a ProviderError (raised at once), or a sequence of steps: events (yielded),
a ProviderError (raised there, ending the response as a dropped stream would), a :class:`Gate` or an
``asyncio.Event`` (the stream waits there until it is opened or set).

A request for a session's title (U1: its system prompt is ``TITLE_INSTRUCTIONS``) is answered apart:
by :func:`anyy.domain.titles.offline_title`, or by what ``enqueue_title`` scripted, never taking a
response meant for a turn and never counted in ``requests`` (kept in ``title_requests``).

Every response that completes ends with a ``StopEvent`` and carries a ``UsageEvent`` (scripted, else
estimated at four characters per token): a script may leave both out. ``requests`` records every
request received, so tests assert what the model saw.
"""

from __future__ import annotations

import asyncio
import collections
import json
from collections.abc import AsyncIterator, Sequence

from anyy.domain.entries import Usage
from anyy.domain.model_io import (
    AssistantMessage,
    ModelRequest,
    ProviderEvent,
    StopEvent,
    TextDelta,
    ThinkingDelta,
    ToolCallEvent,
    UsageEvent,
    UserMessage,
    image_count,
    last_user_images,
    refuse_images,
    without_images,
)
from anyy.domain.titles import TITLE_INSTRUCTIONS, offline_title
from anyy.providers.base import ProviderError
from anyy.providers.gates import Gate
from anyy.providers.offline_replies import reply

Step = ProviderEvent | ProviderError | Gate | asyncio.Event
Script = str | ProviderError | Sequence[Step]

OFFLINE_MODEL = "offline"
# Requests a provider keeps for tests to read. Every request holds its whole context: kept without bound,
# they were most of what 100 busy sessions left behind in a Gateway on the offline model (D13).
KEPT_REQUESTS = 256


class OfflineProvider:
    """A deterministic provider; see the module docstring for scripting.

    ``stream_delay`` (seconds) paces the events of every response, to show streaming in a demo or to
    measure a client's rendering; it is never needed to order things in a test (use a Gate).
    ``scripted_only`` makes a call with nothing enqueued fail (fatal), for tests that must account for
    every model call.
    """

    def __init__(self, name: str = "offline", *, stream_delay: float = 0.0, scripted_only: bool = False) -> None:
        self.name = name
        self.stream_delay = stream_delay
        self.scripted_only = scripted_only
        self.requests: list[ModelRequest] = []  # the last KEPT_REQUESTS calls, oldest first (tests read them)
        self._script: collections.deque[Script] = collections.deque()
        self._calls = 0
        self.title_requests: list[ModelRequest] = []
        self._titles: collections.deque[Script] = collections.deque()

    def enqueue(self, *responses: Script) -> None:
        """Script the next responses, one per ``stream()`` call, in order."""
        for response in responses:
            if not isinstance(response, str | ProviderError | Sequence):
                raise TypeError(f"a scripted response is text, a ProviderError or a list of steps, not {response!r}")
            self._script.append(response)

    def enqueue_title(self, *responses: Script) -> None:
        """Script the answers to the next title requests (else the rule answers them)."""
        self._titles.extend(responses)

    @property
    def pending(self) -> int:
        """Scripted responses not yet used."""
        return len(self._script)

    def stream(self, request: ModelRequest) -> AsyncIterator[ProviderEvent]:
        if image_count(request):  # a text-only model: said before anything is played (N5)
            if last_user_images(request):
                return self._refuse(request)
            request = without_images(request, self.name)  # earlier images never fail a later turn (U5)
        if request.system == TITLE_INSTRUCTIONS:
            self.title_requests.append(request)
            script = self._titles.popleft() if self._titles else None
            if script is None:
                text = request.messages[0].text if request.messages else ""
                script = offline_title(text)
            return self._play(request, self._steps(request, script))
        # Taken now, not when iteration starts: calls made in a row get their responses in that order.
        self.requests.append(request)
        if len(self.requests) > KEPT_REQUESTS:  # a Gateway's offline model runs for days (D13)
            del self.requests[: len(self.requests) - KEPT_REQUESTS]
        self._calls += 1
        script = self._script.popleft() if self._script else None
        if script is None and self.scripted_only:
            script = ProviderError(
                "fatal", f"offline provider {self.name!r}: no scripted response left for call {self._calls}"
            )
        steps = self._steps(request, script)
        return self._play(request, steps)

    async def _refuse(self, request: ModelRequest) -> AsyncIterator[ProviderEvent]:
        raise ProviderError("fatal", refuse_images(self.name, request.model))
        yield  # pragma: no cover - makes this an async generator

    async def aclose(self) -> None:
        return None

    def _steps(self, request: ModelRequest, script: Script | None) -> list[Step]:
        if script is None:
            return list(reply(request, call_prefix=f"offline-{self._calls}-"))
        if isinstance(script, str):
            return [TextDelta(text=script)]
        if isinstance(script, ProviderError):
            return [script]
        return list(script)

    async def _play(self, request: ModelRequest, steps: list[Step]) -> AsyncIterator[ProviderEvent]:
        output_chars = 0
        usage_sent = False
        called_tools = False
        for step in steps:
            if isinstance(step, ProviderError):
                raise step
            if isinstance(step, Gate):
                await step.pass_through()
                continue
            if isinstance(step, asyncio.Event):
                await step.wait()
                continue
            if isinstance(step, StopEvent):
                if not usage_sent:
                    yield UsageEvent(usage=_estimate(request, output_chars))
                await self._pace()
                yield step
                return
            if isinstance(step, TextDelta | ThinkingDelta):
                output_chars += len(step.text)
            elif isinstance(step, ToolCallEvent):
                called_tools = True
                output_chars += len(step.name) + len(json.dumps(step.arguments))
            elif isinstance(step, UsageEvent):
                usage_sent = True
            await self._pace()
            yield step
        if not usage_sent:
            yield UsageEvent(usage=_estimate(request, output_chars))
        yield StopEvent(reason="tool_use" if called_tools else "end", raw_reason="offline")

    async def _pace(self) -> None:
        if self.stream_delay > 0:
            await asyncio.sleep(self.stream_delay)


def _estimate(request: ModelRequest, output_chars: int) -> Usage:
    """Tokens as anyy estimates them everywhere: four characters per token, rounded up."""
    chars = len(request.system)
    for message in request.messages:
        chars += len(message.text)
        if isinstance(message, AssistantMessage):
            chars += sum(len(c.name) + len(json.dumps(c.arguments)) for c in message.tool_calls)
        elif not isinstance(message, UserMessage):
            chars += len(message.name)
    for tool in request.tools:
        chars += len(tool.name) + len(tool.description) + len(json.dumps(tool.parameters))
    return Usage(input=-(-chars // 4), output=-(-output_chars // 4))
