"""File tools (M6): reading, writing, editing and listing, confined to the working directory."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import msgspec
import pytest

from anyy.tools.base import Tool, ToolContext, ToolOutcome
from anyy.tools.files import EditFileTool, ListDirTool, ReadFileTool, WriteFileTool

pytestmark = pytest.mark.anyio


async def run(tool: Tool, context: ToolContext, **arguments: Any) -> ToolOutcome:
    return await tool.run(arguments, context)


# -- read_file ---------------------------------------------------------------------------------------


async def test_m6_read_file_returns_the_text(context: ToolContext, workdir: Path) -> None:
    (workdir / "notes.txt").write_text("one\ntwo\n")
    outcome = await run(ReadFileTool(), context, path="notes.txt")
    assert outcome == ToolOutcome(text="one\ntwo\n")


async def test_m6_read_file_pages_by_lines_and_says_how_to_read_more(context: ToolContext, workdir: Path) -> None:
    (workdir / "long.txt").write_text("".join(f"line {n}\n" for n in range(1, 11)))
    first = await run(ReadFileTool(), context, path="long.txt", limit=3)
    assert first.text.startswith("line 1\nline 2\nline 3\n")
    assert "[lines 1-3 of 10; call read_file with offset=4 to read more]" in first.text
    last = await run(ReadFileTool(), context, path="long.txt", offset=9)
    assert last.text == "line 9\nline 10\n[lines 9-10 of 10]\n"
    past = await run(ReadFileTool(), context, path="long.txt", offset=11)
    assert past.is_error
    assert "has 10 lines" in past.text


async def test_m6_read_file_output_is_capped_with_a_note(context: ToolContext, workdir: Path) -> None:
    (workdir / "big.txt").write_text("".join(f"{n:04d}" + "x" * 95 + "\n" for n in range(1, 101)))  # 100 per line
    small = msgspec.structs.replace(context, output_cap=350)
    outcome = await run(ReadFileTool(), small, path="big.txt")
    assert outcome.text.startswith("0001")
    assert "0003" in outcome.text
    assert "0004" not in outcome.text
    assert "[lines 1-3 of 100; call read_file with offset=4 to read more]" in outcome.text
    (workdir / "wide.txt").write_text("y" * 1000 + "\nshort\n")
    wide = await run(ReadFileTool(), small, path="wide.txt")
    assert wide.text.startswith("y" * 350 + "\n")
    assert "line 1 is longer than the output limit" in wide.text
    assert "offset=2" in wide.text


async def test_m6_read_file_errors_say_what_to_do(context: ToolContext, workdir: Path) -> None:
    missing = await run(ReadFileTool(), context, path="nope.txt")
    assert missing.is_error
    assert "there is no file 'nope.txt'" in missing.text
    in_no_folder = await run(ReadFileTool(), context, path="nosuchdir/x.txt")
    assert in_no_folder.is_error
    assert "there is no folder 'nosuchdir' (on the way to 'nosuchdir/x.txt')" in in_no_folder.text
    (workdir / "folder").mkdir()
    folder = await run(ReadFileTool(), context, path="folder")
    assert folder.is_error
    assert "use list_dir" in folder.text
    (workdir / "blob.bin").write_bytes(b"\x89PNG\x00\x01")
    binary = await run(ReadFileTool(), context, path="blob.bin")
    assert binary.is_error
    assert "binary" in binary.text
    (workdir / "empty.txt").write_text("")
    assert (await run(ReadFileTool(), context, path="empty.txt")).text == "[empty.txt is empty]"


async def test_m6_tool_arguments_are_checked(context: ToolContext) -> None:
    no_path = await ReadFileTool().run({}, context)
    assert no_path.is_error
    assert "needs the argument 'path'" in no_path.text
    typo = await run(ReadFileTool(), context, path="x", ofset=3)
    assert typo.is_error
    assert "unknown argument(s) ofset" in typo.text
    assert "path, offset, limit" in typo.text
    wrong_type = await run(ReadFileTool(), context, path="x", limit="ten")
    assert wrong_type.is_error
    assert "'limit' must be an integer" in wrong_type.text
    zero = await run(ReadFileTool(), context, path="x", offset=0)
    assert zero.is_error
    assert "at least 1" in zero.text


# -- confinement to the working directory ------------------------------------------------------------


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A folder beside the working directory, with a secret file in it."""
    path = tmp_path / "outside"
    path.mkdir()
    (path / "secret.txt").write_text("secret\n")
    return path


def _calls(target: str) -> list[tuple[Tool, dict[str, Any]]]:
    return [
        (ReadFileTool(), {"path": target}),
        (WriteFileTool(), {"path": target, "content": "overwritten"}),
        (EditFileTool(), {"path": target, "old_text": "secret", "new_text": "gone"}),
        (ListDirTool(), {"path": target}),
    ]


