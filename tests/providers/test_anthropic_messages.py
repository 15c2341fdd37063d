"""What is particular to the Anthropic adapter: system, turns of blocks, thinking budget, stop reasons."""

from __future__ import annotations

import pytest

from anyy.domain.entries import Reasoning
from anyy.domain.model_io import (
    AssistantMessage,
    ModelRequest,
    StopEvent,
    ToolCallPart,
    ToolResultMessage,
    UserMessage,
)
from anyy.providers.anthropic_messages import THINKING_BUDGET, to_anthropic_messages, to_anthropic_params
from tests.fakes.model_server import FakeModelServer, Reply
from tests.providers.support import READ_FILE, request, stream_all


async def test_m5_anthropic_system_prompt_goes_in_system(fake: FakeModelServer) -> None:
    fake.enqueue(Reply(text=["ok"]))
    await stream_all("anthropic", fake, request(UserMessage(text="hi"), max_tokens=500, tools=(READ_FILE,)))
    received = fake.received[0]
    assert received.path == "/v1/messages"
    assert received.body["system"] == "You are terse."
    assert received.body["messages"] == [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]
    assert received.body["max_tokens"] == 500
    assert received.body["stream"] is True
    assert "thinking" not in received.body


@pytest.mark.parametrize("effort", ["low", "medium", "high"])
async def test_m1_anthropic_effort_becomes_a_thinking_budget(fake: FakeModelServer, effort: str) -> None:
    fake.enqueue(Reply(text=["ok"]))
    await stream_all("anthropic", fake, request(effort=effort, max_tokens=1000))
    body = fake.received[0].body
    assert body["thinking"] == {"type": "enabled", "budget_tokens": THINKING_BUDGET[effort]}
    assert body["max_tokens"] == 1000 + THINKING_BUDGET[effort]  # thinking counts against max_tokens


def test_m1_anthropic_no_thinking_on_a_tool_turn_whose_reasoning_was_not_kept() -> None:
    # The API wants a tool-use turn's thinking blocks back when thinking is on; without them (a turn
    # recorded by another provider), this pass asks for no thinking rather than be refused.
    params = to_anthropic_params(
        ModelRequest(
            model="m",
            system="",
            effort="high",
            messages=(
                UserMessage(text="read a"),
                AssistantMessage(tool_calls=(ToolCallPart(call_id="t", name="read_file", arguments={"path": "a"}),)),
                ToolResultMessage(call_id="t", name="read_file", text="A"),
            ),
        )
    )
    assert "thinking" not in params
    assert "system" not in params


def test_m1_anthropic_kept_reasoning_goes_back_first_in_its_tool_turn() -> None:
    thought = Reasoning(kind="thinking", text="look at a", signature="sig-1")
    redacted = Reasoning(kind="redacted_thinking", data="opaque")
    call = ToolCallPart(call_id="t", name="read_file", arguments={"path": "a"})
    model_request = ModelRequest(
        model="m",
        system="",
        effort="low",
        messages=(
            UserMessage(text="read a"),
            AssistantMessage(text="Reading.", tool_calls=(call,), reasoning=(thought, redacted)),
            ToolResultMessage(call_id="t", name="read_file", text="A"),
        ),
    )
    params = to_anthropic_params(model_request)
    assert params["thinking"] == {"type": "enabled", "budget_tokens": THINKING_BUDGET["low"]}
    assert params["messages"][1]["content"] == [
        {"type": "thinking", "thinking": "look at a", "signature": "sig-1"},
        {"type": "redacted_thinking", "data": "opaque"},
        {"type": "text", "text": "Reading."},
        {"type": "tool_use", "id": "t", "name": "read_file", "input": {"path": "a"}},
    ]


def test_m1_anthropic_only_the_open_tool_turn_carries_reasoning_and_steering_does_not_reopen_thinking() -> None:
    old = AssistantMessage(
        tool_calls=(ToolCallPart(call_id="o", name="read_file", arguments={"path": "o"}),),
        reasoning=(Reasoning(kind="thinking", text="old", signature="s-old"),),
    )
    bare = AssistantMessage(tool_calls=(ToolCallPart(call_id="t", name="read_file", arguments={"path": "a"}),))
    history = (
        UserMessage(text="read o"),
        old,
        ToolResultMessage(call_id="o", name="read_file", text="O"),
        AssistantMessage(text="Read."),
        UserMessage(text="now read a"),
        bare,
        ToolResultMessage(call_id="t", name="read_file", text="A"),
        UserMessage(text="steering: hurry"),  # steering after the results: still the same tool turn
    )
    params = to_anthropic_params(ModelRequest(model="m", system="", effort="high", messages=history))
    assert "thinking" not in params  # the open turn's reasoning was not kept: no thinking, not a refusal
    assert all(b["type"] != "thinking" for turn in params["messages"] for b in turn["content"])
    kept = AssistantMessage(tool_calls=bare.tool_calls, reasoning=(Reasoning(kind="thinking", signature="s"),))
    params = to_anthropic_params(
        ModelRequest(model="m", system="", effort="high", messages=(*history[:5], kept, *history[6:]))
    )
    assert "thinking" in params
    thinking = [b for turn in params["messages"] for b in turn["content"] if b["type"] == "thinking"]
    assert thinking == [{"type": "thinking", "thinking": "", "signature": "s"}]  # the old turn's stays out


@pytest.mark.parametrize(
    ("stop", "reason"),
    [
        ("end_turn", "end"),
        ("stop_sequence", "end"),
        ("max_tokens", "length"),
        ("model_context_window_exceeded", "length"),
        ("refusal", "refusal"),
        ("tool_use", "tool_use"),
    ],
)
async def test_m5_anthropic_stop_reasons_map(fake: FakeModelServer, stop: str, reason: str) -> None:
    fake.enqueue(Reply(text=["x"], finish=stop))
    events = await stream_all("anthropic", fake, request())
    assert events[-1] == StopEvent(reason=reason, raw_reason=stop)  # type: ignore[arg-type]


def test_m5_anthropic_tool_results_of_one_batch_and_steering_make_one_user_turn() -> None:
    calls = (
        ToolCallPart(call_id="a", name="read_file", arguments={"path": "1"}),
        ToolCallPart(call_id="b", name="read_file", arguments={"path": "2"}),
    )
    turns = to_anthropic_messages(
        ModelRequest(
            model="m",
            system="s",
            messages=(
                UserMessage(text="read both"),
                AssistantMessage(text="", tool_calls=calls),
                ToolResultMessage(call_id="a", name="read_file", text="one"),
                ToolResultMessage(call_id="b", name="read_file", text="skipped", is_error=True),
                UserMessage(text="actually, stop"),
            ),
        )
    )
    assert [t["role"] for t in turns] == ["user", "assistant", "user"]
    assert turns[1]["content"] == [
        {"type": "tool_use", "id": "a", "name": "read_file", "input": {"path": "1"}},
        {"type": "tool_use", "id": "b", "name": "read_file", "input": {"path": "2"}},
    ]
    assert turns[2]["content"] == [
        {"type": "tool_result", "tool_use_id": "a", "content": "one"},
        {"type": "tool_result", "tool_use_id": "b", "content": "skipped", "is_error": True},
        {"type": "text", "text": "actually, stop"},
    ]


def test_m5_anthropic_empty_texts_are_left_out() -> None:
    turns = to_anthropic_messages(
        ModelRequest(
            model="m",
            system="",
            messages=(UserMessage(text="a"), AssistantMessage(text=""), UserMessage(text=""), UserMessage(text="b")),
        )
    )
    assert turns == [{"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}]
