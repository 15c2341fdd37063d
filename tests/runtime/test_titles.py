"""U1: a session is named from its first message when it is accepted, then by the model after the first
answer, in the background; whatever goes wrong there keeps the first title."""

from __future__ import annotations

from pathlib import Path

from anyy.api.events import SessionRenamed
from anyy.domain.model_io import TextDelta
from anyy.domain.titles import first_title, model_title, offline_title, title_transcript
from anyy.providers.base import ProviderError
from anyy.providers.gates import Gate
from tests.runtime.harness import Harness

FIRST = "Hello, could you write a haiku about the sea for my aunt?"


async def title_of(h: Harness, session_id: str) -> str:
    title: str = (await h.store(lambda s: s.get_session(session_id))).title
    return title


async def test_u1_first_message_names_the_session_then_the_model_renames_it(tmp_path: Path) -> None:
    async with Harness(tmp_path) as h:
        session = await h.session()
        gate = Gate()
        h.model.enqueue([gate, TextDelta(text="Waves fold into foam.")])
        await h.send(session.id, FIRST + "\nShe lives by the coast.")
        assert await title_of(h, session.id) == FIRST  # at once, while the answer is still held
        gate.open()
        await h.state("completed")
        await h.rt.titles.idle()
        assert await title_of(h, session.id) == "Write a haiku about the sea"
        assert len(h.model.requests) == 1  # the turn only: the title request took no scripted response
        (asked,) = h.model.title_requests
        assert asked.messages[0].text == title_transcript(FIRST + "\nShe lives by the coast.", "Waves fold into foam.")
        # A second message renames nothing.
        h.model.enqueue("Sure.")
        await h.send(session.id, "another one please")
        await h.state("completed")
        await h.rt.titles.idle()
        assert await title_of(h, session.id) == "Write a haiku about the sea"
        assert len(h.model.title_requests) == 1


async def test_u1_a_failing_title_step_keeps_the_first_title(tmp_path: Path) -> None:
    async with Harness(tmp_path) as h:
        session = await h.session()
        h.model.enqueue("An answer.")
        h.model.enqueue_title(ProviderError("fatal", "the title model is down"))
        await h.send(session.id, "plan my week")
        await h.state("completed")
        await h.rt.titles.idle()
        assert len(h.model.title_requests) == 1
        assert await title_of(h, session.id) == "plan my week"


async def test_u1_a_failed_first_turn_is_not_sent_for_a_title(tmp_path: Path) -> None:
    async with Harness(tmp_path) as h:
        session = await h.session()
        h.model.enqueue(ProviderError("fatal", "no such model"))
        await h.send(session.id, "plan my week")
        await h.state("failed")
        await h.rt.titles.idle()
        assert h.model.title_requests == []
        assert await title_of(h, session.id) == "plan my week"


async def test_u1_a_title_given_meanwhile_is_never_overwritten(tmp_path: Path) -> None:
    async with Harness(tmp_path) as h:
        session = await h.session()
        held = Gate()
        h.model.enqueue("An answer.")
        h.model.enqueue_title([held, TextDelta(text="Model title")])
        await h.send(session.id, "plan my week")
        await h.state("completed")
        await h.rt.rename(session.id, "My week")
        held.open()
        await h.rt.titles.idle()
        assert await title_of(h, session.id) == "My week"


async def test_u1_a_session_with_a_title_keeps_it(tmp_path: Path) -> None:
    async with Harness(tmp_path) as h:
        session = await h.session(title="Named at creation")
        h.model.enqueue("An answer.")
        await h.send(session.id, "plan my week")
        await h.state("completed")
        await h.rt.titles.idle()
        assert await title_of(h, session.id) == "Named at creation"
        assert h.model.title_requests == []


def test_u1_title_rules() -> None:
    assert first_title("\n\n  Fix   the build\nsecond line") == "Fix the build"
    long = first_title("word " * 40)
    assert len(long) <= 60
    assert long.endswith("…")
    assert not long.endswith(" …")
    assert model_title('Title: "Sea haiku for an aunt."\nextra') == "Sea haiku for an aunt"
    assert model_title("## **Weekly plan**") == "Weekly plan"
    assert model_title("  \n") == ""
    assert (
        offline_title("User: please, can you fix the failing build on CI?\nAssistant: ok")
        == "Fix the failing build on CI"
    )
    assert offline_title("User: ?") == "Conversation"


async def test_u1_each_new_title_is_announced(tmp_path: Path) -> None:
    async with Harness(tmp_path) as h:
        session = await h.session()
        h.model.enqueue("An answer.")
        await h.send(session.id, "plan my week")
        first = await h.event(lambda e: isinstance(e, SessionRenamed))
        assert first == SessionRenamed(session_id=session.id, title="plan my week")
        by_model = await h.event(lambda e: isinstance(e, SessionRenamed))
        assert by_model == SessionRenamed(session_id=session.id, title="Plan my week")
        await h.rt.rename(session.id, "Week")
        by_user = await h.event(lambda e: isinstance(e, SessionRenamed))
        assert by_user == SessionRenamed(session_id=session.id, title="Week")


async def test_u1_waiting_for_the_first_answer_makes_no_event_be_built(tmp_path: Path) -> None:
    """The title waits for the first turn's end with a state watcher: while no client listens to the
    session, its other events (entries as views, the queue read again) are not built for it."""
    async with Harness(tmp_path) as h:
        assert h.deps is not None
        h.subscription.close()  # no client
        session = await h.session()
        gate = Gate()
        h.model.enqueue([gate, TextDelta(text="Waves fold into foam.")])
        await h.send(session.id, FIRST)
        assert not h.deps.bus.listened(session.id)
        gate.open()
        await h.rt.titles.idle()  # the turn ended and the title was made: the watcher saw the end
        assert await title_of(h, session.id) == "Write a haiku about the sea"
