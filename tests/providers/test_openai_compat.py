"""What is particular to the OpenAI-compatible adapter: its request body and its finish reasons."""

from __future__ import annotations

import pytest

from anyy.domain.model_io import (
    AssistantMessage,
    ModelRequest,
    StopEvent,
    ToolCallPart,
    ToolResultMessage,
    UserMessage,
)
from anyy.providers.openai_compat import OpenAICompatProvider, to_openai_messages
from tests.fakes.model_server import FakeModelServer, Reply, ToolCall
from tests.providers.support import READ_FILE, request, run, stream_all


async def test_m5_openai_request_streams_with_usage_and_system_first(fake: FakeModelServer) -> None:
    fake.enqueue(Reply(text=["ok"]))
    await stream_all("openai", fake, request(UserMessage(text="hi"), max_tokens=321, tools=(READ_FILE,)))
    body = fake.received[0].body
    assert fake.received[0].path == "/v1/chat/completions"
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert body["model"] == "fake-model"
    assert body["messages"][:2] == [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "hi"}]
    assert body["max_tokens"] == 321  # a local server knows max_tokens
    assert body["tools"] == [
        {
            "type": "function",
            "function": {"name": "read_file", "description": "Read a text file", "parameters": READ_FILE.parameters},
        }
    ]
    assert "reasoning_effort" not in body


async def test_m1_openai_effort_becomes_reasoning_effort(fake: FakeModelServer) -> None:
    fake.enqueue(Reply(text=["ok"]))
    await stream_all("openai", fake, request(effort="high"))
    assert fake.received[0].body["reasoning_effort"] == "high"


async def test_m5_openai_own_api_gets_max_completion_tokens() -> None:
    async def scenario() -> str:
        provider = OpenAICompatProvider("openai", base_url="https://api.openai.com/v1", api_key="sk-test")
        try:
            return provider._token_field
        finally:
            await provider.aclose()

    assert await run(scenario()) == "max_completion_tokens"


@pytest.mark.parametrize(
    ("finish", "reason"),
    [("stop", "end"), ("length", "length"), ("content_filter", "refusal"), ("tool_calls", "tool_use"), ("odd", "end")],
)
async def test_m5_openai_finish_reasons_map(fake: FakeModelServer, finish: str, reason: str) -> None:
    fake.enqueue(Reply(text=["x"], finish=finish))
    events = await stream_all("openai", fake, request())
    assert events[-1] == StopEvent(reason=reason, raw_reason=finish)  # type: ignore[arg-type]


async def test_m5_openai_tool_calls_with_stop_finish_still_ask_for_tools(fake: FakeModelServer) -> None:
    # Some local servers finish a tool-calling answer with "stop".
    fake.enqueue(Reply(tool_calls=[ToolCall("read_file", {"path": "a"})], finish="stop"))
    events = await stream_all("openai", fake, request(tools=(READ_FILE,)))
    assert events[-1] == StopEvent(reason="tool_use", raw_reason="stop")


async def test_m5_openai_reasoning_content_is_thinking(fake: FakeModelServer) -> None:
    fake.enqueue(Reply(thinking=["hmm"], text=["done"]))
    events = await stream_all("openai", fake, request())
    assert [type(e).__name__ for e in events] == ["ThinkingDelta", "TextDelta", "UsageEvent", "StopEvent"]


def test_m5_openai_messages_convert() -> None:
    converted = to_openai_messages(
        ModelRequest(
            model="m",
            system="",
            messages=(
                UserMessage(text="go"),
                AssistantMessage(tool_calls=(ToolCallPart(call_id="a", name="shell", arguments={"command": "ls"}),)),
                ToolResultMessage(call_id="a", name="shell", text="no such dir", is_error=True),
                AssistantMessage(text=""),
            ),
        )
    )
    assert converted == [
        {"role": "user", "content": "go"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "a", "type": "function", "function": {"name": "shell", "arguments": '{"command": "ls"}'}}
            ],
        },
        {"role": "tool", "tool_call_id": "a", "content": "Error: no such dir"},
        {"role": "assistant", "content": ""},
    ]
