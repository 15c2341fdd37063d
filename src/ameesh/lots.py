"""A git worktree per lot (H15): with ``[lots] worktrees = true`` in the canon, a build or review agent's
message on lot L is played in the lot's own worktree, ``<repository>.lots/L`` on branch ``lot/L``,
created from the canon's ``base`` branch (default ``main``) the first time and reused after (by the lot's
reviews and fixes); the agent's session and its working directory change together at a lot change (the
old session's summary is played where it ran, then the new lot's session opens in the lot's worktree).
Two agents on two lots of one repository never touch each other's files. ``remove`` refuses a worktree
with uncommitted changes or a branch not merged into the base, and says so.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

BRANCH_PREFIX = "lot/"
_SAFE = re.compile(r"[^A-Za-z0-9._-]+")


class LotError(Exception):
    """A lot's worktree cannot be made or removed; the message says why and what to do."""


def _git(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    # git from PATH, as gitid does; the lot name reaches it only as a path and a "lot/…" branch name
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=False)  # noqa: S603, S607


def repository_of(workdir: Path) -> Path:
    """The main working tree of ``workdir``'s repository (lots are kept beside it)."""
    done = _git(workdir, "rev-parse", "--path-format=absolute", "--git-common-dir")
    if done.returncode != 0:
        raise LotError(f"{workdir} is not in a git repository: a lot's worktree needs one")
    common = Path(done.stdout.strip())
    return common.parent if common.name == ".git" else common


def lot_path(repository: Path, lot: str) -> Path:
    return repository.parent / f"{repository.name}.lots" / _SAFE.sub("-", lot)


def ensure(workdir: Path, lot: str, base: str) -> tuple[Path, bool]:
    """The lot's worktree (made from ``base`` if it does not exist yet), and whether it was made now."""
    repository = repository_of(workdir)
    path = lot_path(repository, lot)
    if (path / ".git").exists():
        return path, False
    branch = branch_of(lot)
    exists = _git(repository, "rev-parse", "--verify", "--quiet", f"refs/heads/{branch}").returncode == 0
    args = ["worktree", "add", str(path), branch] if exists else ["worktree", "add", "-b", branch, str(path), base]
    path.parent.mkdir(parents=True, exist_ok=True)
    done = _git(repository, *args)
    if done.returncode != 0:
        raise LotError(f"cannot make the worktree of lot {lot} from {base!r}: {done.stderr.strip()}")
    return path, True


def is_dirty(path: Path) -> bool:
    """Whether the working tree at ``path`` has uncommitted changes."""
    return bool(_git(path, "status", "--porcelain").stdout.strip())


def remove(workdir: Path, lot: str, base: str) -> Path:
    """Remove the lot's worktree — never while it has uncommitted changes or its branch is not merged into
    ``base`` (the branch is kept: it is the lot's history)."""
    repository = repository_of(workdir)
    path = lot_path(repository, lot)
    if not path.exists():
        raise LotError(f"lot {lot} has no worktree ({path})")
    if is_dirty(path):
        raise LotError(f"lot {lot}'s worktree {path} has uncommitted changes: commit or discard them first")
    branch = branch_of(lot)
    if _git(repository, "merge-base", "--is-ancestor", branch, base).returncode != 0:
        raise LotError(f"lot {lot}'s branch {branch} is not merged into {base}: merge it first")
    done = _git(repository, "worktree", "remove", str(path))
    if done.returncode != 0:
        raise LotError(f"cannot remove {path}: {done.stderr.strip()}")
    return path


def branch_of(lot: str) -> str:
    return BRANCH_PREFIX + _SAFE.sub("-", lot)


def _checked_out(repository: Path, branch: str) -> Path | None:
    """The working tree where ``branch`` is checked out, if any."""
    listing = _git(repository, "worktree", "list", "--porcelain").stdout
    path: Path | None = None
    for line in listing.splitlines():
        if line.startswith("worktree "):
            path = Path(line.removeprefix("worktree "))
        elif line == f"branch refs/heads/{branch}" and path is not None:
            return path
    return None


def merge(repository: Path, lot: str, base: str) -> str:
    """Merge the lot's branch into ``base``: a fast-forward when possible, else a merge commit; how it
    was done. A conflict is refused and undone (nothing changes), and so is a dirty checkout of ``base``."""
    branch = branch_of(lot)
    for ref in (branch, base):
        if _git(repository, "rev-parse", "--verify", "--quiet", f"refs/heads/{ref}").returncode != 0:
            raise LotError(f"no branch {ref} in {repository}")
    if _git(repository, "merge-base", "--is-ancestor", branch, base).returncode == 0:
        return "already merged"
    fast = _git(repository, "merge-base", "--is-ancestor", base, branch).returncode == 0
    where = _checked_out(repository, base)
    if where is None and fast:  # base checked out nowhere: move it
        old = _git(repository, "rev-parse", base).stdout.strip()
        new = _git(repository, "rev-parse", branch).stdout.strip()
        done = _git(repository, "update-ref", f"refs/heads/{base}", new, old)
        if done.returncode != 0:
            raise LotError(f"cannot move {base} to {branch}: {done.stderr.strip()}")
        return "fast-forward"
    temporary = where is None
    if where is None:  # a merge commit needs a checkout of base: a temporary one
        where = repository.parent / f"{repository.name}.lots" / f".merge-{_SAFE.sub('-', lot)}"
        made = _git(repository, "worktree", "add", str(where), base)
        if made.returncode != 0:
            raise LotError(f"cannot check out {base} to merge into it: {made.stderr.strip()}")
    try:
        if _git(where, "status", "--porcelain", "--untracked-files=no").stdout.strip():
            raise LotError(f"{where} (branch {base}) has uncommitted changes: commit or discard them, then merge")
        message = f"Merge lot {lot} ({branch}) into {base}"
        args = ["merge", "--ff-only", branch] if fast else ["merge", "--no-ff", "--no-edit", "-m", message, branch]
        done = _git(where, *args)
        if done.returncode != 0:
            conflicts = _git(where, "diff", "--name-only", "--diff-filter=U").stdout.split()
            _git(where, "merge", "--abort")
            said = f" in {', '.join(conflicts)}" if conflicts else f": {(done.stderr or done.stdout).strip()}"
            raise LotError(
                f"lot {lot} conflicts with {base}{said}; nothing was merged. Send its build agent a message on"
                f" the lot to merge {base} into {branch} and resolve it, then ameesh done"
            )
    finally:
        if temporary:
            _git(repository, "worktree", "remove", "--force", str(where))
    return "fast-forward" if fast else "merge commit"
