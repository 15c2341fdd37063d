"""``anyy chat --session ID --answer TEXT``: answer the question the session's agent waits on (an
``ask_user`` question, or an approval with ``once``/``session``/``deny``), then follow the resumed turn
like any chat: the same streaming, outcomes, exit statuses and ``--json`` record (SPEC U4, N2).

The turn followed is the one of the submission that started the suspended execution. ``session.answer``
resumes the execution in the background, so the client first waits for that execution's next state
event (subscribed before answering: it cannot be missed) and only then asks ``session.wait``, which
would otherwise still see the submission suspended on the question just answered.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from anyy.api import methods as m
from anyy.api.events import ExecutionStateChanged
from anyy.api.params import AnswerParams, ApproveParams, ExecutionRef, SessionRef, SubscribeParams
from anyy.client.protocol import Reply
from anyy.domain.errors import Conflict

if TYPE_CHECKING:
    from anyy.api.sessions import Submission
    from anyy.cli.chat_follow import EventSink
    from anyy.client.sync import Client

APPROVAL_PREFIX = "Approval needed:"
APPROVAL_DECISIONS = ("once", "session", "deny")
RESUME_TIMEOUT = 60.0


def answer_question(client: Client, session_id: str, text: str) -> tuple[str, Submission]:
    """Answer the waiting question; the execution it resumes and the submission to follow."""
    view = client.call(m.SESSION_GET, SessionRef(session_id=session_id))
    waiting = view.waiting_question
    if waiting is None:
        raise Conflict(
            f"session {session_id} is not waiting for an answer (nothing to answer): send a message with "
            f'`anyy chat --session {session_id} "TEXT"`'
        )
    execution = client.call(m.SESSION_EXECUTION, ExecutionRef(session_id=session_id, execution_id=waiting.execution_id))
    client.call(m.EVENTS_SUBSCRIBE, SubscribeParams(session_id=session_id))
    if waiting.question.startswith(APPROVAL_PREFIX):
        decision = text.strip().lower()
        if decision not in APPROVAL_DECISIONS:
            raise Conflict(
                f"session {session_id} waits for the approval of a tool call: answer with --answer once, "
                "--answer session (allow it for the rest of the session) or --answer deny"
            )
        client.call(
            m.SESSION_APPROVE,
            ApproveParams(session_id=session_id, execution_id=execution.id, decision=decision),  # type: ignore[arg-type]
        )
    else:
        client.call(m.SESSION_ANSWER, AnswerParams(session_id=session_id, execution_id=execution.id, text=text))
    return execution.id, _submission(client, execution.submission_ids[0])


def _submission(client: Client, submission_id: str) -> Submission:
    """The submission as it is now (session.wait with no wait returns it at once)."""
    from anyy.api.params import WaitParams

    return client.call(m.SESSION_WAIT, WaitParams(submission_id=submission_id, timeout=0))


def await_resumed(client: Client, execution_id: str, sink: EventSink | None) -> None:
    """Read events until the answered execution moved on from its question (its next state event);
    every event read meanwhile goes to ``sink``."""
    deadline = time.monotonic() + RESUME_TIMEOUT
    while True:
        message = client.receive(max(deadline - time.monotonic(), 0.0))
        if isinstance(message, Reply):
            continue
        if sink is not None:
            sink.on_event(message)
        if isinstance(message, ExecutionStateChanged) and message.execution_id == execution_id:
            return