@pytest.mark.parametrize("kind", ["dotdot", "absolute", "symlinked_file", "symlinked_folder", "dangling_symlink"])
async def test_m6_read_file_refuses_paths_outside_workdir(
    context: ToolContext, workdir: Path, outside: Path, kind: str
) -> None:
    """Every file tool refuses a path that leads out of the working directory, however it gets there."""
    if kind == "dotdot":
        targets = ["../outside/secret.txt", "../outside"]
    elif kind == "absolute":
        targets = [str(outside / "secret.txt"), str(outside)]
    elif kind == "symlinked_file":
        (workdir / "link.txt").symlink_to(outside / "secret.txt")
        targets = ["link.txt"]
    elif kind == "symlinked_folder":
        (workdir / "linked").symlink_to(outside)
        targets = ["linked/secret.txt", "linked", "linked/new/file.txt"]
    else:
        (workdir / "dangling.txt").symlink_to(outside / "not-yet.txt")
        targets = ["dangling.txt"]
    for target in targets:
        for tool, arguments in _calls(target):
            outcome = await tool.run(arguments, context)
            assert outcome.is_error, (tool.spec.name, target)
            assert "is outside the working directory" in outcome.text
            assert "use a path inside it" in outcome.text
    assert (outside / "secret.txt").read_text() == "secret\n"
    assert sorted(os.listdir(outside)) == ["secret.txt"]


async def test_m6_absolute_paths_inside_workdir_are_allowed(context: ToolContext, workdir: Path) -> None:
    (workdir / "in.txt").write_text("inside\n")
    assert (await run(ReadFileTool(), context, path=str(workdir / "in.txt"))).text == "inside\n"
    (workdir / "sub").mkdir()
    (workdir / "shortcut").symlink_to(workdir / "sub")
    written = await run(WriteFileTool(), context, path="shortcut/made.txt", content="ok")
    assert not written.is_error
    assert (workdir / "sub" / "made.txt").read_text() == "ok"
    sneaky_but_inside = await run(ReadFileTool(), context, path="sub/../in.txt")
    assert sneaky_but_inside.text == "inside\n"


# -- write_file, edit_file ---------------------------------------------------------------------------


async def test_m6_write_file_creates_parent_folders_and_replaces(context: ToolContext, workdir: Path) -> None:
    created = await run(WriteFileTool(), context, path="a/b/c.txt", content="x\ny\n")
    assert created == ToolOutcome(text="created a/b/c.txt (4 characters, 2 lines)")
    assert (workdir / "a" / "b" / "c.txt").read_text() == "x\ny\n"
    replaced = await run(WriteFileTool(), context, path="a/b/c.txt", content="")
    assert replaced.text.startswith("replaced a/b/c.txt")
    assert (workdir / "a" / "b" / "c.txt").read_text() == ""
    onto_folder = await run(WriteFileTool(), context, path="a", content="x")
    assert onto_folder.is_error
    assert "is a directory" in onto_folder.text


async def test_m6_edit_file_replaces_one_exact_occurrence(context: ToolContext, workdir: Path) -> None:
    path = workdir / "code.py"
    path.write_bytes(b"def f():\r\n    return 1\r\n\r\ndef g():\r\n    return 2\r\n")
    outcome = await run(EditFileTool(), context, path="code.py", old_text="return 2", new_text="return 3")
    assert outcome == ToolOutcome(text="edited code.py: replaced the text at line 5")
    assert path.read_bytes() == b"def f():\r\n    return 1\r\n\r\ndef g():\r\n    return 3\r\n"  # line ends kept


async def test_m6_edit_file_refuses_missing_or_repeated_text(context: ToolContext, workdir: Path) -> None:
    path = workdir / "code.py"
    path.write_text("x = 1\nx = 1\naaa\n")
    missing = await run(EditFileTool(), context, path="code.py", old_text="y = 2", new_text="y = 3")
    assert missing.is_error
    assert "old_text was not found in 'code.py'" in missing.text
    assert "copy the exact text" in missing.text
    repeated = await run(EditFileTool(), context, path="code.py", old_text="x = 1", new_text="x = 2")
    assert repeated.is_error
    assert "occurs 2 times" in repeated.text
    assert "include more of the surrounding lines" in repeated.text
    overlapping = await run(EditFileTool(), context, path="code.py", old_text="aa", new_text="b")
    assert overlapping.is_error
    assert path.read_text() == "x = 1\nx = 1\naaa\n"
    no_file = await run(EditFileTool(), context, path="other.py", old_text="a", new_text="b")
    assert no_file.is_error
    assert "there is no file" in no_file.text


# -- list_dir ----------------------------------------------------------------------------------------


async def test_m6_list_dir_shows_folders_links_and_depth(context: ToolContext, workdir: Path) -> None:
    (workdir / "src" / "pkg").mkdir(parents=True)
    (workdir / "src" / "pkg" / "mod.py").write_text("")
    (workdir / "README.md").write_text("")
    (workdir / ".git" / "objects").mkdir(parents=True)
    (workdir / "alias").symlink_to("README.md")
    shallow = await run(ListDirTool(), context)
    assert shallow.text == "./\n.git/\nalias -> README.md\nREADME.md\nsrc/"
    deep = await run(ListDirTool(), context, path="src", depth=5)
    assert deep.text == "src/\npkg/\n  mod.py"
    whole = await run(ListDirTool(), context, depth=3)
    assert "  pkg/\n    mod.py" in whole.text
    assert "objects" not in whole.text  # .git is listed, never expanded
    too_deep = await run(ListDirTool(), context, depth=50)
    assert too_deep.is_error
    file = await run(ListDirTool(), context, path="README.md")
    assert file.is_error
    assert "read it with read_file" in file.text


async def test_m6_list_dir_output_is_capped_with_a_note(context: ToolContext, workdir: Path) -> None:
    for n in range(200):
        (workdir / f"file{n:03d}.txt").write_text("")
    outcome = await run(ListDirTool(), msgspec.structs.replace(context, output_cap=200), path=".")
    assert len(outcome.text) < 400
    assert "[listing cut after" in outcome.text
    assert "list a subfolder" in outcome.text
