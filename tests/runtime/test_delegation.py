"""Delegation (K2): the delegate tool's children run a few at once, each answer reaches the parent's call
once, a stop of the parent stops the children it captured, and delegation does not nest deeper than
allowed. A real runtime on SQLite with the built-in tools; children are held with gates, never sleeps."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from anyy.domain.model_io import TextDelta, ToolCallEvent
from anyy.providers.gates import Gate
from anyy.providers.offline import Script
from anyy.runtime.deps import RuntimeSettings
from anyy.tools import BuiltinToolSource
from tests.runtime.harness import Harness


def delegate(*briefs: str, call_id: str = "d1", **extra: Any) -> ToolCallEvent:
    return ToolCallEvent(call_id=call_id, name="delegate", arguments={"tasks": [{"brief": b, **extra} for b in briefs]})


def harness(tmp_path: Path, **settings: Any) -> Harness:
    return Harness(tmp_path, settings=RuntimeSettings(**settings), tools=BuiltinToolSource())


async def tasks_of(h: Harness, parent: str) -> list[Any]:
    return list(await h.store(lambda s: s.list_delegated_tasks(parent_session_id=parent)))


async def test_k2_children_run_up_to_max_children_and_each_answer_reaches_the_parent_once(tmp_path: Path) -> None:
    async with harness(tmp_path, max_children=2) as h:
        gates = [Gate(f"child{n}") for n in range(3)]
        held: list[Script] = [[gate, TextDelta(text=f"answer {'ABC'[n]}")] for n, gate in enumerate(gates)]
        h.model.enqueue([delegate("find A", "find B", "find C")], *held, "All three found.")
        parent = await h.session(tools={"enabled": ["delegate"]})
        await h.send(parent.id, "research")
        suspended = await h.state("suspended")
        assert suspended.session_id == parent.id
        await gates[0].reached.wait()
        await gates[1].reached.wait()
        tasks = await tasks_of(h, parent.id)
        assert [t.state for t in tasks] == ["running", "running", "waiting"]  # max_children = 2
        assert not await h.store(lambda s: s.list_submissions(tasks[2].child_session_id, states=("pending", "taken")))
        assert not await h.store(lambda s: s.list_executions(tasks[2].child_session_id))
        ids = [t.child_session_id for t in tasks]
        children = await h.store(lambda s: [s.get_session(c) for c in ids])
        assert all(c.kind == "background" and c.origin.parent_call_id == "d1" for c in children)
        assert all(c.origin.parent_session_id == parent.id for c in children)
        gates[0].open()
        await gates[2].reached.wait()  # a slot freed: the third child started
        gates[1].open()
        gates[2].open()
        await h.state("completed", suspended.execution_id)
        results = [t for t in await h.texts(parent.id) if t.startswith("tool_result:")]
        assert len(results) == 1
        for answer in ("answer A", "answer B", "answer C"):
            assert results[0].count(answer) == 1
        assert (await h.texts(parent.id))[-1] == "assistant:All three found."
        assert all(t.state == "finished" and t.delivered for t in await tasks_of(h, parent.id))


async def test_k2_a_child_cannot_delegate_deeper_than_max_depth(tmp_path: Path) -> None:
    async with harness(tmp_path, max_depth=1) as h:
        h.model.enqueue(
            [delegate("go deeper", tools=["delegate"])],
            [delegate("grandchild", call_id="d2")],  # the child tries; delegate is not among its tools
            "I could not delegate.",
            "Done.",
        )
        parent = await h.session(tools={"enabled": ["delegate"]})
        await h.send(parent.id, "start")
        suspended = await h.state("suspended")
        await h.state("completed", suspended.execution_id)
        [task] = await tasks_of(h, parent.id)
        child = await h.store(lambda s: s.get_session(task.child_session_id))
        assert child.tools["enabled"] == []  # delegate removed at max_depth
        child_texts = await h.texts(task.child_session_id)
        assert any(t.startswith("tool_result:There is no tool named 'delegate'") for t in child_texts)
        assert await tasks_of(h, task.child_session_id) == []  # no grandchild
        assert "I could not delegate." in task.result or "I could not delegate." in (await h.texts(parent.id))[-2]


async def test_k2_depth_limit_refuses_a_delegate_call_at_depth(tmp_path: Path) -> None:
    async with harness(tmp_path, max_depth=0) as h:
        h.model.enqueue([delegate("anything")], "Alone then.")
        parent = await h.session(tools={"enabled": ["delegate"]})
        await h.send(parent.id, "start")
        await h.state("completed")
        texts = await h.texts(parent.id)
        assert any("max_depth" in t and t.startswith("tool_result:") for t in texts)
        assert await tasks_of(h, parent.id) == []


async def test_k2_a_stop_of_the_parent_stops_the_children_it_captured(tmp_path: Path) -> None:
    async with harness(tmp_path, max_children=1) as h:
        held = Gate("held")
        h.model.enqueue([delegate("slow one", "never started")], [held, TextDelta(text="late")])
        parent = await h.session(tools={"enabled": ["delegate"]})
        await h.send(parent.id, "start")
        suspended = await h.state("suspended")
        await held.reached.wait()
        first, second = await tasks_of(h, parent.id)
        [running] = await h.store(lambda s: s.list_executions(first.child_session_id, active_only=True))
        assert await h.rt.stop(parent.id, suspended.execution_id)
        await h.state("interrupted", running.id)  # the child's captured execution
        first, second = await tasks_of(h, parent.id)
        assert (first.state, second.state) == ("cancelled", "cancelled")
        assert not await h.store(lambda s: s.list_executions(second.child_session_id))
        parent_texts = await h.texts(parent.id)
        assert any(
            t.startswith("tool_result:Stopped: the user stopped the response while it waited") for t in parent_texts
        )
        # The stop was bound to that execution: the child's next turn runs.
        h.model.enqueue("second turn")
        await h.send(first.child_session_id, "again")
        await h.state("completed")
        assert (await h.texts(first.child_session_id))[-1] == "assistant:second turn"
