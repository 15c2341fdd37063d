"""The offline model: useful by default (it says what it is, its cues call tools), scriptable for tests."""

from __future__ import annotations

import asyncio
import threading

import pytest

from anyy.domain.entries import Usage
from anyy.domain.model_io import (
    AssistantMessage,
    ProviderEvent,
    StopEvent,
    TextDelta,
    ThinkingDelta,
    ToolCallEvent,
    ToolCallPart,
    ToolResultMessage,
    ToolSpec,
    UsageEvent,
    UserMessage,
)
from anyy.providers import Gate, OfflineProvider, ProviderError
from tests.providers.support import READ_FILE, collect, request, run, text_of


def spec(name: str, *properties: str) -> ToolSpec:
    schema = {"type": "object", "properties": {p: {"type": "string"} for p in properties}, "required": list(properties)}
    return ToolSpec(name=name, description=name, parameters=schema)


SHELL = spec("shell", "command")
WRITE = spec("write_file", "path", "content")
ASK = spec("ask_user", "question")
ALL_TOOLS = (READ_FILE, SHELL, WRITE, ASK)


async def answer(provider: OfflineProvider, text: str, tools: tuple[ToolSpec, ...] = ALL_TOOLS) -> list[ProviderEvent]:
    return await run(collect(provider, request(UserMessage(text=text), tools=tools)))


# -- default behaviour ------------------------------------------------------------------------------
async def test_m5_offline_default_reply_names_the_offline_model() -> None:
    events = await answer(OfflineProvider(), "What is the weather like?")
    text = text_of(events)
    assert text.startswith("(offline model)")
    assert "What is the weather like?" in text
    assert len([e for e in events if isinstance(e, TextDelta)]) > 3  # it streams, word by word
    assert isinstance(events[-2], UsageEvent)
    assert events[-1] == StopEvent(reason="end", raw_reason="offline")


async def test_m5_offline_is_deterministic() -> None:
    first = await answer(OfflineProvider(), "hello there")
    assert await answer(OfflineProvider(), "hello there") == first


async def test_m6_offline_read_cue_calls_read_file() -> None:
    events = await answer(OfflineProvider(), "read notes.md")
    assert [e for e in events if isinstance(e, ToolCallEvent)] == [
        ToolCallEvent(call_id="offline-1-1", name="read_file", arguments={"path": "notes.md"})
    ]
    assert events[-1] == StopEvent(reason="tool_use", raw_reason="offline")


async def test_m6_offline_run_cue_calls_shell() -> None:
    events = await answer(OfflineProvider(), "run: ls -la /tmp")
    assert events[0] == ToolCallEvent(call_id="offline-1-1", name="shell", arguments={"command": "ls -la /tmp"})


async def test_m6_offline_write_cue_calls_write_file() -> None:
    events = await answer(OfflineProvider(), "write hello.txt: Hello, world")
    assert events[0] == ToolCallEvent(
        call_id="offline-1-1", name="write_file", arguments={"path": "hello.txt", "content": "Hello, world"}
    )


async def test_m6_offline_ask_me_question_calls_ask_user() -> None:
    events = await answer(OfflineProvider(), "Can you ask me which colour I prefer?")
    call = events[0]
    assert isinstance(call, ToolCallEvent)
    assert call.name == "ask_user"
    assert "which colour I prefer?" in call.arguments["question"]


async def test_m6_offline_cue_without_its_tool_says_it_is_not_enabled() -> None:
    events = await answer(OfflineProvider(), "run: rm -rf build", tools=(READ_FILE,))
    assert not any(isinstance(e, ToolCallEvent) for e in events)
    assert "shell tool" in text_of(events)
    assert "not enabled" in text_of(events)


async def test_m6_offline_names_arguments_as_the_tool_schema_does() -> None:
    events = await answer(OfflineProvider(), "read a.txt", tools=(spec("read_file", "file_path"),))
    assert events[0] == ToolCallEvent(call_id="offline-1-1", name="read_file", arguments={"file_path": "a.txt"})
    events = await answer(OfflineProvider(), "run: make", tools=(spec("shell", "argv0"),))
    assert events[0] == ToolCallEvent(call_id="offline-1-1", name="shell", arguments={"argv0": "make"})


