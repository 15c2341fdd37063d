"""Methods on sessions: create, read, list, history, tree, search, rename, send, stop, answer, navigate,
compact, settings, export, fork, delete."""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from anyy.domain.entries import Attachment, Entry, EntryKind
from anyy.domain.errors import Conflict, InvalidInput, NotFound
from anyy.domain.queue import Execution, NewSubmission, Submission, SubmissionKind
from anyy.domain.search import SearchHit
from anyy.domain.sessions import Page, Session, SessionKind, SessionPatch
from anyy.domain.tree import TreeView
from anyy.gateway.state import Connection, Gateway
from anyy.gateway.table import TABLE, Params
from anyy.runtime.assembly import new_session
from anyy.runtime.runtime import NavigateResult
from anyy.storage import reads


class SessionRef(Params):
    session_id: str


class WaitingQuestion(msgspec.Struct, kw_only=True):
    """A question the model asked (ask_user) that suspends an execution until it is answered."""

    execution_id: str
    entry_id: int
    question: str


class RetryView(msgspec.Struct, kw_only=True):
    """A retry wait in progress: why, which attempt comes next, and how long is left."""

    execution_id: str
    attempt: int
    of: int
    seconds_left: float
    error: str


class SessionView(msgspec.Struct, kw_only=True):
    session: Session
    running_execution: str | None  # the execution running now, if any: what a stop would capture
    live_text: str  # what the model has streamed so far in the running pass
    waiting_question: WaitingQuestion | None = None  # set while an execution waits for an answer
    context_tokens: int | None = None  # what the model re-read for the last response on this path
    context_budget: int = 0  # the profile's compaction budget: past it, older entries are summarised
    retry_wait: RetryView | None = None  # set while the running execution waits to retry a failed model call


async def _view(gw: Gateway, session_id: str) -> SessionView:
    session, recent = await gw.store(lambda s: (s.get_session(session_id), reads.recent_state(s, session_id)))
    waiting = recent.waiting
    return SessionView(
        session=session,
        running_execution=gw.runtime.running_execution(session_id),
        live_text=gw.runtime.live_text(session_id),
        waiting_question=None if waiting is None else WaitingQuestion(**waiting._asdict()),
        context_tokens=recent.context_tokens,
        context_budget=gw.runtime.deps.settings.budget_tokens,
        retry_wait=_retry_view(gw, session_id),
    )


def _retry_view(gw: Gateway, session_id: str) -> RetryView | None:
    found = gw.runtime.retry_wait(session_id)
    if found is None:
        return None
    waiting, left = found
    return RetryView(
        execution_id=waiting.execution_id,
        attempt=waiting.attempt,
        of=waiting.of,
        seconds_left=round(left, 3),
        error=waiting.error,
    )


class CreateParams(Params):
    kind: SessionKind = "chat"
    title: str = ""
    role: str = "default"


@TABLE.method("session.create", CreateParams)
async def create(gw: Gateway, conn: Connection | None, p: CreateParams) -> Session:
    """Create a session with the profile's settings (provider, model, effort, tools, queue modes) and the
    given role, which must exist in the profile's roles/ (its identity and Soul only: never tools)."""
    config = gw.profile.load_config()
    gw.profile.load_role(p.role)  # an unknown role is a clear error listing the roles
    spec = new_session(config, role=p.role, kind=p.kind, title=p.title)
    return await gw.store(lambda s: s.create_session(spec))


@TABLE.method("session.get", SessionRef)
async def get(gw: Gateway, conn: Connection | None, p: SessionRef) -> SessionView:
    """A session's settings, its head, the execution running now (if any) with its streamed text, the
    question an execution waits on and the retry wait in progress (if any), so a client opening the session
    can offer the answer or show the countdown, and the context fill of the last response."""
    return await _view(gw, p.session_id)


class ListParams(Params):
    kind: SessionKind | None = None
    limit: int = 50
    cursor: str | None = None


@TABLE.method("session.list", ListParams)
async def list_(gw: Gateway, conn: Connection | None, p: ListParams) -> Page[Session]:
    """Sessions, most recent first, by pages: ``kind`` "chat" (the Chats list) or "background" (the
    Background list), or both. Pass back ``next_cursor`` for the next page; pages stay stable while
    sessions are created."""
    return await gw.store(lambda s: s.list_sessions(kind=p.kind, limit=p.limit, cursor=p.cursor))


class PageParams(Params):
    session_id: str
    limit: int = 50
    cursor: str | None = None


class EntryView(msgspec.Struct, kw_only=True):
    """An entry as clients read it: ``kind`` by name (user, assistant, tool_call, tool_result, question,
    answer, compaction, branch_summary, label, model_change, notice)."""

    id: int
    parent: int | None
    kind: str
    text: str
    data: dict[str, Any]
    created_at: float
    object: str | None


