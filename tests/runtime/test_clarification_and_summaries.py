"""Clarifications (A2) and summaries that are applied only when sound (R4, R5, T2)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from anyy.api.events import Notice
from anyy.domain.errors import Conflict
from anyy.domain.model_io import StopEvent, TextDelta, ToolCallEvent, ToolResultMessage
from anyy.providers.base import ProviderError
from anyy.providers.gates import Gate
from anyy.runtime.deps import RuntimeSettings
from tests.runtime.harness import Harness


def ask(question: str) -> ToolCallEvent:
    return ToolCallEvent(call_id="q1", name="ask_user", arguments={"question": question})


def test_a2_ask_user_suspends_and_an_answer_resumes(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with Harness(tmp_path) as h:
            session = await h.session()
            h.model.enqueue([ask("Which file?"), ToolCallEvent(call_id="e", name="echo", arguments={"text": "x"})])
            sub = await h.send(session.id, "fix the bug")
            suspended = await h.state("suspended")
            assert (await h.store(lambda s: s.get_submission(sub.id))).state == "suspended"
            texts = await h.texts(session.id)
            assert texts[-1] == "question:Which file?"
            with pytest.raises(Conflict):
                await h.rt.configure_tools(session.id, ["echo"], codemode=False)
            h.model.enqueue("Fixed main.py.")
            await h.rt.answer(session.id, suspended.execution_id, "main.py")
            await h.state("completed", suspended.execution_id)
            texts = await h.texts(session.id)
            assert texts[-5:] == [
                "question:Which file?",
                "answer:main.py",
                "tool_result:main.py",
                "tool_result:echo: x",  # the call that waited for the answer ran after it
                "assistant:Fixed main.py.",
            ]
            last = h.model.requests[-1].messages
            assert ToolResultMessage(call_id="q1", name="ask_user", text="main.py") in last
            assert (await h.store(lambda s: s.get_submission(sub.id))).state == "completed"

    asyncio.run(scenario())


def test_a2_a_suspended_execution_survives_a_restart_and_resumes(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with Harness(tmp_path) as h:
            session = await h.session()
            h.model.enqueue([ask("Proceed?")])
            await h.send(session.id, "deploy")
            suspended = await h.state("suspended")
        async with Harness(tmp_path) as again:
            again.model.enqueue("Deployed.")
            await again.rt.answer(session.id, suspended.execution_id, "yes")
            await again.state("completed", suspended.execution_id)
            assert (await again.texts(session.id))[-1] == "assistant:Deployed."

    asyncio.run(scenario())


def test_s7_stopping_while_waiting_for_an_answer_settles_the_question(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with Harness(tmp_path) as h:
            session = await h.session()
            h.model.enqueue([ask("Proceed?")])
            await h.send(session.id, "deploy")
            suspended = await h.state("suspended")
            assert await h.rt.stop(session.id, suspended.execution_id)
            texts = await h.texts(session.id)
            assert texts[-1].startswith("tool_result:Not answered")
            with pytest.raises(Conflict, match="not waiting for an answer"):
                await h.rt.answer(session.id, suspended.execution_id, "too late")

    asyncio.run(scenario())


async def _long_chat(h: Harness, session_id: str) -> None:
    for i in range(3):
        h.model.enqueue(f"answer {i} " + "a" * 200)
        await h.send(session_id, f"question {i} " + "q" * 200)
        await h.state("completed")


@pytest.mark.parametrize(
    ("summary", "why"),
    [
        (ProviderError("transient", "overloaded"), "the model failed"),
        ([TextDelta(text="half a summ"), StopEvent(reason="length")], "cut off"),
        ([StopEvent(reason="end")], "empty summary"),
        ([TextDelta(text="   "), StopEvent(reason="end")], "empty summary"),
    ],
)
def test_r5_a_failed_truncated_or_empty_summary_is_never_applied(tmp_path: Path, summary: object, why: str) -> None:
    async def scenario() -> None:
        async with Harness(tmp_path, settings=RuntimeSettings(keep_fraction=0.001)) as h:
            session = await h.session()
            await _long_chat(h, session.id)
            before = await h.store(lambda s: s.context(session.id))
            h.model.enqueue(summary)  # type: ignore[arg-type]
            assert await h.rt.compact(session.id) is False
            notice = await h.event(lambda e: isinstance(e, Notice))
            assert isinstance(notice, Notice)
            assert why in notice.text
            after = await h.store(lambda s: s.context(session.id))
            assert after.items == before.items
            assert after.compaction is None

    asyncio.run(scenario())


def test_r5_a_cancelled_summary_is_never_applied(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with Harness(tmp_path, settings=RuntimeSettings(budget_tokens=100, keep_fraction=0.001)) as h:
            session = await h.session()
            await _long_chat(h, session.id)
            gate = Gate()
            h.model.enqueue([gate, TextDelta(text="summary that never lands")])
            await h.send(session.id, "one more")  # the context is over budget: compaction starts first
            await asyncio.to_thread(gate.reached.wait_blocking, 10)
            execution_id = h.rt.running_execution(session.id)
            assert execution_id is not None
            await h.rt.stop(session.id, execution_id)
            await h.state("interrupted", execution_id)
            context = await h.store(lambda s: s.context(session.id))
            assert context.compaction is None

    asyncio.run(scenario())


def test_r5_manual_compaction_applies_a_sound_summary_and_keeps_history(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with Harness(tmp_path, settings=RuntimeSettings(keep_fraction=0.001)) as h:
            session = await h.session()
            await _long_chat(h, session.id)
            h.model.enqueue("We discussed three questions.")
            assert await h.rt.compact(session.id) is True
            context = await h.store(lambda s: s.context(session.id))
            assert context.summary == "We discussed three questions."
            assert [item[2][:10] for item in context.items] == ["question 2", "answer 2 a"]
            assert len(await h.store(lambda s: s.path(session.id))) == 7  # nothing was deleted

    asyncio.run(scenario())


def test_t2_navigation_with_a_branch_summary_and_a_draft(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with Harness(tmp_path) as h:
            session = await h.session()
            await _long_chat(h, session.id)
            path = await h.store(lambda s: s.path(session.id))
            second_question = path[2]
            h.model.enqueue("On the left branch we answered questions 1 and 2.")
            result = await h.rt.navigate(session.id, second_question.id, summarize=True, before=True)
            assert result.draft is not None
            assert result.draft.startswith("question 1")
            assert result.summary_applied
            texts = await h.texts(session.id)
            assert texts[-1] == "branch_summary:On the left branch we answered questions 1 and 2."
            assert len(texts) == 3  # first question, its answer, the summary
            tree = await h.store(lambda s: s.tree(session.id))
            assert len(tree.nodes) == 7  # the branch left is still in the tree
            assert len(h.model.requests) == 4  # navigation started no response

    asyncio.run(scenario())


def test_t2_a_failed_branch_summary_moves_anyway_and_says_why(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with Harness(tmp_path) as h:
            session = await h.session()
            await _long_chat(h, session.id)
            path = await h.store(lambda s: s.path(session.id))
            h.model.enqueue([StopEvent(reason="end")])
            result = await h.rt.navigate(session.id, path[1].id, summarize=True)
            assert not result.summary_applied
            assert result.note is not None
            assert "empty summary" in result.note
            assert result.session.head == path[1].id

    asyncio.run(scenario())
