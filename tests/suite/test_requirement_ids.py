"""Every requirement id a test names (``test_q3_…`` names Q3; ``test_h1_h5_h8_…`` names three) is in the
table of docs/architecture.md, so a fresh clone can look up what a test proves."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ID = re.compile(r"^[a-z]\d{1,2}$")
ROW = re.compile(r"^\| ([A-Z]\d{1,2}) \| (.+) \|$", re.MULTILINE)


def documented() -> dict[str, str]:
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    section = text[text.index("## Requirement ids") :]
    return dict(ROW.findall(section))


def named_ids(name: str) -> list[str]:
    """The ids at the start of a test's name, after ``test_``."""
    ids = []
    for word in name.removeprefix("test_").split("_"):
        if not ID.match(word):
            break
        ids.append(word.upper())
    return ids


def named_tests() -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for path in sorted((ROOT / "tests").rglob("test_*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith("test_"):
                found[f"{path.relative_to(ROOT)}::{node.name}"] = named_ids(node.name)
    return found


def test_every_requirement_id_named_by_a_test_is_in_the_table() -> None:
    table = documented()
    unknown = {test: ids for test, ids in named_tests().items() if set(ids) - set(table)}
    assert unknown == {}, "these tests name ids missing from docs/architecture.md's table"


def test_the_table_has_one_line_per_id_and_the_ids_are_read_from_names() -> None:
    table = documented()
    assert len(table) >= 80  # A1 … H14
    assert all(text.strip() for text in table.values())
    assert named_ids("test_h1_h5_h8_ameesh_drives_anyy") == ["H1", "H5", "H8"]
    assert named_ids("test_f2_a_fork_whose_settling_fails") == ["F2"]
    assert named_ids("test_a_missing_prerequisite") == []
    assert sum(1 for ids in named_tests().values() if ids) > 300  # the suite does name its requirements