def entry_view(entry: Entry) -> EntryView:
    return EntryView(
        id=entry.id,
        parent=entry.parent,
        kind=entry.kind.label,
        text=entry.text,
        data=entry.data,
        created_at=entry.created_at,
        object=entry.object,
    )


@TABLE.method("session.history", PageParams)
async def history(gw: Gateway, conn: Connection | None, p: PageParams) -> Page[EntryView]:
    """The current path (root to head), newest first, by pages."""
    page = await gw.store(lambda s: s.history(p.session_id, limit=p.limit, cursor=p.cursor))
    return Page(items=[entry_view(e) for e in page.items], next_cursor=page.next_cursor)


@TABLE.method("session.tree", SessionRef)
async def tree(gw: Gateway, conn: Connection | None, p: SessionRef) -> TreeView:
    """The whole tree of the session: every branch, labels, and where the head is."""
    return await gw.store(lambda s: s.tree(p.session_id))


class SearchParams(Params):
    query: str
    kind: SessionKind | None = None
    session_id: str | None = None
    limit: int = 20


@TABLE.method("session.search", SearchParams)
async def search(gw: Gateway, conn: Connection | None, p: SearchParams) -> list[SearchHit]:
    """Full-text search over messages (every word must match; "quoted words" as a phrase; word* as a
    prefix), in all sessions, one kind, or one session's whole conversation."""
    return await gw.store(lambda s: s.search(p.query, kind=p.kind, session_id=p.session_id, limit=p.limit))


class RenameParams(Params):
    session_id: str
    title: str


@TABLE.method("session.rename", RenameParams)
async def rename(gw: Gateway, conn: Connection | None, p: RenameParams) -> Session:
    """Change a session's title."""
    return await gw.store(lambda s: s.update_session(p.session_id, SessionPatch(title=p.title)))


class SendParams(Params):
    session_id: str
    text: str
    kind: SubmissionKind = "prompt"
    attachments: list[Attachment] = []


@TABLE.method("session.send", SendParams)
async def send(gw: Gateway, conn: Connection | None, p: SendParams) -> Submission:
    """Send a prompt, a steering message or a follow-up. The submission is on disk before this answers;
    it starts at once if the session is idle, else it waits in its queue (steering is read at the next
    checkpoint, a follow-up when the response ends)."""
    new = NewSubmission(kind=p.kind, text=p.text, attachments=p.attachments)
    return await gw.runtime.submit(p.session_id, new)


class ExecutionRef(Params):
    session_id: str
    execution_id: str


class StopResult(msgspec.Struct, kw_only=True):
    stopped: bool  # False: that execution had already ended, and nothing was touched


@TABLE.method("session.stop", ExecutionRef)
async def stop(gw: Gateway, conn: Connection | None, p: ExecutionRef) -> StopResult:
    """Stop the execution the caller saw running (by its id). Pending items are kept and nothing new
    starts. A stop that arrives after that execution ended does nothing: it never stops a later turn."""
    return StopResult(stopped=await gw.runtime.stop(p.session_id, p.execution_id))


@TABLE.method("session.retry.cancel", ExecutionRef)
async def cancel_retry(gw: Gateway, conn: Connection | None, p: ExecutionRef) -> StopResult:
    """Cancel only the wait before an automatic retry; the execution ends as interrupted, the queue
    stays as it is. ``stopped`` is False when that execution was not waiting."""
    return StopResult(stopped=await gw.runtime.cancel_retry_wait(p.session_id, p.execution_id))


@TABLE.method("session.execution", ExecutionRef)
async def execution(gw: Gateway, conn: Connection | None, p: ExecutionRef) -> Execution:
    """One execution: its state, the submissions it answers, how many passes (model calls) it made,
    its error or note, when it started and ended."""
    found = await gw.store(lambda s: s.get_execution(p.execution_id))
    if found.session_id != p.session_id:
        raise NotFound(f"no execution {p.execution_id!r} in session {p.session_id!r}")
    return found


class AnswerParams(Params):
    session_id: str
    execution_id: str
    text: str


@TABLE.method("session.answer", AnswerParams)
async def answer(gw: Gateway, conn: Connection | None, p: AnswerParams) -> None:
    """Answer the question a suspended execution asked (a clarification); it resumes."""
    await gw.runtime.answer(p.session_id, p.execution_id, p.text)


class NavigateParams(Params):
    session_id: str
    entry_id: int | None
    summarize: bool = False
    before: bool = False


