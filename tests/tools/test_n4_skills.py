"""N4: skills (SKILL.md folders) from the profile's skills/ and the working directory's .agents/skills and
.claude/skills: the model sees names and descriptions in the system prompt, loads one with the skill
tool, and a skill added later is seen at the next execution (and by session.reload)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import msgspec

from anyy.api.events import ExecutionStateChanged
from anyy.domain.queue import NewSubmission
from anyy.domain.sessions import Session
from anyy.profiles.profile import create_profile
from anyy.providers.registry import ModelRegistry
from anyy.runtime.assembly import build_deps, new_session
from anyy.runtime.deps import Deps
from anyy.runtime.runtime import Runtime
from tests.fakes.model_server import FakeModelServer, Reply, ToolCall


def _skill(folder: Path, name: str, description: str, body: str) -> None:
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(f"---\nname: {name}\ndescription: {description}\n---\n\n{body}\n")


async def _turn(runtime: Runtime, deps: Deps, session: Session, text: str) -> str:
    events = deps.bus.subscribe(session.id)
    await runtime.submit(session.id, NewSubmission(text=text))

    async def completed() -> str:
        while True:
            event = await events.get()
            if isinstance(event, ExecutionStateChanged) and event.state in ("completed", "failed"):
                return event.state

    state = await asyncio.wait_for(completed(), 60)
    events.close()
    return state


def _system(body: dict[str, object]) -> str:
    messages = body["messages"]
    assert isinstance(messages, list)
    return str(messages[0]["content"]) if messages[0]["role"] == "system" else ""


def test_n4_skills_are_listed_and_loaded_on_demand(tmp_path: Path) -> None:
    server = FakeModelServer()
    server.start()
    try:
        server.enqueue(
            Reply(tool_calls=[ToolCall("skill", {"name": "release-notes"})]),
            Reply(text=["Done."]),
            Reply(text=["Seen."]),
        )
        work = tmp_path / "work"
        profile = create_profile(tmp_path / "home", "default")
        _skill(
            profile.path / "skills" / "notes",
            "release-notes",
            "Write release notes from git log",
            "STEP ONE: run git log.",
        )
        _skill(work / ".claude" / "skills" / "pdf", "pdf-forms", "Fill PDF forms", "Use pdftk.")
        _skill(work / ".agents" / "skills" / "notes", "release-notes", "The project's own notes", "PROJECT STEPS.")
        (work / ".agents" / "skills" / "notes" / "template.md").write_text("# Notes\n")
        (work / ".claude" / "skills" / "broken").mkdir()
        (work / ".claude" / "skills" / "broken" / "SKILL.md").write_text("no front matter, no description\n")

        async def scenario() -> None:
            config_path = profile.path / "config.toml"
            config_path.write_text(
                config_path.read_text()
                + f'\n[providers.fake]\nkind = "openai"\nbase_url = "{server.openai_url}"\napi_key_env = ""\n'
            )
            deps = build_deps(profile, workdir=work)
            deps.owner.start()
            runtime = Runtime(deps)
            await runtime.start()
            try:
                spec = msgspec.structs.replace(new_session(profile.load_config()), provider="fake", model="m")
                session = await deps.owner.call(lambda s: s.create_session(spec))
                assert await _turn(runtime, deps, session, "write the release notes") == "completed"
                _skill(profile.path / "skills" / "later", "later-skill", "Added while running", "LATER BODY")
                steps = await runtime.reload(session.id)
                assert any(s.step == "role and memory" and s.applied for s in steps)
                assert await _turn(runtime, deps, session, "again") == "completed"
            finally:
                await runtime.aclose()
                assert isinstance(deps.models, ModelRegistry)
                await deps.models.aclose()
                await deps.owner.aclose()

        asyncio.run(scenario())
        first, second, third = (r.body for r in server.received)
        system = _system(first)
        assert "- release-notes: The project's own notes" in system  # the working directory's wins
        assert "- pdf-forms: Fill PDF forms" in system
        assert "broken" not in system
        assert "PROJECT STEPS" not in system  # bodies only on demand
        assert "skill" in [tool["function"]["name"] for tool in first["tools"]]
        result = next(m for m in second["messages"] if m["role"] == "tool")
        assert result["content"].startswith("# Skill: release-notes\n\nPROJECT STEPS.")
        assert "template.md" in result["content"]
        assert "- later-skill: Added while running" in _system(third)
    finally:
        server.stop()
