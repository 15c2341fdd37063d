"""Keeping file tools inside the session's working directory (SPEC M6, N3).

A path is walked one component at a time from a descriptor of the working directory: each folder is opened
with ``O_NOFOLLOW`` relative to the one before (``openat``), and a symlink met on the way is read and its
target walked by the same rules (``..`` may not climb above the working directory; an absolute target
must lie inside it). The file itself is opened relative to the last folder's descriptor, ``O_NOFOLLOW``
again. Nothing is ever opened by its full path, so a folder swapped for a symlink between the check and the
use cannot lead outside: the walk holds descriptors, and the swapped-in symlink is itself checked.
"""

from __future__ import annotations

import contextlib
import errno
import os
from collections.abc import Iterator
from pathlib import Path, PurePosixPath

from anyy.tools.builtin import ToolFailure

_MAX_SYMLINKS = 40
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def _outside(raw: str, root: Path) -> ToolFailure:
    return ToolFailure(
        f"{raw!r} is outside the working directory {root}: use a path inside it (relative paths are "
        "taken from it; '..' or symlinks that lead out of it are refused)"
    )


def _components(raw: str, root: Path) -> list[str]:
    if not raw:
        raise ToolFailure("the path is empty: give a path relative to the working directory, e.g. 'src/main.py'")
    if "\x00" in raw:
        raise ToolFailure("the path contains a NUL character")
    path = PurePosixPath(os.path.expanduser(raw) if raw.startswith("~") else raw)
    if path.is_absolute():
        if not path.is_relative_to(root):
            # An absolute path through a symlink to the working directory is still inside it.
            try:
                real = Path(path).parent.resolve() / path.name
            except (OSError, RuntimeError):
                raise _outside(raw, root) from None
            if not real.is_relative_to(root):
                raise _outside(raw, root)
            path = PurePosixPath(real)
        path = path.relative_to(root)
    return [part for part in path.parts if part not in ("", ".")]


class Walk:
    """Descriptors of the folders from the working directory down to the one holding ``name``."""

    def __init__(self, root: Path, raw: str) -> None:
        self.root = root
        self.raw = raw
        self.fds: list[int] = []
        self.names: list[str] = []  # the folders walked, below the root
        self.name = ""  # the last component ("" for the working directory itself)

    @property
    def dir_fd(self) -> int:
        return self.fds[-1]

    def shown(self) -> str:
        parts = [*self.names, self.name] if self.name else self.names
        return "/".join(parts) or "."

    def close(self) -> None:
        for fd in self.fds:
            os.close(fd)
        self.fds.clear()


def _symlink(parent: int, name: str) -> str | None:
    try:
        return os.readlink(name, dir_fd=parent)
    except OSError as error:
        if error.errno in (errno.EINVAL, errno.ENOENT):
            return None
        raise


def _walk(walk: Walk, parts: list[str], *, create_folders: bool) -> None:
    """Walk ``parts`` below ``walk``'s current folder, leaving the last component in ``walk.name``."""
    pending = list(parts)
    followed = 0
    while pending:
        part = pending.pop(0)
        if part == "..":
            if not walk.names:
                raise _outside(walk.raw, walk.root)
            os.close(walk.fds.pop())
            walk.names.pop()
            continue
        if not pending:
            walk.name = part
            return
        target = _symlink(walk.dir_fd, part)
        if target is not None:
            followed += 1
            if followed > _MAX_SYMLINKS:
                raise ToolFailure(f"cannot follow the path {walk.raw!r}: too many levels of symbolic links")
            pending[:0] = _redirect(walk, target)
            continue
        try:
            fd = os.open(part, _DIR_FLAGS, dir_fd=walk.dir_fd)
        except FileNotFoundError:
            if not create_folders:
                missing = "/".join([*walk.names, part])
                raise ToolFailure(
                    f"there is no folder {missing!r} (on the way to {walk.raw!r}): check the names with list_dir"
                ) from None
            with contextlib.suppress(FileExistsError):
                os.mkdir(part, dir_fd=walk.dir_fd)
            pending.insert(0, part)  # opened (and checked) by the next round
            continue
        except OSError as error:
            if error.errno == errno.ELOOP:  # became a symlink since readlink: walk its target
                pending.insert(0, part)
                continue
            raise
        walk.fds.append(fd)
        walk.names.append(part)


def _redirect(walk: Walk, target: str) -> list[str]:
    """The components a symlink's ``target`` stands for, from the walk's current folder."""
    if target.startswith("/"):
        inside = PurePosixPath(target)
        if not inside.is_relative_to(walk.root):
            raise _outside(walk.raw, walk.root)
        while len(walk.fds) > 1:  # back to the working directory
            os.close(walk.fds.pop())
            walk.names.pop()
        return [part for part in inside.relative_to(walk.root).parts if part not in ("", ".")]
    return [part for part in PurePosixPath(target).parts if part not in ("", ".")]


@contextlib.contextmanager
def walked(workdir: Path, raw: str, *, create_folders: bool = False) -> Iterator[Walk]:
    """The folder descriptors leading to ``raw``; the last component is not opened (see :func:`open_in`)."""
    root = workdir.resolve()
    parts = _components(raw, root)
    walk = Walk(root, raw)
    try:
        walk.fds.append(os.open(root, _DIR_FLAGS))
        _walk(walk, parts, create_folders=create_folders)
        yield walk
    except FileNotFoundError:
        raise ToolFailure(f"there is no file {walk.shown()!r}: check the name with list_dir") from None
    except NotADirectoryError:
        raise ToolFailure(f"{raw!r}: a part of the path is a file, not a folder") from None
    finally:
        walk.close()


def open_in(walk: Walk, flags: int, mode: int = 0o666) -> int:
    """Open the walk's last component (symlinks followed only inside the working directory)."""
    for _ in range(_MAX_SYMLINKS):
        if not walk.name:  # the path names a folder already walked (".", "sub/..")
            return os.open(".", flags & ~(os.O_CREAT | os.O_TRUNC | os.O_EXCL), dir_fd=walk.dir_fd)
        try:
            return os.open(walk.name, flags | os.O_NOFOLLOW | os.O_CLOEXEC, mode, dir_fd=walk.dir_fd)
        except OSError as error:
            # ELOOP: a symlink; ENOTDIR: a symlink asked for with O_DIRECTORY (or a plain file).
            if error.errno not in (errno.ELOOP, errno.ENOTDIR):
                raise
            target = _symlink(walk.dir_fd, walk.name)
            if target is None:
                if error.errno == errno.ENOTDIR:
                    raise
                continue  # swapped back since: try again
        walk.name = ""
        parts = _redirect(walk, target)
        if parts:
            _walk(walk, parts, create_folders=False)
    raise ToolFailure(f"cannot follow the path {walk.raw!r}: too many levels of symbolic links")
