"""Methods on sessions: create, read, list, history, tree, search, rename, send, stop, answer, navigate,
compact, settings, export, fork, delete."""

from __future__ import annotations

import msgspec

from anyy.api import methods as api
from anyy.api import sessions as wire
from anyy.api.entries import EntryView
from anyy.api.params import (
    AnswerParams,
    CreateParams,
    ExecutionRef,
    ExportParams,
    FilesDiffParams,
    ForkParams,
    ListParams,
    NavigateParams,
    NewSessionParams,
    PageParams,
    RenameParams,
    SearchParams,
    SendParams,
    SessionRef,
    SettingsParams,
)
from anyy.domain.entries import Attachment
from anyy.domain.errors import InvalidInput, NotFound
from anyy.domain.queue import NewSubmission
from anyy.domain.sessions import NewSession, Page, Session
from anyy.gateway.attachment_checks import refuse_unreadable
from anyy.gateway.state import Connection, Gateway
from anyy.gateway.table import TABLE
from anyy.runtime import views
from anyy.runtime.assembly import new_session
from anyy.runtime.runtime import chosen_model
from anyy.storage import reads
from anyy.storage.protocol import SessionStore


async def _view(gw: Gateway, session_id: str) -> wire.SessionView:
    state = await gw.runtime.state(session_id)
    waiting = state.waiting
    return wire.SessionView(
        session=views.session(state.session),
        running_execution=await gw.runtime.running_anywhere(session_id),
        live_text=gw.runtime.live_text(session_id),
        waiting_question=None
        if waiting is None
        else wire.WaitingQuestion(execution_id=waiting.execution_id, entry_id=waiting.entry_id, question=waiting.text),
        context_tokens=state.context_tokens,
        context_budget=gw.runtime.deps.settings.budget_tokens,
        retry_wait=_retry_view(gw, session_id),
        blocked=blocked_view(gw.runtime.blocked(session_id)),
        running_tools=[
            wire.RunningTool(call_id=t.call_id, name=t.name, arguments=t.arguments, parent_call_id=t.parent_call_id)
            for t in gw.runtime.running_tools(session_id)
        ],
    )


def blocked_view(found: tuple[str, str, str, float] | None) -> wire.BlockedView | None:
    """The runtime's word on an end not written yet (D1), as clients see it."""
    if found is None:
        return None
    execution_id, state, error, seconds = found
    return wire.BlockedView(execution_id=execution_id, state=state, error=error, seconds=round(seconds, 3))  # type: ignore[arg-type]


def _retry_view(gw: Gateway, session_id: str) -> wire.RetryView | None:
    found = gw.runtime.retry_wait(session_id)
    if found is None:
        return None
    waiting, left = found
    return wire.RetryView(
        execution_id=waiting.execution_id,
        attempt=waiting.attempt,
        of=waiting.of,
        seconds_left=round(left, 3),
        error=waiting.error,
    )


@TABLE.method(api.SESSION_CREATE)
async def create(gw: Gateway, conn: Connection | None, p: CreateParams) -> wire.Session:
    """Create a session with the profile's settings (provider, model, effort, tools, queue modes) and the
    given role, which must exist in the profile's roles/ (its identity and Soul only: never tools). Its
    ``workspace`` (W1) is the directory its tools work in: absolute, existing on the Gateway's host, under
    the profile's ``[workspaces] roots`` when it lists any; kept canonical (symbolic links followed)."""
    config = gw.profile.load_config()
    gw.profile.load_role(p.role)  # an unknown role is a clear error listing the roles
    spec = new_session(config, role=p.role, kind=p.kind, title=p.title)
    spec = msgspec.structs.replace(spec, workspace=p.workspace)
    return views.session(await gw.runtime.create_session(spec))


@TABLE.method(api.SESSION_GET)
async def get(gw: Gateway, conn: Connection | None, p: SessionRef) -> wire.SessionView:
    """A session's settings, its head, the execution running now (if any) with its streamed text, the
    question an execution waits on and the retry wait in progress (if any), so a client opening the session
    can offer the answer or show the countdown, and the context fill of the last response."""
    return await _view(gw, p.session_id)


@TABLE.method(api.SESSION_LIST)
async def list_(gw: Gateway, conn: Connection | None, p: ListParams) -> wire.Page[wire.Session]:
    """Sessions, most recent first, by pages: ``kind`` "chat" (the Chats list) or "background" (the
    Background list), or both, each with a preview (its last message, cut short); each Background
    session also with its ``activity`` (K4): what it is doing, how its last execution ended, how many
    tasks it delegated. Pass back ``next_cursor`` for the next page; pages stay stable while sessions
    are created."""

    def listed(store: SessionStore) -> Page[Session]:
        return reads.with_previews(store, store.list_sessions(kind=p.kind, limit=p.limit, cursor=p.cursor))

    page = await gw.store(listed)
    return wire.Page(items=[views.session(found) for found in page.items], next_cursor=page.next_cursor)