async def test_m6_offline_summarises_tool_results() -> None:
    model_request = request(
        UserMessage(text="read notes.md"),
        AssistantMessage(tool_calls=(ToolCallPart(call_id="c", name="read_file", arguments={"path": "notes.md"}),)),
        ToolResultMessage(call_id="c", name="read_file", text="buy milk"),
        tools=ALL_TOOLS,
    )
    text = text_of(await run(collect(OfflineProvider(), model_request)))
    assert text.startswith("(offline model)")
    assert "read_file returned 8 characters: «buy milk»" in text


async def test_m6_offline_reports_a_failed_tool_and_an_answer() -> None:
    model_request = request(
        UserMessage(text="go"),
        ToolResultMessage(call_id="c", name="shell", text="exit 2", is_error=True),
        ToolResultMessage(call_id="d", name="ask_user", text="blue"),
    )
    text = text_of(await run(collect(OfflineProvider(), model_request)))
    assert "shell failed: exit 2" in text
    assert "you answered: «blue»" in text


async def test_r4_offline_summarise_cue_gives_a_non_empty_summary() -> None:
    model_request = request(
        UserMessage(text="plan the trip"), AssistantMessage(text="ok"), UserMessage(text="Summarise the conversation")
    )
    text = text_of(await run(collect(OfflineProvider(), model_request)))
    assert "Summary" in text
    assert "plan the trip" in text


async def test_m5_offline_usage_is_estimated_at_four_characters_a_token() -> None:
    provider = OfflineProvider()
    provider.enqueue("12345678")  # 8 characters out: 2 tokens
    model_request = request(UserMessage(text="x" * 40), system="y" * 40)  # 80 characters in: 20 tokens
    events = await run(collect(provider, model_request))
    assert events[-2] == UsageEvent(usage=Usage(input=20, output=2))


# -- scripting ---------------------------------------------------------------------------------------
async def test_m5_offline_enqueue_plays_responses_in_order_then_answers_by_default() -> None:
    provider = OfflineProvider()
    call = ToolCallEvent(call_id="c1", name="shell", arguments={"command": "ls"})
    provider.enqueue("first answer", [ThinkingDelta(text="hmm"), call])
    assert provider.pending == 2

    async def scenario() -> list[list[ProviderEvent]]:
        return [await collect(provider, request()) for _ in range(3)]

    first, second, third = await run(scenario())
    assert first[0] == TextDelta(text="first answer")
    assert first[-1].reason == "end"  # type: ignore[union-attr]
    assert second[:2] == [ThinkingDelta(text="hmm"), call]
    assert second[-1] == StopEvent(reason="tool_use", raw_reason="offline")
    assert text_of(third).startswith("(offline model)")
    assert provider.pending == 0


async def test_m5_offline_script_keeps_its_own_usage_and_stop() -> None:
    provider = OfflineProvider()
    usage = UsageEvent(usage=Usage(input=1000, output=10, cache_read=5))
    provider.enqueue([TextDelta(text="cut"), usage, StopEvent(reason="length", raw_reason="max_tokens")])
    events = await run(collect(provider, request()))
    assert events == [TextDelta(text="cut"), usage, StopEvent(reason="length", raw_reason="max_tokens")]


async def test_m5_offline_script_without_usage_gets_one_before_its_stop() -> None:
    provider = OfflineProvider()
    provider.enqueue([TextDelta(text="abcd"), StopEvent(reason="refusal")])
    events = await run(collect(provider, request()))
    assert isinstance(events[1], UsageEvent)
    assert events[1].usage.output == 1
    assert events[2] == StopEvent(reason="refusal")


async def test_m5_offline_records_every_request() -> None:
    provider = OfflineProvider()
    first, second = request(UserMessage(text="one")), request(UserMessage(text="two"), effort="high")

    async def scenario() -> None:
        await collect(provider, first)
        await collect(provider, second)

    await run(scenario())
    assert provider.requests == [first, second]


async def test_r3_offline_error_is_raised_at_once() -> None:
    provider = OfflineProvider()
    provider.enqueue(ProviderError("transient", "rate limited", status=429, retry_after=3.0))
    with pytest.raises(ProviderError) as caught:
        await run(collect(provider, request()))
    assert (caught.value.kind, caught.value.retry_after) == ("transient", 3.0)


