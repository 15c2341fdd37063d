"""The git identity of a working directory: its common repository directory and its branch (H9)."""

from __future__ import annotations

import subprocess
from pathlib import Path


def _git(directory: Path, *args: str) -> str | None:
    try:
        out = subprocess.run(  # noqa: S603
            ["git", *args],  # noqa: S607 - git from PATH, fixed arguments
            cwd=directory,
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    value = out.stdout.strip()
    return value if out.returncode == 0 and value else None


def git_identity(directory: Path) -> tuple[str | None, str | None]:
    """``(common_dir, branch)`` of ``directory``; ``(None, None)`` outside a git repository.

    The common dir is the same for every worktree of one repository; the branch is ``None`` on a detached
    head (an unborn branch still has its name).
    """
    common = _git(directory, "rev-parse", "--path-format=absolute", "--git-common-dir")
    if common is None:
        return None, None
    return str(Path(common).resolve()), _git(directory, "symbolic-ref", "--short", "-q", "HEAD")
