"""Session titles (U1): named from the first message when it is accepted, then, once the first answer is
recorded, renamed by the model in the background.

The model's step never blocks the session: it runs beside it, after the first execution completed, with
a deadline of its own. Whatever goes wrong there (the model fails or says nothing usable, the execution
failed or was stopped, the Gateway closes) keeps the first title; a title the user changed in between is
never overwritten. Only chats are renamed by the model (Background sessions are named by what started
them, or their first prompt).
"""

from __future__ import annotations

import asyncio
import logging

from anyy.api.events import ExecutionStateChanged
from anyy.domain.entries import EntryKind
from anyy.domain.model_io import ModelRequest, StopEvent, TextDelta, UserMessage
from anyy.domain.queue import NewSubmission
from anyy.domain.sessions import Session, SessionPatch
from anyy.domain.titles import TITLE_INSTRUCTIONS, first_title, model_title, title_transcript
from anyy.runtime.announce import Announcer
from anyy.runtime.bus import Subscription
from anyy.runtime.deps import Deps
from anyy.storage.protocol import SessionStore

log = logging.getLogger("anyy.runtime")

TITLE_TIMEOUT = 60.0  # seconds the model has to name a session; the first title stays after that
TITLE_MAX_TOKENS = 40
FIRST_TURN_WAIT = 3600.0  # seconds the model's title waits for the first turn to end; then the first title stays
_ENDED = frozenset({"completed", "failed", "interrupted", "timed_out", "budget_exhausted"})


def name_from_first(store: SessionStore, session_id: str, new: NewSubmission) -> Session | None:
    """In the store's unit of work that accepts a message: an untitled session takes its title from it.
    The session renamed, or None (it had a title, or the message has no text)."""
    session = store.get_session(session_id)
    title = first_title(new.text)
    if session.title or not title:
        return None
    return store.update_session(session_id, SessionPatch(title=title))


class Titles:
    """The model's titles being made, one background task per newly named chat."""

    def __init__(self, deps: Deps) -> None:
        self.deps = deps
        self._announce = Announcer(deps)
        self._tasks: set[asyncio.Task[None]] = set()

    def refine_after(self, session: Session, submission_id: str) -> None:
        """Once the execution that takes ``submission_id`` completes, ask the model for a better title.
        Subscribed now, before that execution can start, so its end cannot be missed."""
        if session.kind != "chat":
            return
        events = self.deps.bus.subscribe(session.id, states_only=True)  # its end only: nothing else is built
        task = asyncio.create_task(self._refine(events, session.id, submission_id, session.title))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def idle(self) -> None:
        """Return once the titles being made now are done (or given up)."""
        await asyncio.gather(*list(self._tasks), return_exceptions=True)

    async def aclose(self) -> None:
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def _refine(self, events: Subscription, session_id: str, submission_id: str, first: str) -> None:
        try:
            outcome = await asyncio.wait_for(_outcome(events, submission_id), FIRST_TURN_WAIT)
        except TimeoutError:
            return  # the first turn never ended here (another Gateway ran it, or it waits on a question)
        finally:
            events.close()
        if outcome != "completed":
            return
        try:
            title = await asyncio.wait_for(self._ask(session_id), TITLE_TIMEOUT)
        except Exception as exc:  # the model failed, was too slow, or the session went: the first title stays
            log.info("session %s keeps its first title: %s", session_id, exc)
            return
        if title and title != first:
            renamed = await self.deps.owner.call(lambda s: _replace(s, session_id, first, title))
            if renamed is not None:
                self._announce.renamed(renamed)

    async def _ask(self, session_id: str) -> str:
        session, transcript = await self.deps.owner.call(lambda s: _first_exchange(s, session_id))
        if not transcript:
            return ""
        provider_name, model = self.deps.models.resolve(session.provider, session.model, None)
        request = ModelRequest(
            model=model,
            system=TITLE_INSTRUCTIONS,
            messages=(UserMessage(text=transcript),),
            max_tokens=TITLE_MAX_TOKENS,
        )
        parts: list[str] = []
        async for event in (await self.deps.models.provider(provider_name)).stream(request):
            if isinstance(event, TextDelta):
                parts.append(event.text)
            elif isinstance(event, StopEvent) and event.reason not in ("end", "length"):
                return ""
        return model_title("".join(parts))


async def _outcome(events: Subscription, submission_id: str) -> str:
    """How the execution that took the submission ended (suspended on a question, it goes on waiting)."""
    while True:
        event = await events.get()
        if isinstance(event, ExecutionStateChanged) and submission_id in event.submission_ids and event.state in _ENDED:
            return event.state


def _first_exchange(store: SessionStore, session_id: str) -> tuple[Session, str]:
    """The session, and its first user message with the first answer after it, as the model reads them."""
    session = store.get_session(session_id)
    question = answer = ""
    for entry in store.path(session_id):
        if entry.kind == EntryKind.USER and not question:
            question = entry.text
        elif entry.kind == EntryKind.ASSISTANT and question and entry.text.strip():
            answer = entry.text
            break
    return session, title_transcript(question, answer) if question else ""


def _replace(store: SessionStore, session_id: str, first: str, title: str) -> Session | None:
    """The model's title, unless the title is no longer the first one (renamed meanwhile)."""
    if store.get_session(session_id).title != first:
        return None
    return store.update_session(session_id, SessionPatch(title=title))
