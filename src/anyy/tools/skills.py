"""Skills (SPEC N4): folders holding a ``SKILL.md`` whose front matter gives a ``name`` and a
``description``. The system prompt lists names and descriptions only; the ``skill`` tool loads one's body
on demand (with the other files of its folder, which the model may read with its file tools).

Skills are looked for in the working directory's ``.agents/skills`` and ``.claude/skills``, then in the
profile's ``skills/``; the first of a name wins. They are read again at every execution start (and by
``session.reload``), so a skill added or edited is seen without restarting anything.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import msgspec

from anyy.domain.model_io import ToolSpec
from anyy.tools.base import ToolContext, ToolOutcome
from anyy.tools.builtin import Arguments, BuiltinTool, ToolFailure, object_schema
from anyy.tools.output import cap_text

SKILL_FILE = "SKILL.md"
WORKDIR_SKILL_DIRS = (".agents/skills", ".claude/skills")
_MAX_SKILL_BYTES = 1_000_000
_MAX_DESCRIPTION = 1024


class Skill(msgspec.Struct, frozen=True, kw_only=True):
    name: str
    description: str
    folder: Path
    body: str


def skill_dirs(profile_skills: Path, workdir: Path) -> tuple[Path, ...]:
    return (*(workdir / sub for sub in WORKDIR_SKILL_DIRS), profile_skills)


def _front_matter(text: str) -> tuple[dict[str, str], str]:
    """The ``key: value`` pairs between the opening ``---`` lines, and the body after them."""
    lines = text.splitlines()
    if not lines or lines[0].strip() != "---":
        return {}, text
    fields: dict[str, str] = {}
    for index, line in enumerate(lines[1:], start=1):
        if line.strip() == "---":
            return fields, "\n".join(lines[index + 1 :]).strip()
        key, colon, value = line.partition(":")
        if colon and key.strip() and not line.startswith((" ", "\t")):
            fields[key.strip()] = value.strip().strip("\"'")
    return {}, text


def read_skill(folder: Path) -> Skill | None:
    """The skill in ``folder``, or None when there is none (no SKILL.md, no description)."""
    path = folder / SKILL_FILE
    try:
        if not path.is_file() or path.stat().st_size > _MAX_SKILL_BYTES:
            return None
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    fields, body = _front_matter(text)
    description = " ".join(fields.get("description", "").split())[:_MAX_DESCRIPTION]
    if not description:
        return None
    return Skill(name=fields.get("name") or folder.name, description=description, folder=folder, body=body)


def find_skills(dirs: Sequence[Path]) -> list[Skill]:
    """Every skill of ``dirs``, the first of each name, sorted by name."""
    found: dict[str, Skill] = {}
    for directory in dirs:
        try:
            folders = sorted(entry for entry in directory.iterdir() if entry.is_dir())
        except OSError:
            continue
        for folder in folders:
            skill = read_skill(folder)
            if skill is not None:
                found.setdefault(skill.name, skill)
    return [found[name] for name in sorted(found)]


def skills_prompt(skills: Sequence[Skill]) -> str:
    """The system prompt's section: names and descriptions only ("" when there are no skills)."""
    if not skills:
        return ""
    lines = [
        "## Skills",
        "",
        "Skills are instructions for particular tasks. When one applies, load it with the skill tool "
        "before you start (only its name and description are shown here).",
        "",
    ]
    lines += [f"- {skill.name}: {skill.description}" for skill in skills]
    return "\n".join(lines)


class SkillTool(BuiltinTool):
    """``skill``: the body of one skill, looked up in ``dirs`` at call time."""

    def __init__(self, dirs: Sequence[Path]) -> None:
        self._dirs = tuple(dirs)
        self.spec = ToolSpec(
            name="skill",
            description=(
                "Load a skill by name (the system prompt lists them): returns its instructions and the "
                "files of its folder. Follow the instructions for the task at hand."
            ),
            parameters=object_schema({"name": {"type": "string", "description": "The skill's name."}}, ("name",)),
        )

    async def execute(self, args: Arguments, context: ToolContext) -> ToolOutcome:
        name = args.string("name")
        skills = find_skills(self._dirs)
        skill = next((s for s in skills if s.name == name), None)
        if skill is None:
            known = ", ".join(s.name for s in skills) or "none"
            raise ToolFailure(f"there is no skill {name!r}; the skills are: {known}")
        others = sorted(
            str(path.relative_to(skill.folder))
            for path in skill.folder.rglob("*")
            if path.is_file() and path.name != SKILL_FILE
        )[:100]
        files = f"\n\n[files beside it in {skill.folder}: {', '.join(others)}]" if others else ""
        text = f"# Skill: {skill.name}\n\n{skill.body}{files}"
        return ToolOutcome(text=cap_text(text, context.output_cap))
