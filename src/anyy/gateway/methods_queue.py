"""The two queues of a session, exactly as Q6 and Q7 say: inspect, clear, steer, update, cancel, modes.

An item the agent already took can no longer be edited, steered or cancelled: that is a conflict, and a
client refreshes its view keeping the user's unsent draft. Leaving the queue keeps the recorded body.
The edits are the runtime's (it writes and announces them); these handlers only translate.
"""

from __future__ import annotations

from anyy.api import methods as api
from anyy.api import sessions as wire
from anyy.api.params import ClearParams, ItemRef, ModesParams, SessionRef, UpdateParams, WaitParams
from anyy.domain.entries import Attachment
from anyy.gateway.methods_sessions import blocked_view
from anyy.gateway.state import Connection, Gateway
from anyy.gateway.table import TABLE
from anyy.runtime import views


@TABLE.method(api.QUEUE_PEEK)
async def peek(gw: Gateway, conn: Connection | None, p: SessionRef) -> wire.Submission | None:
    """The item the next checkpoint or the next response would take (steering first), or null."""
    pending = await gw.store(lambda s: s.list_submissions(p.session_id))
    return views.submission(pending[0]) if pending else None


@TABLE.method(api.QUEUE_LIST)
async def list_(gw: Gateway, conn: Connection | None, p: SessionRef) -> list[wire.Submission]:
    """Every pending item: steering first, then follow-ups and prompts, each in queue order."""
    return views.submissions(await gw.store(lambda s: s.list_submissions(p.session_id)))


@TABLE.method(api.QUEUE_CLEAR)
async def clear(gw: Gateway, conn: Connection | None, p: ClearParams) -> list[wire.Submission]:
    """Remove every pending item (or those of one kind) and return them, their bodies kept ("cleared")."""
    return views.submissions(await gw.runtime.clear_queue(p.session_id, p.kind))


@TABLE.method(api.QUEUE_STEER)
async def steer(gw: Gateway, conn: Connection | None, p: ItemRef) -> wire.Submission:
    """Move a pending follow-up to the steering queue: it is read at the next checkpoint."""
    return views.submission(await gw.runtime.edit_submission(p.submission_id, version=p.version, kind="steering"))


@TABLE.method(api.QUEUE_UPDATE)
async def update(gw: Gateway, conn: Connection | None, p: UpdateParams) -> wire.Submission:
    """Edit one pending item's text and/or attachments (attachments are kept unless given)."""
    attachments = None if p.attachments is None else views.convert(p.attachments, list[Attachment])
    updated = await gw.runtime.edit_submission(p.submission_id, version=p.version, text=p.text, attachments=attachments)
    return views.submission(updated)


@TABLE.method(api.QUEUE_CANCEL)
async def cancel(gw: Gateway, conn: Connection | None, p: ItemRef) -> wire.Submission:
    """Remove one pending item from its queue; its body is kept ("cancelled")."""
    return views.submission(await gw.runtime.cancel_submission(p.submission_id, version=p.version))


@TABLE.method(api.QUEUE_MODES)
async def modes(gw: Gateway, conn: Connection | None, p: ModesParams) -> wire.Modes:
    """Read, or set independently, how many items each checkpoint takes: "all" or "one-at-a-time". A
    mode never turns steering into follow-up."""
    session = await gw.runtime.queue_modes(p.session_id, steering=p.steering, follow_up=p.follow_up)
    return wire.Modes(steering=session.steering_mode, follow_up=session.follow_up_mode)


@TABLE.method(api.SESSION_WAIT)
async def wait(gw: Gateway, conn: Connection | None, p: WaitParams) -> wire.Submission:
    """Wait until this submission has an outcome (completed, failed, interrupted, timed out, cleared,
    cancelled) or is suspended on a question, at most ``timeout`` seconds; returns it as it is then. The
    wait ends, not the work: a timeout leaves the submission to the Gateway. When its execution ended but
    that end cannot be written (a full disk), the answer says so in ``blocked`` (the state stays ``taken``
    until it is written: again on its own once space returns); a wait during which that happens ends then."""
    submission = await gw.runtime.wait_submission(p.submission_id, p.timeout)
    view = views.submission(submission)
    view.blocked = blocked_view(gw.runtime.blocked_on(submission))
    return view
