"""H8's defaults, with no canon and no ``AMEESH_SESSION_*`` variable: a session rotates once it re-reads
more than 150000 tokens (not at 150000), and a turn counts as long past 900 s."""

from __future__ import annotations

from ameesh import canon
from tests.ameesh.conftest import Ameesh


def test_h8_b_default_rotation_size_is_150000_tokens(ameesh: Ameesh) -> None:
    ameesh.script(
        {"match": "resume summary", "answer": "SUMMARY: four turns"},
        {"match": "at-limit", "answer": "ok", "context_tokens": 150_000},
        {"match": "over-limit", "answer": "ok", "context_tokens": 150_001},
    )
    for name in ("at", "over"):
        ameesh.add(name)
        ameesh("set", name, "session_policy=taille")  # size rotation only
        for n in range(4):
            ameesh("send", name, f"{name}-limit turn {n}")
    ameesh("run")
    assert len(ameesh.json("sessions", "at")) == 1  # 150000 is the limit, not over it
    old, new = ameesh.json("sessions", "over")
    assert old["close_reason"] == "context 150001 tokens > 150000"
    assert new["closed_at"] is None


def test_h8_c_default_long_turn_is_900_seconds(ameesh: Ameesh) -> None:
    """Turn durations are measured on the wall clock, so the default is read where the runner reads it:
    the canon's threshold (the runner's comparison itself is tested with the variable set to 0)."""
    found = canon.load(ameesh.work)
    assert found.path is None  # built-in defaults: no canon file, no variable
    assert found.threshold("max_turn_seconds") == 900
    assert found.threshold("max_tokens") == 150_000
    assert found.threshold("min_turns") == 3
