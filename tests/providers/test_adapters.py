"""Both real adapters, through their official SDKs, against the fake server over HTTP on 127.0.0.1.

Every test runs once per API: what the runtime sees must not depend on the provider (SPEC M5, R3, R5).
"""

from __future__ import annotations

import asyncio
import socket

import pytest

from anyy.domain.entries import Usage
from anyy.domain.model_io import (
    AssistantMessage,
    StopEvent,
    TextDelta,
    ThinkingDelta,
    ToolCallEvent,
    ToolCallPart,
    ToolResultMessage,
    UsageEvent,
    UserMessage,
)
from anyy.providers.base import ProviderError
from tests.fakes.model_server import ErrorReply, FakeModelServer, Reply, ToolCall
from tests.providers.support import (
    APIS,
    READ_FILE,
    calls_of,
    make_provider,
    request,
    run,
    stream_all,
    stream_failure,
    text_of,
)

pytestmark = pytest.mark.parametrize("api", APIS)


async def test_m5_streams_text_and_usage(api: str, fake: FakeModelServer) -> None:
    fake.enqueue(Reply(text=["Hel", "lo ", "there"], input_tokens=20, output_tokens=5, cache_read=4, cache_write=2))
    events = await stream_all(api, fake, request())
    assert [e for e in events if isinstance(e, TextDelta)] == [
        TextDelta(text="Hel"),
        TextDelta(text="lo "),
        TextDelta(text="there"),
    ]
    usage = next(e.usage for e in events if isinstance(e, UsageEvent))
    if api == "openai":  # prompt_tokens includes the cached part; no cache writes are reported
        assert usage == Usage(input=20, output=5, cache_read=4)
    else:
        assert usage == Usage(input=20, output=5, cache_read=4, cache_write=2)
    assert events[-1] == StopEvent(reason="end", raw_reason="stop" if api == "openai" else "end_turn")
    assert len(fake.received) == 1


async def test_m5_thinking_streams_as_thinking_deltas(api: str, fake: FakeModelServer) -> None:
    fake.enqueue(Reply(thinking=["let me ", "see"], text=["42"]))
    events = await stream_all(api, fake, request())
    assert [e.text for e in events if isinstance(e, ThinkingDelta)] == ["let me ", "see"]
    assert text_of(events) == "42"


async def test_m5_tool_call_turn_and_the_result_goes_back(api: str, fake: FakeModelServer) -> None:
    fake.enqueue(
        Reply(text=["Reading."], tool_calls=[ToolCall("read_file", {"path": "notes.md", "lines": [1, 2]}, "c-1")]),
        Reply(text=["It says hi."]),
    )
    first = await stream_all(api, fake, request(UserMessage(text="read notes.md"), tools=(READ_FILE,)))
    assert calls_of(first) == [
        ToolCallEvent(call_id="c-1", name="read_file", arguments={"path": "notes.md", "lines": [1, 2]})
    ]
    assert first[-1].reason == "tool_use"  # type: ignore[union-attr]

    follow_up = request(
        UserMessage(text="read notes.md"),
        AssistantMessage(
            text="Reading.", tool_calls=(ToolCallPart(call_id="c-1", name="read_file", arguments={"path": "notes.md"}),)
        ),
        ToolResultMessage(call_id="c-1", name="read_file", text="hi"),
        tools=(READ_FILE,),
    )
    second = await stream_all(api, fake, follow_up)
    assert text_of(second) == "It says hi."
    body = fake.received[1].body
    if api == "openai":
        assert body["messages"][2] == {
            "role": "assistant",
            "content": "Reading.",
            "tool_calls": [
                {
                    "id": "c-1",
                    "type": "function",
                    "function": {"name": "read_file", "arguments": '{"path": "notes.md"}'},
                }
            ],
        }
        assert body["messages"][3] == {"role": "tool", "tool_call_id": "c-1", "content": "hi"}
        assert body["tools"][0]["function"]["name"] == "read_file"
    else:
        assert body["messages"][1] == {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Reading."},
                {"type": "tool_use", "id": "c-1", "name": "read_file", "input": {"path": "notes.md"}},
            ],
        }
        assert body["messages"][2] == {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "c-1", "content": "hi"}],
        }
        assert body["tools"][0]["input_schema"] == READ_FILE.parameters


