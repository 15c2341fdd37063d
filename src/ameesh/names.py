"""The names every ameesh command knows without loading what is behind them (H18: ``ameesh --help`` starts
without the adapters, the registry or msgspec): the harnesses (name → ``"module:Class"``, built as
``Class(state_dir=…)``; adding an adapter is one line here) and the agents' roles."""

from __future__ import annotations

NAMES: dict[str, str] = {
    "claude": "ameesh.harnesses.claude:ClaudeHarness",
    "codex": "ameesh.harnesses.codex:CodexHarness",
    "pi": "ameesh.harnesses.pi:PiHarness",
    "anyy": "ameesh.harnesses.anyy:AnyyHarness",
    "fake": "ameesh.harnesses.fake:FakeHarness",
    "dsh": "ameesh.harnesses.dsh:DshHarness",
    "acp": "ameesh.harnesses.acp:AcpHarness",
}
HARNESSES = tuple(NAMES)
ROLES = ("build", "review", "orchestrator")
