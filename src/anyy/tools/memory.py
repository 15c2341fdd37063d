"""``memory``: the profile's cross-session memory, ``memory/USER.md`` and ``memory/MEMORY.md`` (SPEC A4).

Both files are read into every session's context, so they are written whole and atomically (a temporary
file renamed over the old one): a crash or a full disk leaves the old memory, never half of it. Sessions of
one profile can run at the same time, so each change holds a lock on the folder while it reads and writes.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

from anyy.domain.model_io import ToolSpec
from anyy.tools.base import ToolContext, ToolOutcome
from anyy.tools.builtin import Arguments, BuiltinTool, ToolFailure, object_schema
from anyy.tools.files import replace_once

MEMORY_FILES = {"user": "USER.md", "memory": "MEMORY.md"}
ACTIONS = ("read", "append", "replace")
LOCK_FILE = ".lock"
# Past this size a note reminds the model that every session pays for these files.
LARGE_MEMORY = 16_000


class MemoryTool(BuiltinTool):
    spec = ToolSpec(
        name="memory",
        description=(
            "Read or change your memory that lasts across sessions. file 'user' is USER.md: who the user is, "
            "their preferences and ways of working. file 'memory' is MEMORY.md: facts and lessons you want "
            "to keep for later sessions. Both are shown to you at the start of every session, so keep them "
            "short and factual; never store a summary of the conversation there. action 'read' returns the "
            "file; 'append' adds text at its end; 'replace' swaps old_text (which must occur exactly once) "
            "for new_text, or deletes it when new_text is empty."
        ),
        parameters=object_schema(
            {
                "file": {"type": "string", "enum": list(MEMORY_FILES)},
                "action": {"type": "string", "enum": list(ACTIONS)},
                "text": {"type": "string", "description": "For append: the text to add."},
                "old_text": {"type": "string", "description": "For replace: the exact text to change."},
                "new_text": {"type": "string", "description": "For replace: the text to put in its place."},
            },
            required=("file", "action"),
        ),
    )

    async def execute(self, args: Arguments, context: ToolContext) -> ToolOutcome:
        name = MEMORY_FILES[args.choice("file", tuple(MEMORY_FILES))]
        action = args.choice("action", ACTIONS)
        expected = {"read": (), "append": ("text",), "replace": ("old_text", "new_text")}[action]
        stray = [key for key in ("text", "old_text", "new_text") if args.has(key) and key not in expected]
        if stray:
            takes = f"takes {' and '.join(expected)}" if expected else "takes no text"
            raise ToolFailure(f"memory: action {action!r} {takes}, not {', '.join(stray)}")
        path = context.memory_dir / name
        if action == "read":
            text = await asyncio.to_thread(_read, path)
            return ToolOutcome(text=text if text else f"[{name} is empty]")
        if action == "append":
            addition = args.string("text").strip("\n")
            if not addition.strip():
                raise ToolFailure("memory: 'text' is blank: give the text to append")

            def change(text: str) -> str:
                separator = "\n" if text and not text.endswith("\n") else ""
                return f"{text}{separator}{addition}\n"

        else:
            old_text = args.string("old_text")
            new_text = args.string("new_text", allow_empty=True)

            def change(text: str) -> str:
                return replace_once(text, old_text, new_text, name)[0]

        size = await asyncio.to_thread(_update, context.memory_dir, name, change)
        done = "appended to" if action == "append" else "replaced text in"
        note = "; it is read into every session, consider shortening it" if size > LARGE_MEMORY else ""
        return ToolOutcome(text=f"{done} {name} (now {size} characters){note}")


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return ""
    except OSError as error:
        raise ToolFailure(f"cannot read {path.name}: {error.strerror}") from None


@contextlib.contextmanager
def _locked(folder: Path) -> Iterator[None]:
    with (folder / LOCK_FILE).open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _update(folder: Path, name: str, change: Callable[[str], str]) -> int:
    """Apply ``change`` to the file's text under the folder's lock; the new size in characters."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with _locked(folder):
            text = change(_read(folder / name))
            write_atomically(folder / name, text)
    except OSError as error:
        raise ToolFailure(f"cannot write {name}: {error.strerror or error}; the file was left as it was") from None
    return len(text)


def write_atomically(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` so that a reader sees the old or the new content, never a mix."""
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as file:
            file.write(text.encode("utf-8"))
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    # The rename itself is durable only once the folder is synced.
    folder = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(folder)
    finally:
        os.close(folder)
