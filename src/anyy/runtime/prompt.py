"""The system prompt: the role's identity and Soul (B4) and a snapshot of personal memory (A4).

Memory is read when an execution starts; nothing here ever writes it (a compaction summary lives in the
session, never in memory/).
"""

from __future__ import annotations

from pathlib import Path

from anyy.profiles.roles import LoadedRole

MEMORY_FILES = (("USER.md", "What the user told you about themselves"), ("MEMORY.md", "Your own notes"))
MEMORY_CAP = 20_000  # characters per file kept in the prompt


def read_memory(memory_dir: Path) -> list[tuple[str, str, str]]:
    """``(file name, title, text)`` of each non-empty memory file."""
    snapshot = []
    for name, title in MEMORY_FILES:
        try:
            text = (memory_dir / name).read_text(encoding="utf-8").strip()
        except FileNotFoundError:
            continue
        if text:
            if len(text) > MEMORY_CAP:
                text = text[:MEMORY_CAP] + f"\n[… {name} is longer; the rest was left out]"
            snapshot.append((name, title, text))
    return snapshot


def system_prompt(role: LoadedRole, memory: list[tuple[str, str, str]]) -> str:
    parts = [role.identity.strip()]
    if role.soul.strip():
        parts.append("## Soul\n\n" + role.soul.strip())
    for name, title, text in memory:
        parts.append(f"## {title} (memory/{name})\n\n{text}")
    return "\n\n".join(part for part in parts if part)
