"""The runtime's writes on a session outside an execution (create, rename, fork, delete, queue edits) and
what it knows of a session beside its record (the question it waits on, the context of its last
response). Mixed into :class:`anyy.runtime.runtime.Runtime`: the Gateway's handlers only translate.
"""

from __future__ import annotations

import asyncio

import msgspec

from anyy.domain.entries import Attachment, EntryKind
from anyy.domain.errors import Conflict, InvalidInput
from anyy.domain.queue import Submission, SubmissionKind
from anyy.domain.sessions import NewSession, QueueMode, Session, SessionPatch
from anyy.runtime import workspace_forks
from anyy.runtime.actor import Actors
from anyy.runtime.announce import Announcer
from anyy.runtime.deps import Deps
from anyy.runtime.workspaces import chosen_workspace
from anyy.storage import reads
from anyy.storage.protocol import SessionStore


class Forked(msgspec.Struct, kw_only=True):
    session: Session
    draft: str | None  # the user message forked before, for the editor
    interrupted: str | None  # the original's execution this fork stopped, if one was running
    settle_error: str | None = None  # the fork stays recorded even if stopping that work failed
    workspace_copy: str | None = None  # the folder made for the fork's own copy of the workspace (W3)


class WaitingOn(msgspec.Struct, kw_only=True, frozen=True):
    """The question (ask_user) a suspended execution waits on."""

    execution_id: str
    entry_id: int
    text: str


class SessionState(msgspec.Struct, kw_only=True):
    session: Session
    waiting: WaitingOn | None  # set while an execution waits for an answer
    context_tokens: int | None  # what the model re-read for the last response on the current path


