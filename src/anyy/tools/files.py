"""File tools: ``read_file``, ``write_file``, ``edit_file``, ``list_dir``, all confined to the working directory.

Every file is opened through :mod:`anyy.tools.paths` (a descriptor walk with no symlink followed out of the
working directory). Only regular files are read or written: a FIFO or a device is refused rather than
waited on. The file work itself is blocking and runs in a worker thread, so a large file never stalls the
Gateway's event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import stat
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import BinaryIO

from anyy.domain.model_io import ToolSpec
from anyy.tools.approval_rules import write_check
from anyy.tools.base import ToolContext, ToolOutcome
from anyy.tools.builtin import Arguments, BuiltinTool, ToolFailure, object_schema
from anyy.tools.paths import Walk, open_in, walked
from anyy.tools.sandbox_hide import refusal

DEFAULT_LINE_LIMIT = 2000
MAX_LIST_DEPTH = 10
# Folders that are large and rarely what the model is looking for: listed, never expanded.
NOT_EXPANDED = frozenset({".git", ".hg", ".svn", "node_modules", "__pycache__", ".venv", ".mypy_cache", ".tox"})

_PATH_PROPERTY = {"type": "string", "description": "Relative to the working directory (or absolute inside it)."}


# At write time, the path a file tool is about to write (resolved by the walk): None if it may, else why not.
WriteCheck = Callable[[str], str | None]


def _write_check(context: ToolContext, name: str) -> WriteCheck | None:
    return write_check(context.policy.approval, name, context.workdir, context.approved)


def _refuse_hidden(workdir: Path, raw: str, hidden: Sequence[str], path: Path | None = None) -> None:
    """Refuse a path the sandbox hides (N7): ``path`` as walked, else ``raw`` as it resolves now."""
    root = Path(os.path.realpath(workdir))
    if path is None:
        try:
            path = Path(os.path.realpath(root / os.path.expanduser(raw)))
        except OSError:  # a folder on the way is being swapped: the check on the walked file decides (N3)
            return
    why = refusal(path, raw, hidden, root)
    if why:
        raise ToolFailure(why)


@contextlib.contextmanager
def _open_file(
    workdir: Path, raw: str, *, hidden: Sequence[str], write: bool = False, check: WriteCheck | None = None
) -> Iterator[tuple[BinaryIO, str, bool]]:
    """The regular file ``raw`` names, opened for reading (or truncated for writing, created with its
    folders if missing), its name as shown to the model, and whether it existed before. A hidden path is
    refused once the file is open (a symlink may lead there), and for a write also before anything is made.
    ``check`` decides on the file as opened (N2), before anything is written to it."""
    if write:
        _refuse_hidden(workdir, raw, hidden)
    with walked(workdir, raw, create_folders=write) as walk:
        name = walk.shown()
        try:
            fd = _open_regular(walk, write=write, hidden=hidden, check=check)
        except FileExistsError:  # only from write's first, exclusive attempt: cannot happen twice
            raise ToolFailure(f"cannot write {name!r}: it changed while being opened; try again") from None
        except FileNotFoundError:
            raise ToolFailure(f"there is no file {name!r}: check the name with list_dir") from None
        except IsADirectoryError:
            what = "give the path of a file inside it" if write else "use list_dir to see inside"
            raise ToolFailure(f"{name!r} is a directory, not a file: {what}") from None
        except OSError as error:
            verb = "write" if write else "read"
            raise ToolFailure(f"cannot {verb} {name!r}: {error.strerror or error}") from None
        existed = fd < 0
        fd = abs(fd)
        with os.fdopen(fd, "wb" if write else "rb") as file:
            yield file, walk.shown(), existed


def _open_regular(walk: Walk, *, write: bool, hidden: Sequence[str], check: WriteCheck | None = None) -> int:
    """A descriptor of the walk's file (negated when ``write`` found it already there). ``check`` sees the
    file's path as resolved (symlinks followed) before it is created or truncated."""
    existed = False
    if write:
        try:
            fd = open_in(walk, os.O_WRONLY | os.O_NONBLOCK)
            existed = True
        except FileNotFoundError:  # the walk now stands where the file (or a dangling symlink's target) goes
            _refuse(check, walk)
            fd = open_in(walk, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NONBLOCK)
    else:
        fd = open_in(walk, os.O_RDONLY | os.O_NONBLOCK)
    try:
        try:
            _refuse_hidden(walk.root, walk.raw, hidden, Path(walk.root, *walk.names, walk.name))
        except ToolFailure:
            if write and not existed:  # made just now, by following a symlink: take it back
                os.unlink(walk.name, dir_fd=walk.dir_fd)
            raise
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise IsADirectoryError
        if not stat.S_ISREG(mode):
            raise OSError(0, "not a regular file (a device, FIFO or socket): file tools use regular files only")
        os.set_blocking(fd, True)
        if existed:
            _refuse(check, walk)
            os.ftruncate(fd, 0)
    except BaseException:
        os.close(fd)
        raise
    return -fd if existed else fd


