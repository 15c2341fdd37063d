"""File captures around passes (W2), rewinds (W3) and their upkeep (W4), for the runtime.

- :func:`workspace_of` reads the folder a session's tools work in (its workspace, W1).
- :class:`PassCaptures` captures the workspace before the first tool call of a pass that may change
  files, and again after the pass; each capture is joined to an entry in the session store only once
  the capture store has it on disk (a kill in between leaves an unjoined capture, never a broken one).
- :func:`state_at` finds the workspace's state at an entry: the newest capture on the path to it.

Git runs in a worker thread (never on the event loop).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from pathlib import Path

from anyy.api.events import Notice
from anyy.api.sessions import FilesDiff, FilesRewind
from anyy.domain.entries import Entry
from anyy.domain.errors import InvalidInput, NotFound
from anyy.domain.file_captures import CaptureKind, FileCapture, NewFileCapture
from anyy.runtime.announce import Announcer
from anyy.runtime.deps import Deps
from anyy.storage.protocol import SessionStore
from anyy.workspaces.captures import CaptureError, CaptureStore, Change, RestorePlan, RestoreReport

log = logging.getLogger("anyy.runtime")

# Tools that never change the workspace: a pass calling only these is not captured.
READ_ONLY_TOOLS = frozenset({"read_file", "list_dir", "web_fetch", "ask_user", "delegate", "skill", "memory"})


async def workspace_of(deps: Deps, session_id: str) -> Path:
    """The folder ``session_id``'s tools work in: its workspace (W1), read from the store."""
    session = await deps.owner.call(lambda s: s.get_session(session_id))
    return deps.workspace_of(session)


def may_change_files(deps: Deps, name: str) -> bool:
    if name in READ_ONLY_TOOLS:
        return False
    servers = deps.tool_servers
    return servers is None or name not in servers.read_only_tools()


async def _record(deps: Deps, new: NewFileCapture) -> FileCapture:
    return await deps.owner.call(lambda s: s.add_file_capture(new))


class PassCaptures:
    """The captures of one pass: ``before`` once a tool that may change files is about to run, ``after``
    when the pass is recorded."""

    def __init__(self, deps: Deps, session_id: str, execution_id: str) -> None:
        self.deps = deps
        self.session_id = session_id
        self.execution_id = execution_id
        self.taken = False
        self.failed = ""

    async def before(self, name: str) -> None:
        store = self.deps.captures
        if store is None or self.taken or self.failed or not may_change_files(self.deps, name):
            return
        self.taken = True
        workspace = await workspace_of(self.deps, self.session_id)
        try:
            capture = await asyncio.to_thread(store.capture, workspace)
            session = await self.deps.owner.call(lambda s: s.get_session(self.session_id))
            if session.head:
                await _record(self.deps, self._new(session.head, capture.commit, "before", workspace))
        except (CaptureError, OSError) as exc:
            self._failed(exc)

    async def after(self, entries: Sequence[Entry]) -> None:
        store = self.deps.captures
        if store is None or not self.taken or self.failed or not entries:
            return
        workspace = await workspace_of(self.deps, self.session_id)
        try:
            capture = await asyncio.to_thread(store.capture, workspace)
            await _record(self.deps, self._new(entries[-1].id, capture.commit, "after", workspace))
        except (CaptureError, OSError) as exc:
            self._failed(exc)
        self.taken = False  # the next pass captures again

    def _failed(self, exc: Exception) -> None:
        """The pass goes on uncaptured; the people watching are told (a rewind there cannot restore files)."""
        self.failed = str(exc)
        log.warning("file capture of %s failed: %s", self.session_id, exc)
        text = f"The workspace's files were not captured for this step (a rewind cannot restore them): {exc}"
        Announcer(self.deps).event(Notice(session_id=self.session_id, level="warning", text=text))

    def _new(self, entry_id: int, commit: str, kind: CaptureKind, workspace: Path) -> NewFileCapture:
        return NewFileCapture(
            session_id=self.session_id,
            entry_id=entry_id,
            commit=commit,
            workspace=str(workspace),
            kind=kind,
            execution_id=self.execution_id,
        )


# -- reading the captures of a session's tree --------------------------------------------------------
def state_at(store: SessionStore, session_id: str, entry_id: int | None) -> FileCapture | None:
    """The newest capture on the path to ``entry_id`` (default: the head): the workspace's state there."""
    path = store.path(session_id, to=entry_id) if entry_id is not None else store.path(session_id)
    if not path:
        return None
    order = {entry.id: index for index, entry in enumerate(path)}
    found = store.list_file_captures(entry_ids=list(order))
    if not found:
        return None
    return max(found, key=lambda c: (order[c.entry_id], c.id))


def first_on_path(store: SessionStore, session_id: str, entry_id: int | None) -> FileCapture | None:
    path = store.path(session_id, to=entry_id) if entry_id is not None else store.path(session_id)
    order = {entry.id: index for index, entry in enumerate(path)}
    found = store.list_file_captures(entry_ids=list(order))
    return min(found, key=lambda c: (order[c.entry_id], c.id)) if found else None


def _summarised(diff: FilesDiff, changes: Sequence[Change]) -> FilesDiff:
    for change in changes:
        {"added": diff.added, "changed": diff.changed, "removed": diff.removed}[change.status].append(change.path)
    return diff


