"""Where other agents keep their sessions, and reading one file of them safely (SPEC I1, I3).

Files are only opened for reading. A source is untrusted: only regular files are read (never a FIFO or
a device), within a size bound, as UTF-8; discovery does not follow symbolic links out of an agent's
folder.
"""

from __future__ import annotations

import datetime
import os
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from anyy.domain.errors import AnyyError, InvalidInput

if TYPE_CHECKING:
    from anyy.domain.imports.model import ImportedSession

MAX_FILE_BYTES = 1024 * 1024 * 1024  # 1 GiB: larger is not a session file
FORMATS = ("claude-code", "codex", "pi", "opencode", "hermes")


@dataclass
class Found:
    format: str
    path: Path
    size: int
    modified: float
    folder: str  # the agent's name for the conversation's folder (as far as the path tells)

    def line(self) -> str:
        when = datetime.datetime.fromtimestamp(self.modified).strftime("%Y-%m-%d %H:%M")
        return f"{self.format:<12} {when}  {self.size:>10,} B  {self.folder}  {self.path}"


def homes(env: dict[str, str] | None = None) -> dict[str, Path]:
    """Each format's folder of sessions, from the agent's documented variables, else under ``$HOME``."""
    env = dict(os.environ) if env is None else env
    home = Path(env.get("HOME") or Path.home())
    return {
        "claude-code": Path(env.get("CLAUDE_CONFIG_DIR") or home / ".claude") / "projects",
        "codex": Path(env.get("CODEX_HOME") or home / ".codex") / "sessions",
        "pi": Path(env.get("PI_CODING_AGENT_DIR") or home / ".pi" / "agent") / "sessions",
        "opencode": Path(env.get("XDG_DATA_HOME") or home / ".local" / "share") / "opencode",
        "hermes": Path(env.get("HERMES_HOME") or home / ".hermes"),
    }


def session_files(fmt: str, root: Path) -> Iterator[Path]:
    """The session files of format ``fmt`` under ``root`` (a folder), sorted; symbolic links skipped."""
    if fmt in ("opencode", "hermes"):  # one database holds every session
        database = root / ("opencode.db" if fmt == "opencode" else "state.db") if root.is_dir() else root
        if database.is_file() and not database.is_symlink():
            yield database
        return
    pattern = "rollout-*.jsonl" if fmt == "codex" else "*.jsonl"
    depth = {"claude-code": 2, "pi": 2}.get(fmt)  # claude-code and pi: <root>/<folder>/<file>
    for path in sorted(root.rglob(pattern)):
        relative = path.relative_to(root)
        if depth is not None and len(relative.parts) > depth and root.name in ("projects", "sessions"):
            continue  # a sub-agent's transcript (Claude Code's <session>/subagents/…) is not a session
        try:
            info = path.lstat()
        except OSError:
            continue
        if stat.S_ISREG(info.st_mode) and not any(p.is_symlink() for p in relative.parents if p != Path(".")):
            yield path


def discover(env: dict[str, str] | None = None, formats: tuple[str, ...] = FORMATS) -> list[Found]:
    found: list[Found] = []
    for fmt, root in homes(env).items():
        if fmt not in formats or not root.is_dir():
            continue
        for path in session_files(fmt, root):
            info = path.stat()
            folder = "/".join(path.parent.parts[-3:]) if fmt == "codex" else path.parent.name
            found.append(Found(fmt, path, info.st_size, info.st_mtime, folder))
    return sorted(found, key=lambda f: f.modified)


def read_lines(path: Path) -> list[str]:
    """The lines of a session file; a clear error for what is not one (missing, not a regular file, too
    large, not UTF-8). Opened read-only, never written."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise InvalidInput(f"{path}: cannot read it ({exc.strerror or exc})") from None
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise InvalidInput(f"{path}: not a regular file")
        if info.st_size > MAX_FILE_BYTES:
            raise InvalidInput(f"{path}: {info.st_size:,} bytes, more than a session file holds ({MAX_FILE_BYTES:,})")
        data = handle.read(MAX_FILE_BYTES + 1)
    if len(data) > MAX_FILE_BYTES:
        raise InvalidInput(f"{path}: grew past {MAX_FILE_BYTES:,} bytes while being read")
    try:
        return data.decode("utf-8").splitlines()
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise InvalidInput(f"{path}, line {line}: not UTF-8 text; nothing of this session was imported") from None


def parser(fmt: str) -> Callable[..., ImportedSession]:
    """The pure parser of a format (loaded when used)."""
    if fmt == "claude-code":
        from anyy.domain.imports import claude_code

        return claude_code.parse
    if fmt == "codex":
        from anyy.domain.imports import codex

        return codex.parse
    if fmt == "pi":
        from anyy.domain.imports import pi

        return pi.parse
    raise InvalidInput(f"unknown import format {fmt!r}; the formats are: {', '.join(FORMATS)}")


def parse_sessions(fmt: str, path: Path) -> list[ImportedSession | AnyyError]:
    """Every session a source file holds (one, except opencode's database), each parsed whole or replaced
    by the error that stopped it (a bad session never stops the others)."""
    if fmt not in ("opencode", "hermes"):
        try:
            return [parse_file(fmt, path)]
        except AnyyError as exc:
            return [exc]
    from anyy.cli.import_databases import read_database, read_hermes

    return read_database(path) if fmt == "opencode" else read_hermes(path)


def parse_file(fmt: str, path: Path) -> ImportedSession:
    return parser(fmt)(
        read_lines(path), str(path), fallback_id="-".join(path.stem.split("-")[-5:]) if fmt == "codex" else path.stem
    )