async def test_r3_offline_error_after_events_is_a_dropped_stream() -> None:
    provider = OfflineProvider()
    provider.enqueue([TextDelta(text="half"), ProviderError("transient", "connection dropped")])
    seen: list[ProviderEvent] = []

    async def scenario() -> None:
        async for event in provider.stream(request()):
            seen.append(event)

    with pytest.raises(ProviderError, match="connection dropped"):
        await run(scenario())
    assert seen == [TextDelta(text="half")]


async def test_r5_offline_overflow_can_be_scripted() -> None:
    provider = OfflineProvider()
    provider.enqueue(ProviderError("overflow", "too long"), "after compaction")

    async def scenario() -> str:
        with pytest.raises(ProviderError) as caught:
            await collect(provider, request())
        assert caught.value.kind == "overflow"
        return text_of(await collect(provider, request()))

    assert await run(scenario()) == "after compaction"


async def test_m5_offline_scripted_only_refuses_an_unscripted_call() -> None:
    provider = OfflineProvider(scripted_only=True)
    with pytest.raises(ProviderError, match="no scripted response left for call 1") as caught:
        await run(collect(provider, request()))
    assert caught.value.kind == "fatal"


def test_m5_offline_refuses_a_script_of_the_wrong_type() -> None:
    with pytest.raises(TypeError, match="a scripted response is text"):
        OfflineProvider().enqueue(42)  # type: ignore[arg-type]


# -- timing, controlled by gates rather than sleeps -------------------------------------------------
async def test_m5_offline_gate_holds_the_stream_until_opened() -> None:
    provider = OfflineProvider()
    gate = Gate("mid-answer")
    provider.enqueue([TextDelta(text="before "), gate, TextDelta(text="after")])

    async def scenario() -> None:
        seen: list[ProviderEvent] = []

        async def consume() -> None:
            async for event in provider.stream(request()):
                seen.append(event)

        task = asyncio.create_task(consume())
        await gate.reached.wait()
        assert seen == [TextDelta(text="before ")]
        assert not task.done()
        gate.open()
        await task
        assert text_of(seen) == "before after"

    await run(scenario())


async def test_m5_offline_waits_on_an_asyncio_event_before_the_first_event() -> None:
    provider = OfflineProvider()
    go = asyncio.Event()
    provider.enqueue([go, TextDelta(text="go")])

    async def scenario() -> str:
        task = asyncio.create_task(collect(provider, request()))
        await asyncio.sleep(0)  # let the stream start and block: a yield of control, not a timed wait
        assert not task.done()
        go.set()
        return text_of(await task)

    assert await run(scenario()) == "go"


def test_m5_offline_gate_can_be_opened_from_another_thread() -> None:
    provider = OfflineProvider()
    gate = Gate()
    provider.enqueue([gate, TextDelta(text="released")])
    result: list[str] = []

    def loop_thread() -> None:
        result.append(text_of(asyncio.run(collect(provider, request()))))  # that thread's own loop

    thread = threading.Thread(target=loop_thread)
    thread.start()
    assert gate.reached.wait_blocking(10)
    gate.open()
    thread.join(10)
    assert result == ["released"]


async def test_m5_offline_stream_can_be_cancelled_at_a_gate() -> None:
    provider = OfflineProvider()
    gate = Gate()
    provider.enqueue([TextDelta(text="a"), gate, TextDelta(text="never")])

    async def scenario() -> None:
        task = asyncio.create_task(collect(provider, request()))
        await gate.reached.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    await run(scenario())


async def test_m5_offline_stream_delay_paces_events() -> None:
    provider = OfflineProvider(stream_delay=0.001)
    events = await answer(provider, "hi")
    assert text_of(events).startswith("(offline model)")


async def test_m6_offline_cues_need_a_one_word_file_name() -> None:
    for text in ("read the docs please", "write a short poem: about cats"):
        events = await answer(OfflineProvider(), text)
        assert not any(isinstance(e, ToolCallEvent) for e in events), text
        assert text_of(events).startswith("(offline model) You said")
