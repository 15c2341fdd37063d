"""One writer, one publisher (DESIGN: the runtime owns sessions): session events are published from one
place, the runtime's announcer, right after the write they announce. The Gateway and the clients only
subscribe; a handler that wrote and published by itself would make a second source of events."""

from __future__ import annotations

import ast
from pathlib import Path

import anyy

SOURCE = Path(anyy.__file__).parent
ANNOUNCER = SOURCE / "runtime" / "announce.py"


def _publish_calls(path: Path) -> list[int]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "publish"
    ]


def test_g2_only_the_runtimes_announcer_publishes_session_events() -> None:
    found = {
        str(path.relative_to(SOURCE)): lines
        for path in sorted(SOURCE.rglob("*.py"))
        if path != ANNOUNCER and (lines := _publish_calls(path))
    }
    assert found == {}, f"session events published outside anyy/runtime/announce.py: {found}"
    assert _publish_calls(ANNOUNCER)  # the rule is not empty: the announcer does publish
