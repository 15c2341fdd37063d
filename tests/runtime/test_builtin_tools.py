"""The runtime with the real built-in tools (M6): file and shell calls, ask_user, and Codemode, whose
inner calls are recorded as tool activity without being sent to the model as calls of their own."""

from __future__ import annotations

import asyncio
from pathlib import Path

from anyy.api.events import ToolFinished, ToolStarted
from anyy.domain.entries import EntryKind
from anyy.domain.model_io import ToolCallEvent
from anyy.tools import BuiltinToolSource
from tests.runtime.harness import Harness


def test_m6_file_and_shell_tools_run_under_the_working_directory(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with Harness(tmp_path, tools=BuiltinToolSource()) as h:
            (tmp_path / "work" / "notes.txt").write_text("the answer is 42\n")
            session = await h.session(tools={"enabled": ["read_file", "shell"], "codemode": False})
            h.model.enqueue(
                [
                    ToolCallEvent(call_id="r", name="read_file", arguments={"path": "notes.txt"}),
                    ToolCallEvent(call_id="s", name="shell", arguments={"command": "echo hi from $PWD"}),
                ],
                "Read and ran.",
            )
            await h.send(session.id, "look around")
            await h.state("completed")
            results = [e for e in await h.store(lambda s: s.path(session.id)) if e.kind == EntryKind.TOOL_RESULT]
            assert "the answer is 42" in results[0].text
            assert "hi from" in results[1].text
            assert str(tmp_path / "work") in results[1].text
            assert [spec.name for spec in h.model.requests[0].tools] == ["read_file", "shell"]

    asyncio.run(scenario())


def test_m6_the_builtin_ask_user_suspends_the_execution(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with Harness(tmp_path, tools=BuiltinToolSource()) as h:
            session = await h.session(tools={"enabled": ["ask_user"], "codemode": False})
            h.model.enqueue([ToolCallEvent(call_id="q", name="ask_user", arguments={"question": "Which branch?"})])
            await h.send(session.id, "merge it")
            suspended = await h.state("suspended")
            h.model.enqueue("Merged into main.")
            await h.rt.answer(session.id, suspended.execution_id, "main")
            await h.state("completed", suspended.execution_id)
            assert (await h.texts(session.id))[-4:] == [
                "question:Which branch?",
                "answer:main",
                "tool_result:main",
                "assistant:Merged into main.",
            ]

    asyncio.run(scenario())


def test_m6_codemode_script_calls_are_recorded_as_tool_activity(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with Harness(tmp_path, tools=BuiltinToolSource()) as h:
            (tmp_path / "work" / "a.txt").write_text("alpha\n")
            session = await h.session(tools={"enabled": ["read_file", "write_file"], "codemode": True})
            script = (
                "text = tools.read_file(path='a.txt')\n"
                "tools.write_file(path='b.txt', content=text.upper())\n"
                "print('copied', len(text))\n"
            )
            h.model.enqueue([ToolCallEvent(call_id="run", name="run_script", arguments={"script": script})], "Done.")
            await h.send(session.id, "copy a to b in capitals")
            await h.state("completed")
            assert "ALPHA" in (tmp_path / "work" / "b.txt").read_text()
            assert [spec.name for spec in h.model.requests[0].tools] == ["run_script"]
            path = await h.store(lambda s: s.path(session.id))
            result = next(e for e in path if e.kind == EntryKind.TOOL_RESULT)
            assert "copied" in result.text
            assert [call["name"] for call in result.data["inner_calls"]] == ["read_file", "write_file"]
            started = [(e.name, e.call_id, e.parent_call_id) for e in h.seen if isinstance(e, ToolStarted)]
            assert started == [  # clients see the inner calls live, under their script
                ("run_script", "run", ""),
                ("read_file", "run.1", "run"),
                ("write_file", "run.2", "run"),
            ]
            finished = [(e.call_id, e.parent_call_id) for e in h.seen if isinstance(e, ToolFinished)]
            assert finished == [("run.1", "run"), ("run.2", "run"), ("run", "")]
            # The model is told of one call and one result: the inner calls are not separate messages.
            kinds = [type(m).__name__ for m in h.model.requests[1].messages]
            assert kinds == ["UserMessage", "AssistantMessage", "ToolResultMessage"]

    asyncio.run(scenario())