class SessionWrites:
    deps: Deps
    _announce: Announcer
    _actors: Actors

    # What the Runtime itself provides.
    def running_execution(self, session_id: str) -> str | None:
        raise NotImplementedError

    async def stop(self, session_id: str, execution_id: str) -> bool:
        raise NotImplementedError

    async def wait_settled(self, session_id: str, execution_id: str) -> None:
        raise NotImplementedError

    # -- sessions --------------------------------------------------------------------------------
    async def create_session(self, spec: NewSession) -> Session:
        spec = self.placed(spec)
        session: Session = await self.deps.owner.call(lambda s: s.create_session(spec))
        return session

    def placed(self, spec: NewSession) -> NewSession:
        """``spec`` with its workspace checked and made canonical (W1): the one it names, else the profile's
        default, else the Gateway's working directory; it must exist here and lie under the profile's roots."""
        workspace = chosen_workspace(spec.workspace, self.deps.workspaces, self.deps.workdir)
        return msgspec.structs.replace(spec, workspace=workspace)

    async def rename(self, session_id: str, title: str) -> Session:
        session: Session = await self.deps.owner.call(lambda s: s.update_session(session_id, SessionPatch(title=title)))
        self._announce.renamed(session)
        return session

    async def fork(
        self,
        session_id: str,
        entry_id: int | None = None,
        *,
        before: bool = False,
        title: str | None = None,
        workspace_copy: workspace_forks.ForkHow | None = None,
    ) -> Forked:
        """A new session from a chosen point (F1, O(1)); the original's running work is captured first and,
        once the fork is on disk, stopped and settled (F2). If settling fails, the fork stays.
        ``workspace_copy`` (W3): the fork works in its own copy of the workspace, a git worktree or a plain
        copy (:mod:`anyy.runtime.workspace_forks`), made before the fork is recorded."""
        captured = self.running_execution(session_id)
        draft, point = None, entry_id
        if before:
            if entry_id is None:
                raise InvalidInput("fork before which message? give entry_id with before")
            entry = await self.deps.owner.call(lambda s: s.get_entry(session_id, entry_id))
            if entry.kind != EntryKind.USER:
                raise InvalidInput("only a user message can be forked before (its text comes back as a draft)")
            draft, point = entry.text, entry.parent

        def make(store: SessionStore) -> Session:
            forked: Session = store.fork_session(session_id, point, title=title)
            # Before the very first message: the fork starts empty.
            return store.set_head(forked.id, None) if before and point is None else forked

        made = None
        if workspace_copy is not None:
            parent = await self.deps.owner.call(lambda s: s.get_session(session_id))
            workspace, made = await workspace_forks.make_copy(self.deps, parent, workspace_copy)
            try:
                chosen = workspace_forks.checked(self.deps, workspace)

                def make_in_copy(store: SessionStore) -> Session:
                    forked = make(store)
                    return store.update_session(forked.id, SessionPatch(workspace=chosen))

                session: Session = await self.deps.owner.call(make_in_copy)
                workspace_forks.remember(self.deps, session.id, made, workspace_copy)
            except BaseException:
                await asyncio.to_thread(workspace_forks.discard, made, workspace_copy)
                raise
            await workspace_forks.rewind_copy(self.deps, session, parent)
        else:
            session = await self.deps.owner.call(make)
        interrupted, settle_error = captured, None
        if captured is not None:
            try:
                await self.stop(session_id, captured)
                await self.wait_settled(session_id, captured)
            except Exception as exc:  # the fork is recorded whatever happens to the old work
                settle_error = f"{type(exc).__name__}: {exc}"
        copy = str(made) if made is not None else None
        return Forked(
            session=session, draft=draft, interrupted=interrupted, settle_error=settle_error, workspace_copy=copy
        )

    async def delete(self, session_id: str) -> None:
        """Delete a session; with work unfinished (running, waiting for an answer, or queued) it is a
        conflict and nothing is stopped or deleted (F3)."""
        if self.running_execution(session_id) is not None:
            raise Conflict(f"session {session_id} has a response running: stop it and clear its queue first")
        await self.deps.owner.call(lambda s: s.delete_session(session_id))
        await workspace_forks.release(self.deps, session_id)  # a fork's own copy of the workspace (W3)
        self.deps.contexts.forget(session_id)
        actor = self._actors.pop(session_id, None)
        if actor is not None:
            await actor.aclose()

    async def state(self, session_id: str) -> SessionState:
        """The session, the question a suspended execution waits on (as the runtime saw it suspend, or read
        back from the path after a restart) and the context size of the last response: one unit of work."""
        actor = self._actors.get(session_id)
        remembered = dict(actor.questions) if actor is not None else {}  # execution id -> its question

        def read(store: SessionStore) -> SessionState:
            session = store.get_session(session_id)
            recent = reads.recent_state(store, session_id)
            found = recent.waiting
            if found is None:
                return SessionState(session=session, waiting=None, context_tokens=recent.context_tokens)
            question = remembered.get(found.execution_id)
            waiting = WaitingOn(
                execution_id=found.execution_id,
                entry_id=found.entry_id if question is None else question.id,
                text=found.question if question is None else question.text,
            )
            return SessionState(session=session, waiting=waiting, context_tokens=recent.context_tokens)

        state: SessionState = await self.deps.owner.call(read)
        return state

    # -- the queue (Q3, Q6, Q7): edits of pending items, each announced ---------------------------
    async def clear_queue(self, session_id: str, kind: SubmissionKind | None = None) -> list[Submission]:
        """Remove every pending item (or those of one kind); their bodies are kept ("cleared")."""
        removed: list[Submission] = await self.deps.owner.call(lambda s: s.clear_queue(session_id, kind=kind))
        await self._announce.queue(session_id)
        return removed

    async def edit_submission(
        self,
        submission_id: str,
        *,
        version: int | None = None,
        kind: SubmissionKind | None = None,
        text: str | None = None,
        attachments: list[Attachment] | None = None,
    ) -> Submission:
        """Edit one pending item (move it to steering, change its text or attachments); a conflict once
        the agent took it or when it changed since the caller read ``version`` (Q3)."""
        updated: Submission = await self.deps.owner.call(
            lambda s: s.update_submission(submission_id, version=version, kind=kind, text=text, attachments=attachments)
        )
        await self._announce.queue(updated.session_id)
        return updated

    async def cancel_submission(self, submission_id: str, *, version: int | None = None) -> Submission:
        """Remove one pending item from its queue; its body is kept ("cancelled")."""
        cancelled: Submission = await self.deps.owner.call(
            lambda s: s.cancel_submission(submission_id, version=version)
        )
        await self._announce.queue(cancelled.session_id)
        return cancelled

    async def queue_modes(
        self, session_id: str, *, steering: QueueMode | None = None, follow_up: QueueMode | None = None
    ) -> Session:
        """Read, or set independently, how many items each checkpoint takes (Q7)."""
        patch = SessionPatch()
        if steering is not None:
            patch.steering_mode = steering
        if follow_up is not None:
            patch.follow_up_mode = follow_up
        session: Session = await self.deps.owner.call(lambda s: s.update_session(session_id, patch))
        return session
