"""The two queues of a session, exactly as Q6 and Q7 say: inspect, clear, steer, update, cancel, modes.

An item the agent already took can no longer be edited, steered or cancelled: that is a conflict, and a
client refreshes its view keeping the user's unsent draft. Leaving the queue keeps the recorded body.
"""

from __future__ import annotations

from typing import Annotated, Any

import msgspec

from anyy.domain.entries import Attachment
from anyy.domain.events import QueueChanged
from anyy.domain.queue import Submission, SubmissionKind
from anyy.domain.sessions import QueueMode, SessionPatch
from anyy.gateway.methods_sessions import SessionRef
from anyy.gateway.state import Connection, Gateway
from anyy.gateway.table import TABLE, Params


def _changed(gw: Gateway, session_id: str) -> None:
    gw.deps.bus.publish(QueueChanged(session_id=session_id))


@TABLE.method("session.queue.peek", SessionRef)
async def peek(gw: Gateway, conn: Connection | None, p: SessionRef) -> Submission | None:
    """The item the next checkpoint or the next response would take (steering first), or null."""
    pending = await gw.store(lambda s: s.list_submissions(p.session_id))
    return pending[0] if pending else None


@TABLE.method("session.queue.list", SessionRef)
async def list_(gw: Gateway, conn: Connection | None, p: SessionRef) -> list[Submission]:
    """Every pending item: steering first, then follow-ups and prompts, each in queue order."""
    return await gw.store(lambda s: s.list_submissions(p.session_id))


class ClearParams(Params):
    session_id: str
    kind: SubmissionKind | None = None


@TABLE.method("session.queue.clear", ClearParams)
async def clear(gw: Gateway, conn: Connection | None, p: ClearParams) -> list[Submission]:
    """Remove every pending item (or those of one kind) and return them, their bodies kept ("cleared")."""
    removed = await gw.store(lambda s: s.clear_queue(p.session_id, kind=p.kind))
    _changed(gw, p.session_id)
    return removed


class ItemRef(Params):
    submission_id: str
    version: int | None = None  # the version the client saw: a newer one is a conflict


async def _session_of(gw: Gateway, submission_id: str) -> str:
    submission = await gw.store(lambda s: s.get_submission(submission_id))
    return submission.session_id


@TABLE.method("session.queue.steer", ItemRef)
async def steer(gw: Gateway, conn: Connection | None, p: ItemRef) -> Submission:
    """Move a pending follow-up to the steering queue: it is read at the next checkpoint."""
    updated = await gw.store(lambda s: s.update_submission(p.submission_id, version=p.version, kind="steering"))
    _changed(gw, updated.session_id)
    return updated


class UpdateParams(ItemRef):
    text: str | None = None
    attachments: list[Attachment] | None = None  # null keeps them; a list replaces them


@TABLE.method("session.queue.update", UpdateParams)
async def update(gw: Gateway, conn: Connection | None, p: UpdateParams) -> Submission:
    """Edit one pending item's text and/or attachments (attachments are kept unless given)."""
    updated = await gw.store(
        lambda s: s.update_submission(p.submission_id, version=p.version, text=p.text, attachments=p.attachments)
    )
    _changed(gw, updated.session_id)
    return updated


@TABLE.method("session.queue.cancel", ItemRef)
async def cancel(gw: Gateway, conn: Connection | None, p: ItemRef) -> Submission:
    """Remove one pending item from its queue; its body is kept ("cancelled")."""
    cancelled = await gw.store(lambda s: s.cancel_submission(p.submission_id, version=p.version))
    _changed(gw, cancelled.session_id)
    return cancelled


class ModesParams(Params):
    session_id: str
    steering: QueueMode | None = None
    follow_up: QueueMode | None = None


class Modes(msgspec.Struct, kw_only=True):
    steering: QueueMode
    follow_up: QueueMode


@TABLE.method("session.queue.modes", ModesParams)
async def modes(gw: Gateway, conn: Connection | None, p: ModesParams) -> Modes:
    """Read, or set independently, how many items each checkpoint takes: "all" or "one-at-a-time". A
    mode never turns steering into follow-up."""
    changes: dict[str, Any] = {}
    if p.steering is not None:
        changes["steering_mode"] = p.steering
    if p.follow_up is not None:
        changes["follow_up_mode"] = p.follow_up
    session = await gw.store(lambda s: s.update_session(p.session_id, SessionPatch(**changes)))
    return Modes(steering=session.steering_mode, follow_up=session.follow_up_mode)


class WaitParams(Params):
    submission_id: str
    timeout: Annotated[float, msgspec.Meta(ge=0, le=3600)] = 600.0  # seconds, 0 to 3600 (wait longer in slices)


@TABLE.method("session.wait", WaitParams)
async def wait(gw: Gateway, conn: Connection | None, p: WaitParams) -> Submission:
    """Wait until this submission has an outcome (completed, failed, interrupted, timed out, cleared,
    cancelled) or is suspended on a question, at most ``timeout`` seconds; returns it as it is then. The
    wait ends, not the work: a timeout leaves the submission to the Gateway."""
    return await gw.runtime.wait_submission(p.submission_id, p.timeout)