async def files_diff(
    deps: Deps, session_id: str, *, entry_id: int | None = None, since: int | None = None
) -> FilesDiff:
    """What the agent changed: in the turn (execution) that made ``entry_id``; from ``since`` to ``entry_id``
    (or the head); or, with neither, over the whole path to the head."""
    captures = _captures(deps)

    def read(store: SessionStore) -> tuple[FileCapture | None, FileCapture | None]:
        store.get_session(session_id)
        if entry_id is not None and since is None:
            entry = store.get_entry(session_id, entry_id)
            turn = _turn_of(store, session_id, entry)
            if turn:
                return turn[0], turn[-1]
            return state_at(store, session_id, entry_id), state_at(store, session_id, entry_id)
        if since is not None:
            return state_at(store, session_id, since), state_at(store, session_id, entry_id)
        return first_on_path(store, session_id, None), state_at(store, session_id, None)

    base, target = await deps.owner.call(read)
    workspace = str(await workspace_of(deps, session_id))
    if target is None:
        return FilesDiff(session_id=session_id, workspace=workspace, base="", target="")

    def compute() -> FilesDiff:
        old = base.commit if base is not None else None
        diff = FilesDiff(session_id=session_id, workspace=target.workspace, base=old or "", target=target.commit)
        diff.large = [f"{item.path} ({item.size} bytes)" for item in captures.large_files(target.commit)]
        if old == target.commit:
            return diff
        diff.text = captures.diff_text(old, target.commit)
        return _summarised(diff, captures.changes(old, target.commit))

    return await asyncio.to_thread(compute)


def _turn_of(store: SessionStore, session_id: str, entry: Entry) -> list[FileCapture]:
    """The captures of the execution that made ``entry`` (found through the captures on its path)."""
    path = store.path(session_id, to=entry.id)
    ids = [e.id for e in path]
    on_path = store.list_file_captures(entry_ids=ids)
    mine = [c for c in on_path if c.entry_id == entry.id and c.execution_id]
    if not mine:
        return []
    return [c for c in store.list_file_captures(execution_id=mine[-1].execution_id) if c.kind != "rewind"]


# -- rewind (W3) ------------------------------------------------------------------------------------
def _captures(deps: Deps) -> CaptureStore:
    if deps.captures is None:
        raise InvalidInput(deps.captures_off or "file captures are off for this profile")
    return deps.captures


async def target_of(deps: Deps, session_id: str, entry_id: int | None) -> FileCapture:
    def read(store: SessionStore) -> FileCapture | None:
        # Before the first capture the agent had changed nothing: that capture is the state there too.
        return state_at(store, session_id, entry_id) or first_on_path(store, session_id, None)

    found = await deps.owner.call(read)
    if found is None:
        where = f"entry {entry_id}" if entry_id is not None else "the start"
        raise NotFound(f"no file capture on the path to {where}: the agent changed no files before it")
    return found


async def preview(deps: Deps, session_id: str, entry_id: int | None) -> FilesRewind:
    captures = _captures(deps)
    target = await target_of(deps, session_id, entry_id)
    workspace = await workspace_of(deps, session_id)
    plan: RestorePlan = await asyncio.to_thread(captures.plan, workspace, target.commit)
    shown = FilesRewind(preview=True, workspace=str(workspace), target=target.commit)
    for change in plan.changes:
        {"added": shown.added, "changed": shown.changed, "removed": shown.removed}[change.status].append(change.path)
    shown.hand_edited = sorted(plan.hand_edited & plan.paths)
    return shown


async def restore(
    deps: Deps, session_id: str, entry_id: int | None, *, leaving: int | None, overwrite_hand_edits: bool
) -> FilesRewind:
    """Restore the workspace to its state at ``entry_id``. The state it leaves is captured first and joined
    to ``leaving`` (the entry the session leaves), so a rewind can itself be undone."""
    captures = _captures(deps)
    target = await target_of(deps, session_id, entry_id)
    workspace = await workspace_of(deps, session_id)
    if leaving:
        now = await asyncio.to_thread(captures.capture, workspace, baseline=False)
        await _record(
            deps,
            NewFileCapture(
                session_id=session_id, entry_id=leaving, commit=now.commit, workspace=str(workspace), kind="rewind"
            ),
        )
    report: RestoreReport = await asyncio.to_thread(
        captures.restore, workspace, target.commit, overwrite_hand_edits=overwrite_hand_edits
    )
    return FilesRewind(
        preview=False,
        workspace=str(workspace),
        target=target.commit,
        added=report.added,
        changed=report.changed,
        removed=report.removed,
        kept=report.kept,
        not_restorable=report.not_restorable,
    )


# -- upkeep (W4) ------------------------------------------------------------------------------------
async def release_unreached(deps: Deps) -> int:
    """Forget the captures no session reaches any more (their sessions deleted and reclaimed, rewind
    previews), older than an hour; their objects go once two weeks old (a capture under way is never
    touched). Run at the Gateway's start; ``anyy doctor --repair`` does it at once, the Gateway stopped."""
    captures = deps.captures
    if captures is None:
        return 0
    live = await deps.owner.call(lambda s: s.file_capture_commits())
    try:
        return await asyncio.to_thread(captures.prune, live)
    except CaptureError as exc:
        log.warning("file captures not pruned: %s", exc)
        return 0
