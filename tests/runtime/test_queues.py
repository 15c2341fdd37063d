"""The two queues (Q1, Q7) and their drain on every terminal path: nothing pending is ever dropped."""

from __future__ import annotations

import asyncio
import functools
from pathlib import Path

from anyy.api.events import EntriesAppended, QueueChanged
from anyy.domain.model_io import TextDelta, ToolCallEvent, UserMessage
from anyy.domain.queue import NewSubmission, SubmissionKind
from anyy.domain.sessions import Origin
from anyy.providers.base import ProviderError
from anyy.providers.gates import Gate
from anyy.providers.registry import ModelRegistry
from anyy.runtime.deps import RuntimeSettings
from anyy.storage.protocol import SessionStore
from tests.runtime.harness import Harness


def call(call_id: str, name: str, **arguments: object) -> ToolCallEvent:
    return ToolCallEvent(call_id=call_id, name=name, arguments=dict(arguments))


async def _stopped_with(
    h: Harness, session_id: str, sent: list[tuple[str, SubmissionKind]], *, then: str | None = None
) -> None:
    """A response held mid-stream, ``sent`` queued meanwhile, then stopped; ``then``: the model's next answer."""
    gate = Gate()
    h.model.enqueue([gate, TextDelta(text="never")], *([then] if then is not None else []))
    await h.send(session_id, "start")
    await asyncio.to_thread(gate.reached.wait_blocking, 10)
    for text, kind in sent:
        await h.send(session_id, text, kind=kind)
    running = h.rt.running_execution(session_id)
    assert running is not None
    assert await h.rt.stop(session_id, running)
    await h.state("interrupted", running)


