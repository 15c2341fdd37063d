"""What a rewind must give back, read from disk: every file's bytes, mode and link target."""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

# A file: ("file", sha256, executable); a symlink: ("link", target). Folders are implied by their files.
State = dict[str, tuple[str, ...]]


def tree_state(root: Path, *, skip: tuple[str, ...] = (".git",)) -> State:
    found: State = {}
    for folder, dirs, files in os.walk(root):
        rel_folder = Path(folder).relative_to(root)
        dirs[:] = [d for d in dirs if not (rel_folder == Path(".") and d in skip)]
        for name in files + [d for d in dirs if os.path.islink(os.path.join(folder, d))]:
            path = Path(folder) / name
            rel = str(path.relative_to(root))
            info = path.lstat()
            if stat.S_ISLNK(info.st_mode):
                found[rel] = ("link", os.readlink(path))
            elif stat.S_ISREG(info.st_mode):
                digest = hashlib.sha256(path.read_bytes()).hexdigest()
                found[rel] = ("file", digest, str(bool(info.st_mode & stat.S_IXUSR)))
    return found


def git_dir_state(repo: Path) -> dict[str, bytes]:
    """Every byte of a repository's ``.git`` folder (index, HEAD, refs, objects), by path."""
    out: dict[str, bytes] = {}
    for path in sorted((repo / ".git").rglob("*")):
        if path.is_file() and not path.is_symlink():
            out[str(path.relative_to(repo))] = path.read_bytes()
    return out
