"""The repository stands on its own: every file its docs and code comments name is in it, and nothing
points to a document outside it (issue: docs cited a specification and design notes a clone lacks)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TEXT_FILES = [
    *ROOT.glob("*.md"),
    *(ROOT / "docs").rglob("*.md"),
    *(ROOT / "src").rglob("*.py"),
    *(ROOT / "tests").rglob("*.py"),
    *(ROOT / "bench").rglob("*.py"),
    *(ROOT / "scripts").iterdir(),
    ROOT / "pyproject.toml",
]
# A path into the repository's own folders, as prose and comments write it (`docs/tools.md`, src/anyy/x.py).
REPO_PATH = re.compile(r"(?<![\w./~$-])((?:src|tests|docs|bench|scripts)/[\w./-]*\w)")
# A Markdown link to a relative file: [text](tools.md#section).
MD_LINK = re.compile(r"\]\(([^)#:\s]+)(?:#[^)]*)?\)")
GENERATED = ("bench/out/",)  # written by the benchmarks, not kept in git
OUTSIDE = re.compile(r"\b(?:DESIGN|SPEC|HARNESSES)\.md\b|\.\./shared/")


def _files() -> list[Path]:
    return [path for path in TEXT_FILES if path.is_file() and path != Path(__file__)]


def test_u4_every_repository_path_named_in_docs_and_comments_exists() -> None:
    missing = []
    for path in _files():
        text = path.read_text(encoding="utf-8", errors="replace")
        for match in REPO_PATH.finditer(text):
            named = match.group(1).rstrip(".")
            after = text[match.end() : match.end() + 2]
            if after[:1] in ("*", "{") or after in ("-*", "_*") or named.startswith(GENERATED):
                continue  # a pattern (src/anyy/gateway/methods_*.py), or what a benchmark writes
            if f"'{named}'" in text and "e.g." in text:  # an example given to the model, not a file of ours
                continue
            if not (ROOT / named).exists():
                missing.append(f"{path.relative_to(ROOT)}: {named}")
        if path.suffix == ".md":
            for match in MD_LINK.finditer(text):
                target = (path.parent / match.group(1)).resolve()
                if not target.exists():
                    missing.append(f"{path.relative_to(ROOT)}: link to {match.group(1)}")
    assert not missing, "named but not in the repository:\n" + "\n".join(sorted(set(missing)))


def test_u4_nothing_points_outside_the_repository() -> None:
    outside = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for path in _files()
        for number, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1)
        if OUTSIDE.search(line)
    ]
    assert not outside, "references to documents outside the repository:\n" + "\n".join(outside)
