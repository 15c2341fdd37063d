"""What the runtime knows of a session beside its record (A2): the question a suspended execution waits
on, as the runtime saw it suspend and, after a restart, read back from the path; and the fork it makes
of a busy session (F2), stopping and settling the work it captured."""

from __future__ import annotations

import asyncio
from pathlib import Path

from anyy.api.events import ExecutionStateChanged
from anyy.domain.model_io import ToolCallEvent
from anyy.providers.gates import Gate
from tests.runtime.harness import Harness


def _ask(question: str, call_id: str = "q1") -> ToolCallEvent:
    return ToolCallEvent(call_id=call_id, name="ask_user", arguments={"question": question})


def test_a2_the_runtime_says_what_it_waits_on_before_and_after_a_restart(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with Harness(tmp_path) as h:
            session = await h.session()
            assert (await h.rt.state(session.id)).waiting is None
            h.model.enqueue([_ask("Proceed?")])
            await h.send(session.id, "deploy")
            suspended = await h.state("suspended")
            assert suspended.question is not None
            assert suspended.question.text == "Proceed?"
            await h.rt.set_model(session.id, effort="high")  # an entry after the question
            waiting = (await h.rt.state(session.id)).waiting
            assert waiting is not None
            assert (waiting.execution_id, waiting.entry_id, waiting.text) == (
                suspended.execution_id,
                suspended.question.entry_id,
                "Proceed?",
            )
        async with Harness(tmp_path) as again:  # a new runtime: it did not see the suspension
            read_back = (await again.rt.state(session.id)).waiting
            assert read_back == waiting
            again.model.enqueue([_ask("Which region?", "q2")])
            await again.rt.answer(session.id, suspended.execution_id, "yes")
            asked_again = await again.event(
                lambda e: isinstance(e, ExecutionStateChanged) and e.state == "suspended" and e.question is not None
            )
            assert isinstance(asked_again, ExecutionStateChanged)
            assert asked_again.question is not None
            now = (await again.rt.state(session.id)).waiting
            assert now is not None
            assert (now.entry_id, now.text) == (asked_again.question.entry_id, "Which region?")
            assert await again.rt.stop(session.id, suspended.execution_id)
            assert (await again.rt.state(session.id)).waiting is None

    asyncio.run(scenario())


def test_f2_a_fork_of_a_busy_session_stops_and_settles_the_work_it_captured(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with Harness(tmp_path) as h:
            session = await h.session()
            gate = Gate("held")
            h.model.enqueue([gate])
            await h.send(session.id, "long work")
            running = await h.state("running")
            await gate.reached.wait()
            forked = await h.rt.fork(session.id)
            assert forked.interrupted == running.execution_id
            assert forked.settle_error is None
            assert forked.session.forked_from == session.id
            assert h.rt.running_execution(session.id) is None  # settled before the fork answered
            ended = await h.store(lambda s: s.get_execution(running.execution_id))
            assert ended.state == "interrupted"

    asyncio.run(scenario())