def _refuse(check: WriteCheck | None, walk: Walk) -> None:
    refusal = check(walk.shown()) if check is not None else None
    if refusal is not None:
        raise ToolFailure(f"cannot write {walk.raw!r}: {refusal}")


def _read_text(workdir: Path, raw: str, hidden: Sequence[str]) -> tuple[str, str]:
    """The whole file as text and its shown name, for tools that rewrite it; refused if it is not UTF-8."""
    with _open_file(workdir, raw, hidden=hidden) as (file, name, _):
        try:
            return file.read().decode("utf-8"), name
        except UnicodeDecodeError:
            raise ToolFailure(f"{name!r} is not UTF-8 text: change it with shell instead") from None
        except OSError as error:
            raise ToolFailure(f"cannot read {name!r}: {error.strerror}") from None


def _write_text(
    workdir: Path, raw: str, text: str, hidden: Sequence[str], check: WriteCheck | None = None
) -> tuple[str, bool]:
    """Write ``text`` to ``raw``; its shown name and whether it existed before."""
    with _open_file(workdir, raw, hidden=hidden, write=True, check=check) as (file, name, existed):
        try:
            file.write(text.encode("utf-8"))
        except OSError as error:
            raise ToolFailure(f"cannot write {name!r}: {error.strerror or error}") from None
        return name, existed


class ReadFileTool(BuiltinTool):
    spec = ToolSpec(
        name="read_file",
        description=(
            "Read a text file from the working directory. Returns its lines as they are (no line numbers). "
            f"At most {DEFAULT_LINE_LIMIT} lines (or the output limit) are returned at once; a note at the end "
            "then says which lines you got and the offset to pass to read the next part."
        ),
        parameters=object_schema(
            {
                "path": _PATH_PROPERTY,
                "offset": {"type": "integer", "minimum": 1, "description": "First line to read (1 = start)."},
                "limit": {
                    "type": "integer",
                    "minimum": 1,
                    "description": f"Most lines to return (default {DEFAULT_LINE_LIMIT}).",
                },
            },
            required=("path",),
        ),
    )

    async def execute(self, args: Arguments, context: ToolContext) -> ToolOutcome:
        path = args.string("path")
        offset = args.optional_int("offset", 1, minimum=1)
        limit = args.optional_int("limit", DEFAULT_LINE_LIMIT, minimum=1)
        text = await asyncio.to_thread(
            _read_lines, context.workdir, path, offset, limit, context.output_cap, hidden=context.policy.sandbox.hidden
        )
        return ToolOutcome(text=text)


def _read_lines(workdir: Path, path: str, offset: int, limit: int, cap: int, *, hidden: Sequence[str]) -> str:
    with _open_file(workdir, path, hidden=hidden) as (file, name, _):
        try:
            if b"\0" in file.read(8192):
                size = os.fstat(file.fileno()).st_size
                raise ToolFailure(
                    f"{name!r} looks like a binary file ({size} bytes): read_file shows text only; "
                    "inspect it with shell (e.g. `file` or `xxd | head`)"
                )
            file.seek(0)
            kept: list[str] = []
            used = 0
            cut_line: int | None = None
            total = 0
            # Lines are counted to the end of the file so that the note can say how many remain.
            for total, raw in enumerate(file, start=1):
                if total < offset or len(kept) >= limit or used >= cap or cut_line is not None:
                    continue
                line = raw.decode("utf-8", errors="replace")
                if used + len(line) > cap:
                    if kept:  # the line does not fit: the next read starts with it
                        used = cap
                        continue
                    line = line[:cap] + "\n"
                    cut_line = total
                kept.append(line)
                used += len(line)
        except OSError as error:
            raise ToolFailure(f"cannot read {name!r}: {error.strerror}") from None
    if total == 0:
        return f"[{name} is empty]"
    if offset > total:
        raise ToolFailure(f"{name!r} has {total} lines: offset {offset} is past its end")
    text = "".join(kept)
    last = offset + len(kept) - 1
    notes: list[str] = []
    if cut_line is not None:
        notes.append(f"line {cut_line} is longer than the output limit and was cut; read it with shell (e.g. cut -c)")
    if offset > 1 or last < total:
        more = f"; call read_file with offset={last + 1} to read more" if last < total else ""
        notes.append(f"lines {offset}-{last} of {total}{more}")
    if notes:
        if text and not text.endswith("\n"):
            text += "\n"
        text += "".join(f"[{note}]\n" for note in notes)
    return text


