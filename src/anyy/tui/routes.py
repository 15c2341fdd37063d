"""The Gateway's events, each routed by its type to the part of the TUI that owns what it changes: the
conversation (streamed text, tool activity), the history (recorded entries), the session state (what
runs, waits or is queued; the widgets watching it redraw themselves)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import msgspec

from anyy.api.events import (
    EntriesAppended,
    ExecutionStateChanged,
    Notice,
    QueueChanged,
    RetryWaiting,
    SessionRenamed,
    TextDeltaEvent,
    ToolFinished,
    ToolStarted,
)
from anyy.client.protocol import Event
from anyy.tui.history import ASK_USER, tool_outcome
from anyy.tui.host import Host
from anyy.tui.state import RetryWait, Waiting

ENDED = frozenset({"completed", "failed", "interrupted", "timed_out", "suspended", "cancelled", "budget_exhausted"})

Route = Callable[[Any], Awaitable[None]]


class EventRoutes:
    def __init__(self, host: Host) -> None:
        self.host = host
        self.state = host.state
        self.table: dict[type[Any], Route] = {
            TextDeltaEvent: self.text_delta,
            ExecutionStateChanged: self.execution_state,
            RetryWaiting: self.retry_wait,
            ToolStarted: self.tool_started,
            ToolFinished: self.tool_finished,
            EntriesAppended: self.entries_appended,
            QueueChanged: self.queue_changed,
            Notice: self.notice,
            SessionRenamed: self.renamed,
        }

    async def route(self, event: Event) -> None:
        """The event's handler, if the TUI shows what it is about (thinking deltas are not shown)."""
        handler = self.table.get(type(event))
        if handler is not None:
            await handler(event)

    async def text_delta(self, event: TextDeltaEvent) -> None:
        self.state.retrying, self.state.retry = None, None
        await self.host.conversation.stream_delta(event.execution_id, event.text)

    async def retry_wait(self, event: RetryWaiting) -> None:
        self.state.retrying = event.execution_id
        self.state.retry = RetryWait(
            execution_id=event.execution_id,
            attempt=event.attempt,
            of=event.of,
            seconds_left=event.delay,
            error=event.error,
        )
        # Said once, by the countdown above the editor (with the error): not a line per attempt.

    async def tool_started(self, event: ToolStarted) -> None:
        if event.name == ASK_USER:  # the question entry says it
            return
        conversation = self.host.conversation
        await conversation.end_stream()
        await conversation.tool_started(event.call_id, event.name, event.arguments, parent=event.parent_call_id)

    async def tool_finished(self, event: ToolFinished) -> None:
        outcome = tool_outcome(is_error=event.is_error, synthetic=event.synthetic)
        self.host.conversation.tool_finished(
            event.call_id, outcome, is_error=event.is_error, parent=event.parent_call_id
        )

    async def entries_appended(self, event: EntriesAppended) -> None:
        await self.host.history.appended(event.entries)

    async def queue_changed(self, event: QueueChanged) -> None:
        self.state.queue = event.pending

    async def renamed(self, event: SessionRenamed) -> None:
        session = self.state.session
        if session is not None:
            self.state.session = msgspec.structs.replace(session, title=event.title)

    async def notice(self, event: Notice) -> None:
        await self.host.say(event.text)

    async def execution_state(self, event: ExecutionStateChanged) -> None:
        state, execution = event.state, event.execution_id
        asked = self.state.waiting
        if state != "retry_wait" and self.state.retry is not None and self.state.retry.execution_id == execution:
            self.state.retry = None
        if state != "suspended" and asked is not None and asked.execution_id == execution:
            self.state.waiting = None
        if state in ("running", "retry_wait"):
            self.state.running = execution
            self.state.retrying = execution if state == "retry_wait" else None
        elif state in ENDED and execution == self.state.running:
            self.state.running, self.state.retrying = None, None
            await self._ended(execution, state, event.error)
        elif state == "interrupted" and asked is not None and asked.execution_id == execution:
            await self.host.say("Stopped; the agent's question is left unanswered.")
        if state == "suspended" and event.question is not None:
            question = event.question
            self.state.waiting = Waiting(execution_id=execution, entry_id=question.entry_id, question=question.text)

    async def _ended(self, execution: str, state: str, error: str | None) -> None:
        await self.host.conversation.end_stream(note=" *(interrupted)*" if state == "interrupted" else "")
        if state == "failed":
            conversation = self.host.conversation
            if error and conversation.said_already(error):
                return  # the failure's recorded notice (appended just before) already says it: one line
            await self.host.say(f"The response failed: {error}")
            if error:
                conversation.remember_said(error)  # a notice of it recorded later is not said again
        elif state == "interrupted":
            await self.host.say("Stopped; pending items are kept.")
