"""The agent loop end to end on the scripted offline model: a turn, tools, follow-ups."""

from __future__ import annotations

from pathlib import Path

from anyy.domain.model_io import ToolCallEvent, ToolResultMessage, UserMessage
from tests.runtime.harness import Harness


async def test_a2_a_prompt_is_answered_and_recorded(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with Harness(tmp_path) as h:
            session = await h.session()
            h.model.enqueue("Hello back.")
            sub = await h.send(session.id, "Hello")
            done = await h.state("completed")
            assert await h.texts(session.id) == ["user:Hello", "assistant:Hello back."]
            final = await h.store(lambda s: s.get_submission(sub.id))
            assert (final.state, final.execution_id) == ("completed", done.execution_id)
            assert h.model.requests[0].messages == (UserMessage(text="Hello"),)
            assert h.model.requests[0].system == "You are the default role."

    await scenario()


async def test_m6_tool_calls_and_results_are_recorded_and_sent_back(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with Harness(tmp_path) as h:
            session = await h.session()
            h.model.enqueue(
                [ToolCallEvent(call_id="c1", name="echo", arguments={"text": "hi"})],
                "The tool said hi.",
            )
            await h.send(session.id, "use the tool")
            await h.state("completed")
            assert await h.texts(session.id) == [
                "user:use the tool",
                "assistant:",
                "tool_call:",
                "tool_result:echo: hi",
                "assistant:The tool said hi.",
            ]
            second = h.model.requests[1].messages
            assert second[-1] == ToolResultMessage(call_id="c1", name="echo", text="echo: hi")
            execution = (await h.store(lambda s: s.list_executions(session.id)))[0]
            assert execution.passes == 2

    await scenario()