@TABLE.method(api.SESSION_HISTORY)
async def history(gw: Gateway, conn: Connection | None, p: PageParams) -> wire.Page[EntryView]:
    """The current path (root to head), newest first, by pages."""
    return views.entry_page(await gw.store(lambda s: s.history(p.session_id, limit=p.limit, cursor=p.cursor)))


@TABLE.method(api.SESSION_TREE)
async def tree(gw: Gateway, conn: Connection | None, p: SessionRef) -> wire.TreeView:
    """The whole tree of the session: every branch, labels, and where the head is."""
    return views.convert(await gw.store(lambda s: s.tree(p.session_id)), wire.TreeView)


@TABLE.method(api.SESSION_SEARCH)
async def search(gw: Gateway, conn: Connection | None, p: SearchParams) -> list[wire.SearchHit]:
    """Full-text search over messages (every word must match; "quoted words" as a phrase; word* as a
    prefix), in all sessions, one kind, or one session's whole conversation."""
    hits = await gw.store(lambda s: s.search(p.query, kind=p.kind, session_id=p.session_id, limit=p.limit))
    return views.convert(hits, list[wire.SearchHit])


@TABLE.method(api.SESSION_RENAME)
async def rename(gw: Gateway, conn: Connection | None, p: RenameParams) -> wire.Session:
    """Change a session's title."""
    return views.session(await gw.runtime.rename(p.session_id, p.title))


@TABLE.method(api.SESSION_SEND)
async def send(gw: Gateway, conn: Connection | None, p: SendParams) -> wire.Submission:
    """Send a prompt, a steering message or a follow-up. The submission is on disk before this answers;
    it starts at once if the session is idle, else it waits in its queue (steering is read at the next
    checkpoint, a follow-up when the response ends). With ``idempotency_key``, a send repeated after a
    lost reply returns the submission the first one made (whatever became of it) and adds nothing.

    With ``new`` instead of ``session_id``, the message is a new session's first (U1): the session (its
    role, provider, model, effort and tools checked first) and the submission are written together, or
    nothing is; the submission names the session made. Retried with the same key, it returns that
    submission, and no second session is made."""
    new = NewSubmission(
        kind=p.kind, text=p.text, attachments=views.convert(p.attachments, list[Attachment]), key=p.idempotency_key
    )
    if (p.session_id is None) == (p.new is None):
        raise InvalidInput(
            "session.send needs exactly one of session_id (the session to send to) and new (a session to "
            "create with this message)"
        )
    if p.new is None:
        if new.attachments:
            found = await gw.store(lambda s: s.get_session(p.session_id or ""))
            refuse_unreadable(gw.runtime.deps.models, found.provider, found.model, new.attachments)
        return views.submission(await gw.runtime.submit(p.session_id or "", new))
    spec = _new_spec(gw, p.new)
    refuse_unreadable(gw.runtime.deps.models, spec.provider, spec.model, new.attachments)
    _, submission = await gw.runtime.start_session(spec, new)
    return views.submission(submission)


def _new_spec(gw: Gateway, p: NewSessionParams) -> NewSession:
    """The session ``session.send`` creates: the profile's settings, the client's choices over them."""
    gw.profile.load_role(p.role)  # an unknown role is a clear error listing the roles
    spec = new_session(gw.profile.load_config(), role=p.role, kind=p.kind, title=p.title)
    provider, model, effort = chosen_model(gw.runtime.deps.models, spec, p.provider, p.model, p.effort)
    tools = dict(spec.tools)
    if p.tools is not None:
        tools["enabled"] = list(p.tools)
    if p.codemode is not None:
        tools["codemode"] = p.codemode
    return msgspec.structs.replace(
        spec, provider=provider, model=model, effort=effort, tools=tools, workspace=p.workspace
    )


@TABLE.method(api.SESSION_STOP)
async def stop(gw: Gateway, conn: Connection | None, p: ExecutionRef) -> wire.StopResult:
    """Stop the execution the caller saw running (by its id). Pending items are kept and nothing new
    starts. A stop that arrives after that execution ended does nothing: it never stops a later turn."""
    return wire.StopResult(stopped=await gw.runtime.stop(p.session_id, p.execution_id))


@TABLE.method(api.SESSION_RETRY_CANCEL)
async def cancel_retry(gw: Gateway, conn: Connection | None, p: ExecutionRef) -> wire.StopResult:
    """Cancel only the wait before an automatic retry; the execution ends as interrupted, the queue
    stays as it is. ``stopped`` is False when that execution was not waiting."""
    return wire.StopResult(stopped=await gw.runtime.cancel_retry_wait(p.session_id, p.execution_id))


@TABLE.method(api.SESSION_RETRY_NOW)
async def retry_now(gw: Gateway, conn: Connection | None, p: ExecutionRef) -> wire.StopResult:
    """Cut the wait before an automatic retry short: the model is called again at once (the attempt
    counts as one of the retries). ``stopped`` (the wait ended) is False when that execution was not
    waiting."""
    return wire.StopResult(stopped=await gw.runtime.retry_now(p.session_id, p.execution_id))