class WriteFileTool(BuiltinTool):
    spec = ToolSpec(
        name="write_file",
        description=(
            "Write a text file in the working directory, replacing it if it exists and creating missing "
            "parent folders. The content is written exactly as given. To change part of an existing file, "
            "prefer edit_file."
        ),
        parameters=object_schema(
            {"path": _PATH_PROPERTY, "content": {"type": "string", "description": "The whole new content."}},
            required=("path", "content"),
        ),
    )

    async def execute(self, args: Arguments, context: ToolContext) -> ToolOutcome:
        path = args.string("path")
        content = args.string("content", allow_empty=True)
        check = _write_check(context, self.spec.name)
        name, existed = await asyncio.to_thread(
            _write_text, context.workdir, path, content, context.policy.sandbox.hidden, check
        )
        verb = "replaced" if existed else "created"
        lines = content.count("\n") + (0 if content.endswith("\n") or not content else 1)
        return ToolOutcome(text=f"{verb} {name} ({len(content)} characters, {lines} lines)")


class EditFileTool(BuiltinTool):
    spec = ToolSpec(
        name="edit_file",
        description=(
            "Replace one exact piece of text in a file of the working directory. old_text must appear exactly "
            "once in the file, character for character (spaces, indentation and line breaks included); copy "
            "it from read_file's output and include enough surrounding lines to make it unique. new_text "
            "replaces it (empty deletes it)."
        ),
        parameters=object_schema(
            {
                "path": _PATH_PROPERTY,
                "old_text": {"type": "string", "description": "The exact text to replace; must occur once."},
                "new_text": {"type": "string", "description": "The text to put in its place."},
            },
            required=("path", "old_text", "new_text"),
        ),
    )

    async def execute(self, args: Arguments, context: ToolContext) -> ToolOutcome:
        path = args.string("path")
        old_text = args.string("old_text")
        new_text = args.string("new_text", allow_empty=True)
        hidden = context.policy.sandbox.hidden
        check = _write_check(context, self.spec.name)
        edit = functools.partial(self._edit, hidden=hidden, check=check)
        return await asyncio.to_thread(edit, context.workdir, path, old_text, new_text)

    @staticmethod
    def _edit(
        workdir: Path, path: str, old_text: str, new_text: str, *, hidden: Sequence[str], check: WriteCheck | None
    ) -> ToolOutcome:
        text, name = _read_text(workdir, path, hidden)
        edited, line = replace_once(text, old_text, new_text, name)
        _write_text(workdir, path, edited, hidden, check)
        return ToolOutcome(text=f"edited {name}: replaced the text at line {line}")


def replace_once(text: str, old_text: str, new_text: str, name: str) -> tuple[str, int]:
    """``text`` with the one occurrence of ``old_text`` replaced, and the line where it was."""
    at = text.find(old_text)
    if at < 0:
        hint = " The file uses Windows line endings (\\r\\n)." if "\r\n" in text else ""
        raise ToolFailure(
            f"old_text was not found in {name!r}.{hint} Read the file again and copy the exact text, "
            "including whitespace and indentation."
        )
    # Searching again from the next character also catches overlapping repeats ("aa" in "aaa").
    if text.find(old_text, at + 1) >= 0:
        count = max(text.count(old_text), 2)
        raise ToolFailure(
            f"old_text occurs {count} times in {name!r}: include more of the surrounding lines so that it "
            "matches exactly one place."
        )
    return text[:at] + new_text + text[at + len(old_text) :], text.count("\n", 0, at) + 1