async def test_q1_steering_sent_during_a_tool_reaches_the_very_next_model_call(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with Harness(tmp_path) as h:
            session = await h.session()
            gate = Gate("slow tool")
            h.tools.gates.append(gate)
            h.model.enqueue(
                [call("c1", "slow"), call("c2", "echo", text="never"), call("c3", "echo", text="never")],
                "Understood, changing course.",
            )
            await h.send(session.id, "do three things")
            await asyncio.to_thread(gate.reached.wait_blocking, 10)
            await h.send(session.id, "actually, stop after the first", kind="steering")
            gate.open()  # the running tool was not cancelled: it finishes normally
            await h.state("completed")
            assert h.tools.cancelled == []
            assert [name for name, _ in h.tools.calls] == ["slow"]  # c2 and c3 never started
            texts = await h.texts(session.id)
            assert texts[:5] == ["user:do three things", "assistant:", "tool_call:", "tool_call:", "tool_call:"]
            assert texts[5] == "tool_result:slow done"
            assert texts[6].startswith("tool_result:Not run: the user sent a steering message")
            assert texts[7].startswith("tool_result:Not run: the user sent a steering message")
            assert texts[8:] == ["user:actually, stop after the first", "assistant:Understood, changing course."]
            # The very next model call carries the steering text, after every call's result.
            assert h.model.requests[1].messages[-1] == UserMessage(text="actually, stop after the first")
            assert await h.pending(session.id) == []

    await scenario()


async def test_q7_steering_one_at_a_time_takes_one_item_per_checkpoint(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with Harness(tmp_path) as h:
            session = await h.session()
            gate = Gate()
            h.tools.gates.append(gate)
            h.model.enqueue([call("c1", "slow")], "after first", "after second")
            await h.send(session.id, "start")
            await asyncio.to_thread(gate.reached.wait_blocking, 10)
            await h.send(session.id, "first", kind="steering")
            await h.send(session.id, "second", kind="steering")
            gate.open()
            await h.state("completed")
            texts = await h.texts(session.id)
            assert texts[-4:] == ["user:first", "assistant:after first", "user:second", "assistant:after second"]

    await scenario()


async def test_q7_left_over_steering_starts_one_item_and_the_first_checkpoint_takes_the_next(tmp_path: Path) -> None:
    """The first checkpoint is read in the unit of work that starts the execution, unless steering waits
    to be taken: then the execution's own checkpoint takes it, announced like any other (queue, entries)."""

    async def scenario() -> None:
        async with Harness(tmp_path) as h:
            session = await h.session()  # steering one at a time
            await _stopped_with(h, session.id, [("first", "steering"), ("second", "steering")], then="took both")
            assert await h.pending(session.id) == ["steering:first", "steering:second"]
            await h.rt.continue_queue(session.id)
            completed = await h.state("completed")
            assert (await h.texts(session.id))[-3:] == ["user:first", "user:second", "assistant:took both"]
            assert [m.text for m in h.model.requests[-1].messages[-2:]] == ["first", "second"]
            assert len(completed.submission_ids) == 2  # both taken by that execution
            taken = [e for e in h.seen if isinstance(e, EntriesAppended) and e.entries[0].text == "second"]
            assert len(taken) == 1  # announced once, when the checkpoint took it
            assert isinstance(h.seen[h.seen.index(taken[0]) - 1], QueueChanged)  # the queue without it, just before
            assert await h.pending(session.id) == []

    await scenario()


async def test_q7_steering_mode_all_takes_every_item_at_one_checkpoint(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with Harness(tmp_path) as h:
            session = await h.session(steering_mode="all")
            gate = Gate()
            h.tools.gates.append(gate)
            h.model.enqueue([call("c1", "slow")], "took both")
            await h.send(session.id, "start")
            await asyncio.to_thread(gate.reached.wait_blocking, 10)
            await h.send(session.id, "first", kind="steering")
            await h.send(session.id, "second", kind="steering")
            gate.open()
            await h.state("completed")
            assert (await h.texts(session.id))[-3:] == ["user:first", "user:second", "assistant:took both"]

    await scenario()


async def test_q1_follow_up_waits_for_the_end_of_the_response_then_starts_the_next(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with Harness(tmp_path) as h:
            session = await h.session()
            gate = Gate()
            h.model.enqueue([gate, TextDelta(text="first answer")], "second answer")
            first = await h.send(session.id, "first")
            await asyncio.to_thread(gate.reached.wait_blocking, 10)
            follow = await h.send(session.id, "then this", kind="follow_up")
            assert await h.pending(session.id) == ["follow_up:then this"]
            gate.open()
            one = await h.state("completed")
            two = await h.state("completed")
            assert one.execution_id != two.execution_id
            assert await h.texts(session.id) == [
                "user:first",
                "assistant:first answer",
                "user:then this",
                "assistant:second answer",
            ]
            subs = await h.store(lambda s: [s.get_submission(first.id), s.get_submission(follow.id)])
            assert [s.execution_id for s in subs] == [one.execution_id, two.execution_id]

    await scenario()


async def test_q7_follow_up_mode_all_starts_one_execution_with_every_item(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with Harness(tmp_path) as h:
            session = await h.session(follow_up_mode="all")
            gate = Gate()
            h.model.enqueue([gate, TextDelta(text="first answer")], "both at once")
            await h.send(session.id, "first")
            await asyncio.to_thread(gate.reached.wait_blocking, 10)
            await h.send(session.id, "a", kind="follow_up")
            await h.send(session.id, "b", kind="follow_up")
            gate.open()
            await h.state("completed")
            await h.state("completed")
            assert (await h.texts(session.id))[2:] == ["user:a", "user:b", "assistant:both at once"]

    await scenario()


async def test_q1_pending_items_stay_pending_after_a_failure(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with Harness(tmp_path) as h:
            session = await h.session()
            gate = Gate()
            h.model.enqueue([gate, ProviderError("fatal", "the key was refused")])
            first = await h.send(session.id, "first")
            await asyncio.to_thread(gate.reached.wait_blocking, 10)
            await h.send(session.id, "next", kind="follow_up")
            gate.open()
            failed = await h.state("failed")
            assert "the key was refused" in (failed.error or "")
            assert await h.pending(session.id) == ["follow_up:next"]
            assert (await h.store(lambda s: s.get_submission(first.id))).state == "failed"
            # An explicit continuation runs it.
            h.model.enqueue("now it works")
            await h.rt.continue_queue(session.id)
            await h.state("completed")
            assert await h.pending(session.id) == []

    await scenario()


async def test_q1_pending_items_stay_pending_after_a_stop(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with Harness(tmp_path) as h:
            session = await h.session()
            await _stopped_with(h, session.id, [("next", "follow_up"), ("steer", "steering")])
            assert await h.pending(session.id) == ["steering:steer", "follow_up:next"]
            assert h.rt.running_execution(session.id) is None

    await scenario()


async def test_q1_pending_items_stay_pending_after_a_timeout(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with Harness(tmp_path, settings=RuntimeSettings(execution_timeout=30)) as h:
            session = await h.session()
            gate = Gate()
            h.model.enqueue([gate, TextDelta(text="never")])
            await h.send(session.id, "first")
            await asyncio.to_thread(gate.reached.wait_blocking, 10)
            await h.send(session.id, "next", kind="follow_up")
            assert await h.clock.next_sleep() == 30
            h.clock.advance()
            await h.state("timed_out")
            assert await h.pending(session.id) == ["follow_up:next"]

    await scenario()


async def test_g3_after_a_crash_pending_items_stay_pending_and_nothing_starts(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with Harness(tmp_path) as h:
            session = await h.session()
            # What a killed Gateway leaves: an execution still marked running, and a queued follow-up.
            sub = await h.store(lambda s: s.add_submission(session.id, _new("asked before the crash")))
            await h.store(lambda s: s.start_execution(session.id, [sub.id], record_inputs=True))
            await h.store(lambda s: s.add_submission(session.id, _new("queued", "follow_up")))
        async with Harness(tmp_path) as again:
            assert await again.pending(session.id) == ["follow_up:queued"]
            executions = await again.store(lambda s: s.list_executions(session.id))
            assert [e.state for e in executions] == ["interrupted"]
            assert again.model.requests == []  # nothing was auto-run
            texts = await again.texts(session.id)
            assert texts[-1].startswith("notice:The Gateway stopped while this response was running")

    await scenario()


async def test_p7_after_a_crash_a_scheduled_run_that_had_not_begun_runs_and_a_chat_is_interrupted(
    tmp_path: Path,
) -> None:
    async def scenario() -> None:
        origin = Origin(kind="schedule", name="digest")
        async with Harness(tmp_path) as h:
            # What a Gateway killed right after taking the work leaves: executions running, nothing of them
            # recorded yet: a schedule's run (unattended) and a person's chat.
            run = await h.session(kind="background", origin=origin)
            chat = await h.session()
            for session, text in ((run, "write the digest"), (chat, "hello")):
                await h.store(functools.partial(_taken, session_id=session.id, text=text))
        async with Harness(tmp_path) as again:
            again.model.enqueue("the digest")
            await again.state("completed")
            executions = await again.store(lambda s: s.list_executions(run.id))
            assert [e.state for e in executions] == ["completed"]
            assert await again.texts(run.id) == ["user:write the digest", "assistant:the digest"]
            assert len(again.model.requests) == 1  # the run's prompt, once; the chat is not run (G3)
            chats = await again.store(lambda s: s.list_executions(chat.id))
            assert [e.state for e in chats] == ["interrupted"]

    await scenario()


async def test_r4_pending_items_run_after_an_automatic_compaction(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with Harness(tmp_path, settings=RuntimeSettings(budget_tokens=50, keep_fraction=0.1)) as h:
            session = await h.session()
            h.model.enqueue("a" * 400)
            await h.send(session.id, "x" * 400)
            await h.state("completed")
            h.model.enqueue("summary of it all", "fresh answer")
            await h.send(session.id, "more")
            await h.state("completed")
            texts = await h.texts(session.id)
            assert "compaction:summary of it all" in texts
            assert texts[-1] == "assistant:fresh answer"
            assert h.model.requests[-1].messages[0].text.endswith("summary of it all")

    await scenario()


def _taken(store: SessionStore, *, session_id: str, text: str) -> None:
    """An item queued and taken by an execution that records nothing more (what a killed Gateway leaves)."""
    sub = store.add_submission(session_id, _new(text))
    store.start_execution(session_id, [sub.id], record_inputs=True)


def _new(text: str, kind: SubmissionKind = "prompt") -> NewSubmission:
    return NewSubmission(kind=kind, text=text)


async def test_m2_a_session_whose_model_is_gone_fails_with_a_clear_error_and_keeps_its_queue(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with Harness(tmp_path) as h:
            # The real registry of a profile whose config.toml no longer has the session's provider.
            assert h.deps is not None
            h.deps.models = ModelRegistry({}, instances={"offline": h.model})
            session = await h.session(provider="work", model="m")
            first = await h.send(session.id, "hello")
            failed = await h.state("failed")
            assert "'work'" in (failed.error or "")  # the error names what is missing
            second = await h.send(session.id, "sent while broken", kind="follow_up")
            await h.state("failed")
            outcomes = await h.store(lambda s: [s.get_submission(first.id), s.get_submission(second.id)])
            assert [o.state for o in outcomes] == ["failed", "failed"]  # each keeps its own outcome
            texts = await h.texts(session.id)
            assert [t for t in texts if t.startswith("user:")] == ["user:hello", "user:sent while broken"]  # kept
            assert [t.split(":")[0] for t in texts] == ["user", "notice", "user", "notice"]  # each failure told (U2)

    await scenario()