async def test_m5_several_tool_calls_come_whole_and_in_order(api: str, fake: FakeModelServer) -> None:
    calls = [ToolCall("read_file", {"path": f"f{i}.txt"}, f"c{i}") for i in range(3)]
    fake.enqueue(Reply(tool_calls=calls))
    events = await stream_all(api, fake, request(tools=(READ_FILE,)))
    assert [(c.call_id, c.arguments["path"]) for c in calls_of(events)] == [
        ("c0", "f0.txt"),
        ("c1", "f1.txt"),
        ("c2", "f2.txt"),
    ]


async def test_r3_429_is_transient_with_retry_after(api: str, fake: FakeModelServer) -> None:
    fake.enqueue(ErrorReply(429, "Rate limit reached", type="rate_limit_error", headers={"retry-after": "7"}))
    error, _ = await stream_failure(api, fake, request())
    assert (error.kind, error.status, error.retry_after) == ("transient", 429, 7.0)
    assert "Rate limit reached" in error.message
    assert len(fake.received) == 1  # the SDK did not retry on its own: the runtime owns retries


@pytest.mark.parametrize("status", [500, 503, 529])
async def test_r3_server_errors_and_overload_are_transient(api: str, fake: FakeModelServer, status: int) -> None:
    fake.enqueue(ErrorReply(status, "Overloaded" if status == 529 else "internal error", type="overloaded_error"))
    error, _ = await stream_failure(api, fake, request())
    assert (error.kind, error.status) == ("transient", status)
    assert len(fake.received) == 1


async def test_r3_dropped_connection_is_transient(api: str, fake: FakeModelServer) -> None:
    fake.enqueue(Reply(text=["par", "tial", " answer"], cut_at=3))
    error, seen = await stream_failure(api, fake, request())
    assert error.kind == "transient"
    assert "cut off" in error.message
    assert not any(isinstance(e, StopEvent) for e in seen)


async def test_r3_stream_that_ends_without_finishing_is_transient(api: str, fake: FakeModelServer) -> None:
    fake.enqueue(Reply(text=["par", "tial"], end_at=3))
    error, seen = await stream_failure(api, fake, request())
    assert error.kind == "transient"
    assert "partial".startswith(text_of(seen))
    assert not any(isinstance(e, StopEvent) for e in seen)
    assert "before" in error.message


async def test_r3_error_event_inside_the_stream_is_transient(api: str, fake: FakeModelServer) -> None:
    fake.enqueue(Reply(text=["a", "b"], error_at=2, error_type="overloaded_error", error_message="Overloaded"))
    error, _ = await stream_failure(api, fake, request())
    assert error.kind == "transient"
    assert "Overloaded" in error.message


async def test_r3_unreachable_server_is_transient(api: str, fake: FakeModelServer) -> None:
    with socket.socket() as taken:  # bound, not listening: connections to it are refused
        taken.bind(("127.0.0.1", 0))
        port = taken.getsockname()[1]
        url = f"http://127.0.0.1:{port}" + ("/v1" if api == "openai" else "")
        error, _ = await stream_failure(api, fake, request(), **({"base_url": url}))
    assert error.kind == "transient"
    assert f"127.0.0.1:{port}" in error.message


async def test_r3_http_read_timeout_stays_on_and_is_transient(api: str, fake: FakeModelServer) -> None:
    reply = Reply(text=["slow"], hold_at=2)
    fake.enqueue(reply)
    error, _ = await stream_failure(api, fake, request(), read_timeout=0.3)
    assert error.kind == "transient"
    assert "in time" in error.message


