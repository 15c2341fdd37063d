"""Where a session works (SPEC W1): its workspace, chosen when it is created, checked at every turn.

A session's workspace is an absolute, canonical directory kept in the store. Its tools work there: the
shell's and Codemode's working directory, the file tools' root, the sandbox's writable folder, the
approval rules' paths and the workspace's ``.agents/skills``. A session made before workspaces existed
has none (``None``): it runs in the Gateway's working directory, as it always did, and clients say so.

:func:`session_workspace` is the one answer to "where does this session work?"; :func:`chosen_workspace`
checks one at creation or change (it exists on this host, it is a directory, it is under the profile's
roots); :func:`workspace_problem` is the check before every model call (a folder removed since is a clear
notice, never a silent fallback to another folder).
"""

from __future__ import annotations

import os
import socket
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from anyy.domain.errors import InvalidInput
from anyy.domain.sessions import Session
from anyy.profiles.config import WorkspaceSettings

CHANGE_HINT = "change it with session.settings (TUI: /cwd DIR; `anyy chat --session ID --cwd DIR`)"


@dataclass(frozen=True)
class WorkspacePolicy:
    """The profile's ``[workspaces]``: the default for sessions made without one, and the allowed roots."""

    default: Path | None = None  # None: the Gateway's working directory
    roots: tuple[Path, ...] = ()  # empty: anywhere


def policy_from(settings: WorkspaceSettings) -> WorkspacePolicy:
    def canonical(raw: str) -> Path:
        return Path(os.path.realpath(os.path.expanduser(raw)))

    return WorkspacePolicy(
        default=canonical(settings.default) if settings.default.strip() else None,
        roots=tuple(canonical(root) for root in settings.roots if root.strip()),
    )


def host() -> str:
    return socket.gethostname()


def session_workspace(session: Session, gateway_workdir: Path) -> Path:
    """The directory ``session`` works in: its workspace, or for a session made before workspaces, the
    Gateway's working directory (``gateway_workdir``)."""
    return Path(session.workspace) if session.workspace else gateway_workdir


def _outside(path: Path, roots: Sequence[Path]) -> bool:
    return bool(roots) and not any(path == root or path.is_relative_to(root) for root in roots)


def _roots_refusal(path: Path | str, roots: Sequence[Path]) -> str:
    listed = ", ".join(str(root) for root in roots)
    return (
        f"the workspace {path} is outside this profile's workspace roots ({listed}; [workspaces] roots in "
        "config.toml): choose a folder under one of them"
    )


def chosen_workspace(raw: str | None, policy: WorkspacePolicy, gateway_workdir: Path) -> str:
    """The canonical workspace for a new session or a change: ``raw`` (absolute; a client resolves a
    relative one against its own directory), else the profile's default, else the Gateway's working
    directory. It must exist on this host as a directory, under the profile's roots if it lists any."""
    if raw is None or not raw.strip():
        path = policy.default or gateway_workdir
    else:
        if not raw.startswith("/"):
            raise InvalidInput(
                f"a workspace must be an absolute path, not {raw!r}: resolve it against your current directory"
            )
        path = Path(raw)
    resolved = Path(os.path.realpath(path))
    if not resolved.is_dir():
        what = "is not a directory" if resolved.exists() else "does not exist"
        raise InvalidInput(f"the workspace {path} {what} on host {host()}: create it, or choose another folder")
    if _outside(resolved, policy.roots):
        raise InvalidInput(_roots_refusal(resolved, policy.roots))
    return str(resolved)


def workspace_problem(session: Session, gateway_workdir: Path, policy: WorkspacePolicy) -> str | None:
    """Why ``session`` cannot work now (its workspace is gone from this host, or outside the roots), in
    words for the user: what is missing and how to fix it; None when all is well."""
    path = session_workspace(session, gateway_workdir)
    if not path.is_dir():
        what = "is not a directory" if path.exists() else "does not exist"
        return (
            f"The session's workspace {path} {what} on host {host()}, so nothing was run: recreate the folder, "
            f"or {CHANGE_HINT}."
        )
    if session.workspace is not None and _outside(path, policy.roots):
        return f"Nothing was run: {_roots_refusal(path, policy.roots)}, or {CHANGE_HINT}."
    return None


def subfolder(parent: Path, raw: str) -> str:
    """A delegated child's workspace: ``raw`` (relative to the parent's workspace, or absolute) must be
    the parent's workspace or a folder under it, existing, after symbolic links are followed."""
    root = Path(os.path.realpath(parent))
    path = Path(os.path.realpath(root / raw))
    if path != root and not path.is_relative_to(root):
        raise InvalidInput(
            f"a task's folder must be inside the parent's workspace {root}, and {raw!r} is not: "
            "give a subfolder of it (relative to it)"
        )
    if not path.is_dir():
        raise InvalidInput(f"a task's folder {path} does not exist: create it first, or give an existing subfolder")
    return str(path)
