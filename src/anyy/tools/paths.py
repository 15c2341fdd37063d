"""Keeping file tools inside the session's working directory.

A path is resolved the way the operating system would follow it (``..`` and every symlink along the way,
including a dangling last one) and must land inside the working directory. The check is made just before
the file is used; a process racing to swap a directory for a symlink in between is not defended against
(the shell tool can reach the whole machine anyway: confinement keeps honest mistakes in, not attackers).
"""

from __future__ import annotations

from pathlib import Path

from anyy.tools.builtin import ToolFailure


def confine(workdir: Path, raw: str) -> Path:
    """The absolute, symlink-free path ``raw`` names, refused with :class:`ToolFailure` if outside ``workdir``."""
    if not raw:
        raise ToolFailure("the path is empty: give a path relative to the working directory, e.g. 'src/main.py'")
    if "\x00" in raw:
        raise ToolFailure("the path contains a NUL character")
    root = workdir.resolve()
    candidate = Path(raw).expanduser() if raw.startswith("~") else Path(raw)
    if not candidate.is_absolute():
        candidate = root / candidate
    try:
        resolved = candidate.resolve()
    except (OSError, RuntimeError) as error:  # RuntimeError: a symlink loop, before Python 3.13
        raise ToolFailure(f"cannot follow the path {raw!r}: {error}") from None
    if not resolved.is_relative_to(root):
        raise ToolFailure(
            f"{raw!r} is outside the working directory {root}: use a path inside it (relative paths are "
            "taken from it; '..' or symlinks that lead out of it are refused)"
        )
    return resolved


def shown(workdir: Path, path: Path) -> str:
    """How a confined path is written back to the model: relative to the working directory."""
    relative = path.relative_to(workdir.resolve())
    return str(relative) if relative.parts else "."
