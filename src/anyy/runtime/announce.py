"""The one place session events are published from. Whatever the runtime writes to a session (entries,
queue items, an execution's state) it announces here, right after the write, with what a client needs
to show the change without asking again: the entries as views, the queue as it is now, the submissions
an execution took and the question it waits on. Nothing outside the runtime publishes session events.
Events nobody listens to are not built (no views converted, no queue read).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from anyy import api
from anyy.api.sessions import Question
from anyy.domain.entries import Entry, EntryKind
from anyy.domain.queue import Execution, Submission
from anyy.domain.sessions import Session
from anyy.runtime import views
from anyy.runtime.deps import Deps

log = logging.getLogger("anyy.runtime")


class Announcer:
    def __init__(self, deps: Deps) -> None:
        self._deps = deps

    def event(self, event: api.RuntimeEvent) -> None:
        """What needs no write: streamed text, tool activity, retry waits, notices."""
        self._deps.bus.publish(event)

    def entries(self, session_id: str, appended: Sequence[Entry], *, told: bool = False) -> None:
        """Entries just recorded, in order (nothing is said for none); ``told``: the kept context was told
        of them already, in the unit of work that wrote them."""
        if not told:
            self._deps.contexts.appended(session_id, appended)  # the kept context extends with them
        if appended and self._deps.bus.listened(session_id):
            self._deps.bus.publish(
                api.EntriesAppended(
                    session_id=session_id,
                    entry_ids=[entry.id for entry in appended],
                    entries=views.entry_views(appended),
                )
            )

    def execution(
        self,
        execution: Execution,
        *,
        error: str | None = None,
        note: str | None = None,
        question: Entry | None = None,
    ) -> None:
        """An execution's new state, with the submissions it took and, suspended, its question."""
        asked = None
        if question is not None and question.kind == EntryKind.QUESTION:
            asked = Question(entry_id=question.id, text=question.text)
        self._deps.bus.publish(
            api.ExecutionStateChanged(
                session_id=execution.session_id,
                execution_id=execution.id,
                state=execution.state,
                error=error,
                note=note,
                submission_ids=list(execution.submission_ids),
                question=asked,
            )
        )

    def renamed(self, session: Session) -> None:
        """The session's title changed (U1)."""
        if self._deps.bus.listened(session.id):
            self._deps.bus.publish(api.SessionRenamed(session_id=session.id, title=session.title))

    def queue_now(self, session_id: str, pending: Sequence[Submission]) -> None:
        """The queue changed and the writer read what stays pending in the same unit of work."""
        if self._deps.bus.listened(session_id):
            self._deps.bus.publish(api.QueueChanged(session_id=session_id, pending=views.submissions(pending)))

    async def queue(self, session_id: str) -> None:
        """The session's queue (or its settings) changed: announce the pending items as they are now."""
        if not self._deps.bus.listened(session_id):
            return  # nobody to tell: the queue is not even read
        try:
            pending = await self._deps.owner.call(lambda s: s.list_submissions(session_id))
        except Exception as exc:  # the store is closing (a shutdown): nobody is left to tell
            log.debug("queue of %s not announced: %s", session_id, exc)
            return
        self.queue_now(session_id, pending)


def question_in(entries: Sequence[Entry]) -> Entry | None:
    """The question among entries just recorded (what a suspension waits on), if any."""
    return next((entry for entry in reversed(entries) if entry.kind == EntryKind.QUESTION), None)
