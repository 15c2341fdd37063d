"""Moved worktrees (H9): find the agent's working directory again by its git identity.

When an agent's directory is gone, the directories under ``AMEESH_WORKTREE_ROOTS`` (colon-separated) are
searched to a bounded depth for working trees whose git identity (common repository directory and branch)
is the one recorded at registration. A unique candidate that no other agent works in is adopted: the
registry is updated, the thread says so, and the harness makes its sessions resumable from the new place
(``Harness.follow_move``: Claude Code keys transcripts by directory, pi refuses a session whose recorded
directory is gone). No candidate, several, or one that is another agent's: an alert, nothing adopted.
"""

from __future__ import annotations

import os
from pathlib import Path

from ameesh.gitid import git_identity
from ameesh.harnesses import Harness
from ameesh.registry import Registry
from ameesh.rows import Agent

MAX_DEPTH = 4
SKIPPED = {".git", "node_modules", ".venv", "__pycache__"}


def roots() -> list[Path]:
    value = os.environ.get("AMEESH_WORKTREE_ROOTS", "")
    return [Path(part).expanduser() for part in value.split(":") if part.strip()]


def working_trees(root: Path, depth: int = MAX_DEPTH) -> list[Path]:
    """Directories holding a ``.git`` (directory or file) under ``root``, ``root`` included, to ``depth`` levels."""
    found: list[Path] = []
    level = [root]
    for _ in range(depth + 1):
        following: list[Path] = []
        for directory in level:
            if (directory / ".git").exists():
                found.append(directory)
            try:
                entries = list(os.scandir(directory))
            except OSError:
                continue
            following += [Path(e.path) for e in entries if e.name not in SKIPPED and e.is_dir(follow_symlinks=False)]
        level = following
    return found


def candidates(common_dir: str, branch: str | None, search: list[Path]) -> list[Path]:
    """The working trees under ``search`` with this git identity, each once."""
    seen: dict[Path, None] = {}
    for root in search:
        if not root.is_dir():
            continue
        for directory in working_trees(root):
            resolved = directory.resolve()
            if resolved not in seen and git_identity(resolved) == (common_dir, branch):
                seen[resolved] = None
    return list(seen)


def relocate(reg: Registry, agent: Agent, harness: Harness) -> Path | None:
    """Adopt the agent's moved working directory; None (with an alert) when there is no unique free one."""
    name, old = agent.name, Path(agent.workdir)
    common, branch = agent.git_common_dir, agent.git_branch
    if not common:
        reg.alert(name, "workdir_missing", f"the working directory {old} is gone (not a git directory: no search)")
        return None
    search = roots()
    if not search:
        reg.alert(name, "workdir_missing", f"the working directory {old} is gone (AMEESH_WORKTREE_ROOTS is not set)")
        return None
    found = candidates(common, branch, search)
    taken = {Path(a.workdir) for a in reg.agents() if a.name != name}
    free = [c for c in found if c not in taken]
    where = f"branch {branch or '(detached)'} of {common}"
    if not found:
        reg.alert(name, "workdir_missing", f"the working directory {old} is gone; no worktree of {where} found")
        return None
    if len(free) != 1:
        said = ", ".join(str(c) for c in found)
        why = "already another agent's" if not free else "ambiguous"
        reg.alert(name, "workdir_missing", f"the working directory {old} is gone; candidates {why}: {said}")
        return None
    new = free[0]
    followed = harness.follow_move(old, new)
    with reg.tx():
        reg.update_agent(name, workdir=str(new))
        extra = f" ({followed})" if followed else ""
        reg.note(name, "relocated", f"working directory moved: {old} → {new}{extra}", session_id=agent.session_id)
        reg.resolve_alerts(name, "workdir_missing", why="the working directory was found")
    return new
