"""Stops bound to the execution they captured (S6, S7) and retries with their own wait (R3, S4)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from anyy.api.events import RetryWaiting
from anyy.domain.model_io import TextDelta, ToolCallEvent
from anyy.domain.queue import Submission
from anyy.providers.base import ProviderError
from anyy.providers.gates import Gate
from anyy.runtime.clock import retry_delay
from anyy.runtime.deps import RuntimeSettings
from anyy.storage.sqlite import SqliteStore
from tests.runtime.harness import Harness


async def test_s7_a_stop_while_streaming_keeps_the_partial_text_as_interrupted(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with Harness(tmp_path) as h:
            session = await h.session()
            gate = Gate()
            h.model.enqueue([TextDelta(text="I was saying"), gate, TextDelta(text=" never said")])
            await h.send(session.id, "talk")
            await asyncio.to_thread(gate.reached.wait_blocking, 10)
            execution_id = h.rt.running_execution(session.id)
            assert execution_id is not None
            assert h.rt.live_text(session.id) == "I was saying"
            assert await h.rt.stop(session.id, execution_id)
            await h.state("interrupted", execution_id)
            path = await h.store(lambda s: s.path(session.id))
            assert [(e.kind.label, e.text) for e in path] == [("user", "talk"), ("assistant", "I was saying")]
            assert path[-1].data["interrupted"] is True

    await scenario()


async def test_s7_a_stop_during_a_tool_gives_every_started_call_a_result_and_starts_nothing(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with Harness(tmp_path) as h:
            session = await h.session()
            gate = Gate()
            h.tools.gates.append(gate)
            h.model.enqueue(
                [
                    ToolCallEvent(call_id="a", name="slow", arguments={}),
                    ToolCallEvent(call_id="b", name="echo", arguments={}),
                ]
            )
            await h.send(session.id, "work")
            await asyncio.to_thread(gate.reached.wait_blocking, 10)
            await h.send(session.id, "later", kind="follow_up")
            execution_id = h.rt.running_execution(session.id)
            assert execution_id is not None
            assert await h.rt.stop(session.id, execution_id)
            await h.state("interrupted", execution_id)
            texts = await h.texts(session.id)
            assert texts[-2].startswith("tool_result:Stopped: the user stopped the response while this call")
            assert texts[-1].startswith("tool_result:Not run: the user stopped the response")
            assert h.tools.cancelled == ["slow"]
            assert await h.pending(session.id) == ["follow_up:later"]
            assert len(h.model.requests) == 1  # nothing more was sent

    await scenario()


async def test_s6_a_late_stop_never_stops_a_later_turn(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with Harness(tmp_path) as h:
            session = await h.session()
            h.model.enqueue("first")
            await h.send(session.id, "one")
            first = await h.state("completed")
            gate = Gate()
            h.model.enqueue([gate, TextDelta(text="second")])
            await h.send(session.id, "two")
            await asyncio.to_thread(gate.reached.wait_blocking, 10)
            # The stop captured the first execution; it arrives late.
            assert await h.rt.stop(session.id, first.execution_id) is False
            gate.open()
            second = await h.state("completed")
            assert second.execution_id != first.execution_id
            assert (await h.texts(session.id))[-1] == "assistant:second"

    await scenario()


@pytest.mark.parametrize(
    "error",
    [
        ProviderError("transient", "rate limited", status=429),
        ProviderError("transient", "overloaded", status=529),
        ProviderError("transient", "server error", status=500),
        ProviderError("transient", "the stream was dropped"),
    ],
)
async def test_r3_transient_errors_wait_2_4_8_then_fail_after_3_retries(tmp_path: Path, error: ProviderError) -> None:
    async def scenario() -> None:
        async with Harness(tmp_path) as h:
            session = await h.session()
            h.model.enqueue(error, error, error, error)
            await h.send(session.id, "hello")
            for expected in (2.0, 4.0, 8.0):
                wait = await h.event(lambda e: isinstance(e, RetryWaiting))
                assert isinstance(wait, RetryWaiting)
                assert wait.delay == expected
                assert await h.clock.next_sleep() == expected
                h.clock.advance()
            failed = await h.state("failed")
            assert error.message in (failed.error or "")
            assert len(h.model.requests) == 4  # the first request and 3 retries

    await scenario()


def test_r3_delays_double_and_are_capped_at_60_seconds() -> None:
    assert [retry_delay(n) for n in range(1, 8)] == [2, 4, 8, 16, 32, 60, 60]
    assert retry_delay(1, retry_after=10) == 10
    assert retry_delay(1, retry_after=600) == 60


async def test_r3_the_retry_count_starts_afresh_after_a_success(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with Harness(tmp_path) as h:
            session = await h.session()
            oops = ProviderError("transient", "busy")
            h.model.enqueue(
                oops, oops, [ToolCallEvent(call_id="c", name="echo", arguments={})], oops, oops, oops, "finally"
            )
            await h.send(session.id, "go")
            for _ in range(5):
                await h.clock.next_sleep()
                h.clock.advance()
            await h.state("completed")
            assert h.clock.sleeps == [2, 4, 2, 4, 8]

    await scenario()


async def test_s4_cancelling_the_retry_wait_ends_only_that_wait_and_keeps_the_queue(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with Harness(tmp_path) as h:
            session = await h.session()
            h.model.enqueue(ProviderError("transient", "overloaded", status=529))
            await h.send(session.id, "hello")
            await h.send(session.id, "queued", kind="follow_up")
            await h.clock.next_sleep()
            execution_id = h.rt.running_execution(session.id)
            assert execution_id is not None
            assert await h.rt.cancel_retry_wait(session.id, execution_id)
            done = await h.state("interrupted", execution_id)
            assert "retry wait was cancelled" in (done.note or "")
            assert await h.pending(session.id) == ["follow_up:queued"]
            assert len(h.model.requests) == 1
            assert await h.rt.cancel_retry_wait(session.id, execution_id) is False  # nothing to cancel now

    await scenario()


async def test_r3_retries_can_be_disabled(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with Harness(tmp_path, settings=RuntimeSettings(retries_enabled=False)) as h:
            session = await h.session()
            h.model.enqueue(ProviderError("transient", "rate limited", status=429))
            await h.send(session.id, "hello")
            await h.state("failed")
            assert h.clock.sleeps == []

    await scenario()


async def test_r5_context_overflow_compacts_once_then_retries(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with Harness(tmp_path, settings=RuntimeSettings(keep_fraction=0.0001)) as h:
            session = await h.session()
            h.model.enqueue("first answer")
            await h.send(session.id, "first question")
            await h.state("completed")
            h.model.enqueue(ProviderError("overflow", "prompt is too long"), "the summary", "answer after compaction")
            await h.send(session.id, "second question")
            await h.state("completed")
            texts = await h.texts(session.id)
            assert "compaction:the summary" in texts
            assert texts[-1] == "assistant:answer after compaction"
            assert h.clock.sleeps == []  # an overflow is not a retry

    await scenario()


async def test_u2_retry_now_ends_the_wait_early_and_calls_the_model_at_once(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with Harness(tmp_path) as h:
            session = await h.session()
            h.model.enqueue(ProviderError("transient", "overloaded", status=529), "back again")
            await h.send(session.id, "hello")
            assert await h.clock.next_sleep() == 2.0  # waiting; the clock is never advanced
            execution_id = h.rt.running_execution(session.id)
            assert execution_id is not None
            assert await h.rt.retry_now(session.id, execution_id)
            await h.state("completed", execution_id)
            assert len(h.model.requests) == 2
            assert (await h.texts(session.id))[-1] == "assistant:back again"
            assert await h.rt.retry_now(session.id, execution_id) is False  # nothing waits now

    await scenario()


class _StaleOnce(SqliteStore):
    """A store whose next ``get_submission``, once armed, answers as it was before: a read made just before
    the submission's end was recorded (the end and its events came while the answer was on its way)."""

    stale: Submission | None = None

    def get_submission(self, submission_id: str) -> Submission:
        stale, self.stale = self.stale, None
        return stale if stale is not None else super().get_submission(submission_id)


async def test_c3_a_wait_begun_as_its_submission_ends_returns_the_end(tmp_path: Path) -> None:
    """``session.wait`` for a submission whose execution ends (here: a stop) between the wait's first read
    and its following of the session's events returns that end at once, not the state it first read after
    its timeout."""
    stores: list[_StaleOnce] = []

    def open_store(folder: Path) -> SqliteStore:
        stores.append(_StaleOnce(folder / "state.db", profile="test"))
        return stores[-1]

    async with Harness(tmp_path, open_store=open_store) as h:
        session = await h.session()
        gate = Gate()
        h.model.enqueue([TextDelta(text="working"), gate, TextDelta(text=" never said")])
        sent = await h.send(session.id, "work")
        await asyncio.to_thread(gate.reached.wait_blocking, 10)
        taken = await h.store(lambda s: s.get_submission(sent.id))
        execution_id = h.rt.running_execution(session.id)
        assert execution_id is not None
        assert taken.state == "taken"
        assert await h.rt.stop(session.id, execution_id)
        await h.state("interrupted", execution_id)
        stores[0].stale = taken  # the wait's first read: from before the stop
        waited = await h.rt.wait_submission(sent.id, timeout=30)
        assert waited.state == "interrupted"
