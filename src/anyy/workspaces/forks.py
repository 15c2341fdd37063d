"""A fork's own copy of its workspace (W3), so that two branches of a conversation can edit in parallel.

Two ways, the user's choice:

- ``worktree``: a ``git worktree`` of the user's repository (``git worktree add --detach``: the user's
  repository gains a worktree entry, its branches and index are untouched), then the workspace's changes
  not yet committed — tracked or not, ignored files aside — are carried over from a capture, so the fork
  starts where the parent is, not at its last commit;
- ``copy``: a plain copy of the folder, every file included (ignored ones, ``.git``), symlinks as symlinks.

The new folder is returned (for a workspace in a subfolder of its repository, that subfolder of the
worktree); the session that forks records it as the fork's workspace.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Literal

from anyy.domain.errors import InvalidInput
from anyy.workspaces.captures import CaptureError, CaptureStore, git_path

ForkHow = Literal["worktree", "copy"]


def fork_workspace(captures: CaptureStore | None, source: Path, target: Path, how: ForkHow) -> Path:
    source = source.resolve()
    if not source.is_dir():
        raise InvalidInput(f"the workspace {source} is not a folder: there is nothing to copy for the fork")
    if target.exists() and any(target.iterdir()):
        raise InvalidInput(f"{target} exists and is not empty: choose a new folder for the fork's workspace")
    if how == "copy":
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copytree(source, target, symlinks=True, dirs_exist_ok=True)
        return target
    top = repository_top(source)
    if top is None:
        raise InvalidInput(f"the workspace {source} is not in a git repository: fork it with a copy instead")
    if captures is None:
        raise InvalidInput("a worktree fork carries the uncommitted changes through the file captures, which are off")
    done = subprocess.run(  # noqa: S603 - git, found on PATH, with our own arguments
        [git_path(), "-C", str(top), "worktree", "add", "--detach", "--quiet", str(target), "HEAD"],
        capture_output=True,
        env=user_env(),
        check=False,
    )
    if done.returncode != 0:
        detail = done.stderr.decode(errors="replace").strip()
        raise InvalidInput(f"git could not add a worktree of {top} at {target}: {detail}")
    workspace = target / source.relative_to(top)
    workspace.mkdir(parents=True, exist_ok=True)
    try:
        state = captures.capture(source, baseline=False)
        captures.restore(workspace, state.commit, overwrite_hand_edits=True)
    except CaptureError as exc:
        raise InvalidInput(f"the worktree is at {target}, but the uncommitted changes were not copied: {exc}") from exc
    return workspace


def user_env() -> dict[str, str]:
    """The user's own git settings, without a repository forced on git from outside."""
    return {k: v for k, v in os.environ.items() if k not in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE")}


def repository_top(folder: Path) -> Path | None:
    done = subprocess.run(  # noqa: S603 - git, found on PATH, with our own arguments
        [git_path(), "-C", str(folder), "rev-parse", "--show-toplevel"],
        capture_output=True,
        env=user_env(),
        check=False,
    )
    out = done.stdout.decode().strip()
    return Path(out).resolve() if done.returncode == 0 and out else None