@TABLE.method("session.navigate", NavigateParams)
async def navigate(gw: Gateway, conn: Connection | None, p: NavigateParams) -> NavigateResult:
    """Move the head (durably) to an entry of the tree; ``before`` moves to just before a user message
    and returns its text as ``draft``; ``summarize`` carries a summary of the branch left (applied only
    if the model finished it). Starts no response; needs an idle session."""
    return await gw.runtime.navigate(p.session_id, p.entry_id, summarize=p.summarize, before=p.before)


class CompactResult(msgspec.Struct, kw_only=True):
    applied: bool


@TABLE.method("session.compact", SessionRef)
async def compact(gw: Gateway, conn: Connection | None, p: SessionRef) -> CompactResult:
    """Summarise the older context now. ``applied`` is False (with a notice event saying why) when the
    summary failed, was cut off or empty: then nothing changed. Needs an idle session."""
    return CompactResult(applied=await gw.runtime.compact(p.session_id))


class SettingsParams(Params):
    session_id: str
    provider: str | None = None
    model: str | None = None
    effort: str | None = None


@TABLE.method("session.settings", SettingsParams)
async def settings(gw: Gateway, conn: Connection | None, p: SettingsParams) -> Session:
    """Change this session's provider, model or effort (others keep theirs); used from the next model
    call, and recorded as a model-change entry."""
    return await gw.runtime.set_model(p.session_id, provider=p.provider, model=p.model, effort=p.effort)


class ExportParams(Params):
    session_id: str
    format: Literal["jsonl", "markdown"] = "jsonl"


class ExportResult(msgspec.Struct, kw_only=True):
    format: str
    content: str


@TABLE.method("session.export", ExportParams)
async def export(gw: Gateway, conn: Connection | None, p: ExportParams) -> ExportResult:
    """The session as JSONL (the session, then every entry of its tree, parents before children, branch by
    branch) or Markdown (the current path): exactly what ``anyy sessions export`` writes."""
    content = await gw.store(lambda s: reads.export_text(s, p.session_id, p.format))
    return ExportResult(format=p.format, content=content)


class ForkParams(Params):
    session_id: str
    entry_id: int | None = None  # default: the head
    before: bool = False  # fork just before this user message and return its text as a draft
    title: str | None = None


class ForkResult(msgspec.Struct, kw_only=True):
    session: Session
    draft: str | None
    interrupted: str | None  # the original's execution this fork stopped, if one was running
    settle_error: str | None = None  # the fork stays recorded even if stopping that work failed


@TABLE.method("session.fork", ForkParams)
async def fork(gw: Gateway, conn: Connection | None, p: ForkParams) -> ForkResult:
    """A new conversation from a chosen point (O(1): nothing is copied), with that path's history and
    labels; queues and running work are not copied. The original's running work is captured first;
    once the fork is on disk it is stopped and settled (F2). If settling fails, the fork stays."""
    captured = gw.runtime.running_execution(p.session_id)
    draft = None
    point = p.entry_id
    if p.before:
        if p.entry_id is None:
            raise InvalidInput("fork before which message? give entry_id with before")
        entry = await gw.store(lambda s: s.get_entry(p.session_id, p.entry_id))  # type: ignore[arg-type]
        if entry.kind != EntryKind.USER:
            raise InvalidInput("only a user message can be forked before (its text comes back as a draft)")
        draft, point = entry.text, entry.parent
        if point is None:
            session = await gw.store(lambda s: s.fork_session(p.session_id, None, title=p.title))
            session = await gw.store(lambda s: s.set_head(session.id, None))
            return ForkResult(session=session, draft=draft, interrupted=await _settle(gw, p.session_id, captured))
    session = await gw.store(lambda s: s.fork_session(p.session_id, point, title=p.title))
    settle_error = None
    try:
        interrupted = await _settle(gw, p.session_id, captured)
    except Exception as exc:  # the fork is recorded whatever happens to the old work
        interrupted, settle_error = captured, f"{type(exc).__name__}: {exc}"
    return ForkResult(session=session, draft=draft, interrupted=interrupted, settle_error=settle_error)


async def _settle(gw: Gateway, session_id: str, captured: str | None) -> str | None:
    if captured is None:
        return None
    await gw.runtime.stop(session_id, captured)
    await gw.runtime.wait_settled(session_id, captured)
    return captured


@TABLE.method("session.delete", SessionRef)
async def delete(gw: Gateway, conn: Connection | None, p: SessionRef) -> None:
    """Delete a conversation. History that another session (a fork) still reaches is kept. With work
    unfinished (running, waiting for an answer, or queued) it is a conflict, and nothing is stopped or
    deleted."""
    if gw.runtime.running_execution(p.session_id) is not None:
        raise Conflict(f"session {p.session_id} has a response running: stop it and clear its queue first")
    await gw.store(lambda s: s.delete_session(p.session_id))
