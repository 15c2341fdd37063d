"""How ``anyy chat`` follows *its own* turn, even when other clients use the session meanwhile (SPEC C3):

- It subscribes to the session's events, then sends its message with ``session.send``; the reply is the
  submission, durable in the Gateway from then on.
- It waits for that submission's outcome with ``session.wait`` (by submission id, so later turns of the
  session never answer for it; in slices when there is no ``--timeout``).
- Streaming (on a terminal): each ``execution_state`` event names the submissions its execution took, so
  the execution that answers the message is the one whose event names its submission; only that
  execution's ``text_delta`` events are written.
- The recorded answer (``--json``, and the output off a terminal) is read from ``session.history``: the
  assistant entries after the submission's own user entry, up to the moment its outcome was recorded.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from anyy.api import methods as m
from anyy.api.entries import AssistantData, EntryView, Usage
from anyy.api.events import EntriesAppended, ExecutionStateChanged, Notice, RetryWaiting, RuntimeEvent, TextDeltaEvent
from anyy.api.params import PageParams, WaitParams
from anyy.api.sessions import Submission
from anyy.client.protocol import Reply
from anyy.client.sync import Client

# The submission's state once session.wait returns -> (result word, exit status).
SETTLED = frozenset(
    {"completed", "suspended", "failed", "interrupted", "cleared", "cancelled", "timed_out", "budget_exhausted"}
)
WAIT_SLICE = 300.0  # seconds per session.wait call when the caller set no timeout
REPLY_GRACE = 10.0  # how much later than the wait's end the Gateway's reply may come
HISTORY_PAGE = 100


@dataclass
class Streamer:
    """Writes the text deltas of the execution that took ``submission_id``, and only those."""

    submission_id: str
    write: Callable[[str], None]
    mine: str | None = None
    streamed: str = ""
    _pass_ended: bool = False

    def on_event(self, event: RuntimeEvent) -> None:
        if isinstance(event, ExecutionStateChanged) and self.submission_id in event.submission_ids:
            self.mine = event.execution_id
        elif isinstance(event, TextDeltaEvent) and event.execution_id == self.mine:
            self._emit(event.text)
        elif isinstance(event, EntriesAppended) and self.mine is not None:
            self._pass_ended = True

    def _emit(self, text: str) -> None:
        if not text:
            return
        if self._pass_ended and self.streamed and not self.streamed.endswith("\n"):
            text = "\n" + text
        self._pass_ended = False
        self.streamed += text
        self.write(text)


class EventSink(Protocol):
    def on_event(self, event: RuntimeEvent) -> None: ...


@dataclass
class Follower:
    """What ``anyy chat`` does with its session's events while it waits: the streamer's text (on a
    terminal), one line on stderr while a failed model call of *its* execution waits for its automatic
    retry (R3), and the session's error notices on stderr (an end that cannot be written on a full disk
    keeps the turn waiting, D1: the person is told why and what to do)."""

    submission_id: str
    streamer: Streamer | None
    say: Callable[[str], None]
    mine: str | None = None

    def on_event(self, event: RuntimeEvent) -> None:
        if self.streamer is not None:
            self.streamer.on_event(event)
        if isinstance(event, ExecutionStateChanged) and self.submission_id in event.submission_ids:
            self.mine = event.execution_id
        elif isinstance(event, Notice) and event.level == "error":
            self.say(event.text)
        elif isinstance(event, RetryWaiting) and event.execution_id == self.mine:
            self.say(
                f"retrying in {event.delay:.0f} s, attempt {event.attempt} of {event.of} "
                f"(the model provider said: {event.error}); Ctrl+C stops waiting, the Gateway goes on"
            )


@dataclass
class Waited:
    submission: Submission
    timed_out: bool  # the caller's timeout passed before an outcome (the work goes on)


def wait_for_outcome(
    client: Client, submission: Submission, timeout: float | None, streamer: EventSink | None
) -> Waited:
    """Wait for this submission's outcome (or its suspension on a question) with session.wait, feeding
    the streamer with the events that arrive meanwhile."""
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        left = WAIT_SLICE if deadline is None else max(deadline - time.monotonic(), 0.0)
        slice_ = min(left, WAIT_SLICE)
        wait_id = client.request(m.SESSION_WAIT, WaitParams(submission_id=submission.id, timeout=slice_))
        while True:
            try:
                message = client.receive(slice_ + REPLY_GRACE)
            except TimeoutError:
                return Waited(submission, timed_out=True)  # the Gateway did not even answer the wait
            if not isinstance(message, Reply):
                if streamer is not None:
                    streamer.on_event(message)
            elif message.id == wait_id:
                submission = message.result(m.SESSION_WAIT.result)
                break
        if submission.state in SETTLED:
            return Waited(submission, timed_out=False)
        if deadline is not None and time.monotonic() >= deadline:
            return Waited(submission, timed_out=True)


@dataclass
class Recorded:
    response: str
    passes: int
    question: str | None
    usage: Usage | None = None  # the turn's tokens, summed over its model calls
    context_tokens: int | None = None  # what its last model call re-read (the context size now)
    cost: int | None = None  # nano-dollars of its priced model calls (Y3); None: none was priced
    unpriced: int = 0  # its model calls that had no price


NOTHING = Recorded(response="", passes=0, question=None)


def _usage_of(assistant: list[EntryView]) -> tuple[Usage | None, int | None]:
    reported = [e.data.usage for e in assistant if isinstance(e.data, AssistantData) and e.data.usage is not None]
    if not reported:
        return None, None
    total = Usage(
        input=sum(u.input for u in reported),
        output=sum(u.output for u in reported),
        cache_read=sum(u.cache_read for u in reported),
        cache_write=sum(u.cache_write for u in reported),
    )
    return total, reported[-1].context_tokens


def _after(client: Client, session_id: str, entry_id: int) -> list[EntryView] | None:
    """The entries after ``entry_id`` on the session's path, oldest first; None when it is not on it."""
    later: list[EntryView] = []
    cursor: str | None = None
    while True:
        page = client.call(m.SESSION_HISTORY, PageParams(session_id=session_id, limit=HISTORY_PAGE, cursor=cursor))
        for entry in page.items:  # newest first
            if entry.id == entry_id:
                return later[::-1]
            later.append(entry)
        cursor = page.next_cursor
        if cursor is None:
            return None


def recorded_answer(client: Client, session_id: str, submission: Submission) -> Recorded:
    """What the submission's execution recorded: the assistant entries after the submission's user entry
    on the session's path, up to when its outcome was recorded (later turns come after that)."""
    if submission.entry_id is None:
        return NOTHING
    later = _after(client, session_id, submission.entry_id)
    if later is None:  # the head was moved off that turn meanwhile: nothing of it is on the path
        return NOTHING
    until = submission.updated_at if submission.state in SETTLED else float("inf")
    mine = [entry for entry in later if entry.created_at <= until]
    assistant = [entry for entry in mine if entry.kind == "assistant"]
    questions = [entry.text for entry in mine if entry.kind == "question"]
    usage, context_tokens = _usage_of(assistant)
    calls = [e.data for e in assistant if isinstance(e.data, AssistantData) and e.data.usage is not None]
    priced = [d.cost for d in calls if d.cost is not None]
    return Recorded(
        cost=sum(priced) if priced else None,
        unpriced=len(calls) - len(priced),
        response="\n".join(entry.text for entry in assistant if entry.text),
        passes=len(assistant),
        question=questions[-1] if questions else None,
        usage=usage,
        context_tokens=context_tokens,
    )