async def test_r5_overflow_is_classified(api: str, fake: FakeModelServer) -> None:
    if api == "openai":
        fake.enqueue(
            ErrorReply(
                400,
                "This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens.",
                code="context_length_exceeded",
            )
        )
    else:
        fake.enqueue(ErrorReply(400, "prompt is too long: 210000 tokens > 200000 maximum"))
    error, _ = await stream_failure(api, fake, request())
    assert (error.kind, error.status) == ("overflow", 400)
    assert "too long" in error.message


async def test_m5_bad_key_is_fatal_and_says_what_to_do(api: str, fake: FakeModelServer) -> None:
    fake.enqueue(ErrorReply(401, "invalid x-api-key", type="authentication_error"))
    error, _ = await stream_failure(api, fake, request(), api_key="sk-wrong", key_env="MY_KEY")
    assert (error.kind, error.status) == ("fatal", 401)
    assert "invalid x-api-key" in error.message
    assert "check the API key in $MY_KEY" in error.message
    assert len(fake.received) == 1  # no SDK retry, not even an authentication one


async def test_m5_unknown_model_is_fatal(api: str, fake: FakeModelServer) -> None:
    fake.enqueue(ErrorReply(404, "model 'nope' not found", type="not_found_error"))
    error, _ = await stream_failure(api, fake, request(model="nope"))
    assert error.kind == "fatal"
    assert "check the model name" in error.message


async def test_m5_missing_key_is_fatal_before_any_request(api: str, fake: FakeModelServer) -> None:
    error, _ = await stream_failure(api, fake, request(), key_env="SOME_KEY", key_required=True)
    assert error.kind == "fatal"
    assert "$SOME_KEY is not set" in error.message
    assert fake.received == []


async def test_m5_local_server_needs_no_key(api: str, fake: FakeModelServer) -> None:
    fake.enqueue(Reply(text=["ok"]))
    assert text_of(await stream_all(api, fake, request())) == "ok"
    headers = fake.received[0].headers
    sent = headers.get("authorization", "") + headers.get("x-api-key", "")
    assert "no-key" in sent


async def test_m5_invalid_tool_arguments_reach_the_tool_as_text(api: str, fake: FakeModelServer) -> None:
    fake.enqueue(Reply(tool_calls=[ToolCall("read_file", {}, "c9", raw_arguments='{"path": "x"')]))
    events = await stream_all(api, fake, request(tools=(READ_FILE,)))
    assert calls_of(events) == [
        ToolCallEvent(call_id="c9", name="read_file", arguments={"_invalid_json": '{"path": "x"'})
    ]


async def test_s1_cancelling_mid_stream_closes_the_request(api: str, fake: FakeModelServer) -> None:
    # Held just after the first text delta: openai sends a role chunk first; anthropic message_start,
    # content_block_start and a ping.
    fake.enqueue(Reply(text=["first", "second"], hold_at=2 if api == "openai" else 4))

    async def scenario() -> bool:
        provider = make_provider(api, fake)
        first_text = asyncio.Event()

        async def consume() -> None:
            async for event in provider.stream(request()):
                if isinstance(event, TextDelta):
                    first_text.set()

        task = asyncio.create_task(consume())
        await first_text.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        try:
            await asyncio.wait_for(fake.received[0].disconnected.wait(), 5)
        finally:
            await provider.aclose()
        return True

    assert await run(scenario())


async def test_m5_overflow_inside_a_stream_is_overflow(api: str, fake: FakeModelServer) -> None:
    fake.enqueue(Reply(text=["a"], error_at=1, error_type="invalid_request_error", error_message="prompt is too long"))
    error, _ = await stream_failure(api, fake, request())
    assert error.kind == "overflow"


async def test_m5_provider_error_is_a_provider_error(api: str, fake: FakeModelServer) -> None:
    fake.enqueue(ErrorReply(400, "messages: field required"))
    error, _ = await stream_failure(api, fake, request())
    assert isinstance(error, ProviderError)
    assert (error.kind, error.status) == ("fatal", 400)
    assert "messages: field required" in error.message