@TABLE.method(api.SESSION_EXECUTION)
async def execution(gw: Gateway, conn: Connection | None, p: ExecutionRef) -> wire.Execution:
    """One execution: its state, the submissions it answers, how many passes (model calls) it made,
    its error or note, when it started and ended."""
    found = await gw.store(lambda s: s.get_execution(p.execution_id))
    if found.session_id != p.session_id:
        raise NotFound(f"no execution {p.execution_id!r} in session {p.session_id!r}")
    return views.execution(found)


@TABLE.method(api.SESSION_ANSWER)
async def answer(gw: Gateway, conn: Connection | None, p: AnswerParams) -> None:
    """Answer the question a suspended execution asked (a clarification); it resumes."""
    await gw.runtime.answer(p.session_id, p.execution_id, p.text)


@TABLE.method(api.SESSION_NAVIGATE)
async def navigate(gw: Gateway, conn: Connection | None, p: NavigateParams) -> wire.NavigateResult:
    """Move the head (durably) to an entry of the tree; ``before`` moves to just before a user message
    and returns its text as ``draft``; ``summarize`` carries a summary of the branch left (applied only
    if the model finished it). Starts no response; needs an idle session. ``files`` (W3): ``preview`` moves
    nothing and lists what restoring the workspace to the entry's state would add, change and remove, and
    the files changed by hand since the agent's last capture; ``restore`` moves and restores them, keeping
    hand-edited files unless ``overwrite_hand_edits`` (the state left is captured first: it can be restored).
    ``conversation: false`` with ``files: restore`` restores the files only: the head stays where it is."""
    result = await gw.runtime.navigate(
        p.session_id,
        p.entry_id,
        summarize=p.summarize,
        before=p.before,
        files=p.files,
        overwrite_hand_edits=p.overwrite_hand_edits,
        conversation=p.conversation,
    )
    return views.convert(result, wire.NavigateResult)


@TABLE.method(api.SESSION_COMPACT)
async def compact(gw: Gateway, conn: Connection | None, p: SessionRef) -> wire.CompactResult:
    """Summarise the older context now. ``applied`` is False (with a notice event saying why) when the
    summary failed, was cut off or empty: then nothing changed. Needs an idle session."""
    return wire.CompactResult(applied=await gw.runtime.compact(p.session_id))


@TABLE.method(api.SESSION_SETTINGS)
async def settings(gw: Gateway, conn: Connection | None, p: SettingsParams) -> wire.Session:
    """Change this session's provider, model or effort (others keep theirs); used from the next model
    call, and recorded as a model-change entry. ``workspace`` moves the session to another directory (W1),
    checked as at creation; only while it is idle (nothing running, waiting or queued): else a conflict,
    and nothing changes."""
    if p.workspace is not None:
        session = await gw.runtime.set_workspace(p.session_id, p.workspace)
        if p.provider is None and p.model is None and p.effort is None:
            return views.session(session)
    session = await gw.runtime.set_model(p.session_id, provider=p.provider, model=p.model, effort=p.effort)
    return views.session(session)


@TABLE.method(api.SESSION_EXPORT)
async def export(gw: Gateway, conn: Connection | None, p: ExportParams) -> wire.ExportResult:
    """The session as JSONL (the session, then every entry of its tree, parents before children, branch by
    branch) or Markdown (the current path): exactly what ``anyy sessions export`` writes."""
    content = await gw.store(lambda s: reads.export_text(s, p.session_id, p.format))
    return wire.ExportResult(format=p.format, content=content)


@TABLE.method(api.SESSION_FORK)
async def fork(gw: Gateway, conn: Connection | None, p: ForkParams) -> wire.ForkResult:
    """A new conversation from a chosen point (O(1): nothing is copied), with that path's history and
    labels; queues and running work are not copied. The original's running work is captured first;
    once the fork is on disk it is stopped and settled (F2). If settling fails, the fork stays.
    ``workspace_copy`` (W3): ``worktree`` (a git worktree of the workspace's repository, carrying its
    uncommitted changes) or ``copy`` (a plain copy of the folder), made next to the workspace; the fork works
    there, its files as they were at the fork's point. Deleting the fork removes that folder."""
    forked = await gw.runtime.fork(
        p.session_id, p.entry_id, before=p.before, title=p.title, workspace_copy=p.workspace_copy
    )
    return views.convert(forked, wire.ForkResult)


@TABLE.method(api.SESSION_DELETE)
async def delete(gw: Gateway, conn: Connection | None, p: SessionRef) -> None:
    """Delete a conversation. History that another session (a fork) still reaches is kept. With work
    unfinished (running, waiting for an answer, or queued) it is a conflict, and nothing is stopped or
    deleted."""
    await gw.runtime.delete(p.session_id)


@TABLE.method(api.SESSION_FILES_DIFF)
async def files_diff(gw: Gateway, conn: Connection | None, p: FilesDiffParams) -> wire.FilesDiff:
    """What the agent changed in the session's workspace (W3), from its file captures: in the turn that made
    ``entry_id``; from the state at ``since`` to ``entry_id`` (default: the head); or, with neither, over the
    whole path to the head. A summary (added, changed, removed) and a unified diff."""
    return await gw.runtime.files_diff(p.session_id, entry_id=p.entry_id, since=p.since)