class ListDirTool(BuiltinTool):
    spec = ToolSpec(
        name="list_dir",
        description=(
            "List a folder of the working directory: folders end with '/', symlinks show their target. "
            "depth 1 (the default) lists the folder itself; deeper levels are indented. Symlinked folders and "
            f"{', '.join(sorted(NOT_EXPANDED))} are listed but not expanded."
        ),
        parameters=object_schema(
            {
                "path": {"type": "string", "description": "The folder (default: the working directory)."},
                "depth": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": MAX_LIST_DEPTH,
                    "description": "How many levels to list (default 1).",
                },
            }
        ),
    )

    async def execute(self, args: Arguments, context: ToolContext) -> ToolOutcome:
        path = args.optional_string("path", ".") or "."
        depth = args.optional_int("depth", 1, minimum=1)
        if depth > MAX_LIST_DEPTH:
            raise ToolFailure(f"list_dir: depth must be at most {MAX_LIST_DEPTH}, not {depth}: list a subfolder")
        name, lines = await asyncio.to_thread(
            _list_folder, context.workdir, path, depth, context.output_cap, context.policy.sandbox.hidden
        )
        header = f"{name}/"
        return ToolOutcome(text="\n".join([header, *lines]) if lines else f"{header} is empty")


def _list_folder(workdir: Path, raw: str, depth: int, cap: int, hidden: Sequence[str]) -> tuple[str, list[str]]:
    with walked(workdir, raw) as walk:
        try:
            fd = open_in(walk, os.O_RDONLY | os.O_DIRECTORY)
        except NotADirectoryError:
            raise ToolFailure(f"{walk.shown()!r} is a file: read it with read_file") from None
        except FileNotFoundError:
            raise ToolFailure(f"{walk.shown()!r} is not there: check the path") from None
        except OSError as error:
            raise ToolFailure(f"cannot list {walk.shown()!r}: {error.strerror or error}") from None
        try:
            where = Path(walk.root, *walk.names, walk.name)
            _refuse_hidden(walk.root, raw, hidden, where)
            return walk.shown(), _listing(
                fd, depth, cap, where, lambda path: bool(refusal(path, "", hidden, walk.root))
            )
        finally:
            os.close(fd)


def _listing(folder: int, depth: int, cap: int, where: Path, is_hidden: Callable[[Path], bool]) -> list[str]:
    """The entries under ``folder`` (a descriptor of the real path ``where``); hidden folders not expanded."""
    lines: list[str] = []
    used = 0

    def walk(current: int, level: int, path: Path) -> bool:
        """Append the entries of the folder ``current`` (a descriptor); False once the output limit is reached."""
        nonlocal used
        try:
            entries = sorted(os.scandir(current), key=lambda entry: (entry.name.lower(), entry.name))
        except OSError as error:
            lines.append("  " * level + f"(unreadable: {error.strerror})")
            return True
        for entry in entries:
            indent = "  " * level
            expand = False
            if entry.is_symlink():
                try:
                    target = os.readlink(entry.name, dir_fd=current)
                except OSError:
                    target = "?"
                line = f"{indent}{entry.name} -> {target}"
            elif entry.is_dir(follow_symlinks=False):
                expand = level + 1 < depth and entry.name not in NOT_EXPANDED
                line = f"{indent}{entry.name}/"
            else:
                line = f"{indent}{entry.name}"
            if used + len(line) + 1 > cap:
                lines.append(f"[listing cut after {len(lines)} entries: list a subfolder or use a smaller depth]")
                return False
            lines.append(line)
            used += len(line) + 1
            if expand and not _expand(entry.name, current, level, path / entry.name):
                return False
        return True

    def _expand(name: str, parent: int, level: int, path: Path) -> bool:
        if is_hidden(path):
            lines.append("  " * (level + 1) + "(hidden from tools)")
            return True
        try:
            child = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=parent)
        except OSError as error:
            lines.append("  " * (level + 1) + f"(unreadable: {error.strerror})")
            return True
        try:
            return walk(child, level + 1, path)
        finally:
            os.close(child)

    walk(folder, 0, where)
    return lines
