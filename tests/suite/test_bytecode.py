"""Commands start from compiled bytecode: ``scripts/install`` (run by both README commands) compiles every
module of ours, so that no command compiles its imports at start, even where the environment sets
PYTHONDONTWRITEBYTECODE and Python would never write them itself (issue: every `anyy chat` compiled ~54 modules).

A module added since the last ``scripts/install`` fails this test until the install runs again (scripts/test
runs it first)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_speed_every_module_of_ours_has_its_bytecode_after_the_install() -> None:
    sources = sorted((ROOT / "src").rglob("*.py"))
    assert sources
    missing = [
        str(s.relative_to(ROOT)) for s in sources if not Path(importlib.util.cache_from_source(str(s))).is_file()
    ]
    assert not missing, (
        f"no compiled bytecode for {missing[:5]} (and {max(len(missing) - 5, 0)} more): run scripts/install"
    )
