"""``memory`` (A4, M6): USER.md and MEMORY.md edited atomically; ``ask_user`` (M6): a clarification."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from anyy.tools import memory as memory_module
from anyy.tools.ask_user import AskUserTool
from anyy.tools.base import ToolContext, ToolOutcome
from anyy.tools.memory import MemoryTool

pytestmark = pytest.mark.anyio


async def test_a4_memory_append_creates_the_folder_and_file(context: ToolContext) -> None:
    assert not context.memory_dir.exists()
    empty = await MemoryTool().run({"file": "user", "action": "read"}, context)
    assert empty == ToolOutcome(text="[USER.md is empty]")
    added = await MemoryTool().run({"file": "user", "action": "append", "text": "Prefers French."}, context)
    assert added == ToolOutcome(text="appended to USER.md (now 16 characters)")
    await MemoryTool().run({"file": "user", "action": "append", "text": "Works on anyy.\n"}, context)
    assert (context.memory_dir / "USER.md").read_text() == "Prefers French.\nWorks on anyy.\n"
    assert not (context.memory_dir / "MEMORY.md").exists()
    await MemoryTool().run({"file": "memory", "action": "append", "text": "Tests run with -n 2."}, context)
    read = await MemoryTool().run({"file": "memory", "action": "read"}, context)
    assert read.text == "Tests run with -n 2.\n"


async def test_a4_memory_append_joins_a_file_without_final_newline(context: ToolContext) -> None:
    context.memory_dir.mkdir(parents=True)
    (context.memory_dir / "MEMORY.md").write_text("# Notes")
    await MemoryTool().run({"file": "memory", "action": "append", "text": "- one"}, context)
    assert (context.memory_dir / "MEMORY.md").read_text() == "# Notes\n- one\n"


async def test_a4_memory_replace_changes_exactly_one_place(context: ToolContext) -> None:
    path = context.memory_dir / "USER.md"
    path.parent.mkdir(parents=True)
    path.write_text("Name: Ana\nEditor: vim\nShell: vim mode\n")
    repeated = await MemoryTool().run(
        {"file": "user", "action": "replace", "old_text": "vim", "new_text": "emacs"}, context
    )
    assert repeated.is_error
    assert "occurs 2 times in 'USER.md'" in repeated.text
    changed = await MemoryTool().run(
        {"file": "user", "action": "replace", "old_text": "Editor: vim", "new_text": "Editor: helix"}, context
    )
    assert not changed.is_error
    assert path.read_text() == "Name: Ana\nEditor: helix\nShell: vim mode\n"
    now_unique = await MemoryTool().run(
        {"file": "user", "action": "replace", "old_text": "vim", "new_text": "emacs"}, context
    )
    assert not now_unique.is_error
    missing = await MemoryTool().run(
        {"file": "user", "action": "replace", "old_text": "Name: Bob", "new_text": "x"}, context
    )
    assert missing.is_error
    assert "not found in 'USER.md'" in missing.text
    deleted = await MemoryTool().run(
        {"file": "user", "action": "replace", "old_text": "Name: Ana\n", "new_text": ""}, context
    )
    assert not deleted.is_error
    assert path.read_text() == "Editor: helix\nShell: emacs mode\n"


async def test_a4_memory_refuses_wrong_arguments(context: ToolContext) -> None:
    cases = [
        ({"file": "diary", "action": "read"}, "'file' must be one of user, memory"),
        ({"file": "user", "action": "delete"}, "'action' must be one of read, append, replace"),
        ({"file": "user", "action": "append"}, "needs the argument 'text'"),
        ({"file": "user", "action": "append", "text": "  \n"}, "'text' is blank"),
        ({"file": "user", "action": "read", "text": "x"}, "action 'read' takes no text, not text"),
        ({"file": "user", "action": "replace", "text": "x"}, "takes old_text and new_text, not text"),
    ]
    for arguments, message in cases:
        outcome = await MemoryTool().run(arguments, context)
        assert outcome.is_error, arguments
        assert message in outcome.text
    assert not (context.memory_dir / "USER.md").exists()


async def test_a4_memory_writes_are_atomic(context: ToolContext, monkeypatch: pytest.MonkeyPatch) -> None:
    path = context.memory_dir / "MEMORY.md"
    path.parent.mkdir(parents=True)
    path.write_text("kept\n")
    before = path.stat().st_ino
    await MemoryTool().run({"file": "memory", "action": "append", "text": "new"}, context)
    assert path.read_text() == "kept\nnew\n"
    assert path.stat().st_ino != before  # a new file renamed over the old one, never rewritten in place

    def full_disk(src: str, dst: str) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", full_disk)
    failed = await MemoryTool().run({"file": "memory", "action": "append", "text": "lost"}, context)
    assert failed.is_error
    assert "No space left on device" in failed.text
    assert "left as it was" in failed.text
    assert path.read_text() == "kept\nnew\n"
    assert sorted(os.listdir(path.parent)) == [".lock", "MEMORY.md"]  # no temporary file left behind


async def test_a4_concurrent_memory_appends_are_all_kept(context: ToolContext) -> None:
    await asyncio.gather(
        *(MemoryTool().run({"file": "memory", "action": "append", "text": f"fact {n}"}, context) for n in range(20))
    )
    lines = (context.memory_dir / "MEMORY.md").read_text().splitlines()
    assert sorted(lines) == sorted(f"fact {n}" for n in range(20))


async def test_m6_ask_user_suspends_with_the_question(context: ToolContext) -> None:
    outcome = await AskUserTool().run({"question": " Which branch should I use? "}, context)
    assert outcome.suspend == "Which branch should I use?"
    assert not outcome.is_error
    blank = await AskUserTool().run({"question": "   "}, context)
    assert blank.is_error
    assert blank.suspend is None
    missing = await AskUserTool().run({}, context)
    assert missing.is_error
    assert "needs the argument 'question'" in missing.text


def test_a4_memory_helpers_leave_no_temporary_on_success(tmp_path: Path) -> None:
    target = tmp_path / "USER.md"
    memory_module.write_atomically(target, "é\n")
    assert target.read_bytes() == "é\n".encode()
    assert os.listdir(tmp_path) == ["USER.md"]
