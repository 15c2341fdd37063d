"""A fork's own copy of the workspace (W3), for the runtime: made when ``session.fork`` asks for one, and
released when the fork is deleted.

The copy (:func:`anyy.workspaces.forks.fork_workspace`: a git worktree or a plain copy, the user's choice)
is made next to the parent's folder, named ``<name>-fork-<token>`` (a worktree: next to the repository's
top folder), and must lie under the profile's workspace roots when it lists any. When the fork starts at an
earlier entry than the parent's head, the copy's files are put back as they were at that entry (from the
captures), so the fork's conversation and files agree.

Which folders anyy made is recorded in the profile (``workspace-forks/<session id>.json``), never in the
folder itself, where a tool could forge the record. Deleting the fork removes its folder (a worktree:
``git worktree remove``, which also drops the repository's entry for it) unless another session still
works in it (a fork of the fork, a delegated child): then that session holds the record.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import secrets
import shutil
import subprocess
from pathlib import Path

from anyy.domain.errors import InvalidInput
from anyy.domain.sessions import Session
from anyy.runtime import file_captures
from anyy.runtime.deps import Deps
from anyy.runtime.workspaces import chosen_workspace
from anyy.storage.protocol import SessionStore
from anyy.workspaces.captures import CaptureError, git_path
from anyy.workspaces.forks import ForkHow, fork_workspace, repository_top, user_env

__all__ = ["REGISTRY", "ForkHow", "make_copy", "release", "remember"]

log = logging.getLogger("anyy.runtime")
REGISTRY = "workspace-forks"  # in the profile's folder


def _record_path(deps: Deps, session_id: str) -> Path | None:
    return deps.forks_dir / f"{session_id}.json" if deps.forks_dir is not None else None


def fork_folder(source: Path, how: ForkHow) -> tuple[Path, Path]:
    """Where the copy goes (the folder made) and which folder it copies (for a worktree, the repository's
    top folder; else the workspace itself)."""
    top = repository_top(source) if how == "worktree" else None
    copied = top or source
    name = f"{copied.name}-fork-{secrets.token_hex(3)}"
    return copied.parent / name, copied


async def make_copy(deps: Deps, parent: Session, how: ForkHow) -> tuple[Path, Path]:
    """The fork's workspace (the folder it works in) and the folder made for it, checked against the
    profile's roots before anything is written."""
    source = deps.workspace_of(parent)
    if not source.is_dir():
        raise InvalidInput(f"the workspace {source} is not a folder on this host: there is nothing to copy")
    made, _copied = await asyncio.to_thread(fork_folder, source, how)
    roots = deps.workspaces.roots
    if roots and not any(made == root or made.is_relative_to(root) for root in roots):
        listed = ", ".join(str(root) for root in roots)
        raise InvalidInput(
            f"the fork's copy would go to {made}, outside this profile's workspace roots ({listed}): fork without "
            "a copy, or add the folder above the workspace to [workspaces] roots"
        )
    if how == "worktree" and deps.captures is None:
        raise InvalidInput(
            "a worktree fork carries the uncommitted changes through the file captures, which are off "
            f"({deps.captures_off or 'captures off'}): fork with a copy instead"
        )
    workspace = await asyncio.to_thread(fork_workspace, deps.captures, source, made, how)
    return workspace, made


async def rewind_copy(deps: Deps, fork: Session, parent: Session) -> None:
    """Put the copy's files as they were at the fork's point when it is not the parent's head (on failure
    the copy stays as the parent's files are now, and the log says so)."""
    if deps.captures is None or fork.head == parent.head:
        return

    def states(store: SessionStore) -> tuple[str | None, str | None]:
        at = file_captures.state_at(store, fork.id, fork.head) if fork.head is not None else None
        at = at or file_captures.first_on_path(store, parent.id, None)
        now = file_captures.state_at(store, parent.id, parent.head) if parent.head is not None else None
        return (at.commit if at else None), (now.commit if now else None)

    target, current = await deps.owner.call(states)
    if target is None or target == current:
        return
    workspace = deps.workspace_of(fork)
    try:
        await asyncio.to_thread(deps.captures.restore, workspace, target, overwrite_hand_edits=True)
    except (CaptureError, OSError) as exc:  # the fork stays, with the files as the parent has them now
        log.warning("fork %s: its copy was not put back to its point: %s", fork.id, exc)


def remember(deps: Deps, session_id: str, made: Path, how: ForkHow) -> None:
    path = _record_path(deps, session_id)
    if path is None:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"folder": str(made), "how": how}))


def discard(made: Path, how: ForkHow) -> None:
    """Remove a fork's folder anyy made (a worktree through git, so the repository forgets it too)."""
    if how == "worktree" and (made / ".git").is_file():
        done = subprocess.run(  # noqa: S603 - git, found on PATH, with our own arguments
            [git_path(), "-C", str(made), "worktree", "remove", "--force", "--force", str(made)],
            capture_output=True,
            env=user_env(),
            check=False,
        )
        if done.returncode == 0:
            return
        log.warning("git worktree remove %s failed: %s", made, done.stderr.decode(errors="replace").strip())
    shutil.rmtree(made, ignore_errors=True)


async def release(deps: Deps, session_id: str) -> str | None:
    """After ``session_id`` is deleted: remove the folder anyy made for it as a fork, unless another session
    works in it (that session then holds it). Returns the folder removed, if any."""
    path = _record_path(deps, session_id)
    if path is None or not path.exists():
        return None
    try:
        record = json.loads(path.read_text())
        made, how = Path(record["folder"]), record["how"]
    except (OSError, ValueError, KeyError) as exc:
        log.warning("the record of fork %s's folder is unreadable: %s", session_id, exc)
        return None

    def users(store: SessionStore) -> list[str]:
        found, cursor = [], None
        while True:
            page = store.list_sessions(limit=500, cursor=cursor)
            for session in page.items:
                where = session.workspace
                if session.id != session_id and where and (Path(where) == made or Path(where).is_relative_to(made)):
                    found.append(session.id)
            cursor = page.next_cursor
            if not cursor:
                return found

    still = await deps.owner.call(users)
    if still:
        await asyncio.to_thread(os.replace, path, path.with_name(f"{still[0]}.json"))
        return None
    try:
        await asyncio.to_thread(discard, made, how)
    except (OSError, CaptureError) as exc:
        log.warning("the folder %s of deleted fork %s was not removed: %s", made, session_id, exc)
        return None
    path.unlink(missing_ok=True)
    return str(made)


def checked(deps: Deps, workspace: Path) -> str:
    """The copy's folder as a session's workspace (canonical; the roots were checked before copying)."""
    return chosen_workspace(str(workspace), deps.workspaces, deps.workdir)
