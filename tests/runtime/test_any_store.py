"""The runtime needs nothing of a store but the ``SessionStore`` protocol: the same turns, queues, stops
and navigation on every backend of the conformance suite (SQLite and the in-memory one)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from anyy.domain.model_io import ToolCallEvent
from anyy.providers.gates import Gate
from tests.conformance.backends import BACKENDS
from tests.runtime.harness import Harness


@pytest.mark.parametrize("backend", sorted(BACKENDS))
def test_q1_a_turn_with_tools_steering_and_a_follow_up_on_any_store(tmp_path: Path, backend: str) -> None:
    async def scenario() -> None:
        async with Harness(tmp_path, open_store=BACKENDS[backend]) as h:
            session = await h.session()
            gate = Gate("slow tool")
            h.tools.gates.append(gate)
            h.model.enqueue(
                [ToolCallEvent(call_id="c1", name="slow", arguments={})], "changing course", "and the follow-up"
            )
            await h.send(session.id, "do a slow thing")
            await asyncio.to_thread(gate.reached.wait_blocking, 10)
            await h.send(session.id, "steer here", kind="steering")
            await h.send(session.id, "then this", kind="follow_up")
            gate.open()
            await h.state("completed")
            await h.state("completed")
            assert await h.texts(session.id) == [
                "user:do a slow thing",
                "assistant:",
                "tool_call:",
                "tool_result:slow done",
                "user:steer here",
                "assistant:changing course",
                "user:then this",
                "assistant:and the follow-up",
            ]
            assert await h.pending(session.id) == []

    asyncio.run(scenario())


@pytest.mark.parametrize("backend", sorted(BACKENDS))
def test_t2_navigate_then_answer_on_a_new_branch_on_any_store(tmp_path: Path, backend: str) -> None:
    async def scenario() -> None:
        async with Harness(tmp_path, open_store=BACKENDS[backend]) as h:
            session = await h.session()
            h.model.enqueue("first answer", "second answer")
            await h.send(session.id, "first question")
            await h.state("completed")
            first = (await h.store(lambda s: s.path(session.id)))[0]
            await h.rt.navigate(session.id, first.id)
            await h.send(session.id, "another way")
            await h.state("completed")
            assert await h.texts(session.id) == ["user:first question", "user:another way", "assistant:second answer"]
            tree = await h.store(lambda s: s.tree(session.id))
            assert len(tree.nodes) == 4

    asyncio.run(scenario())
