"""Operations on a session's settings: tools only when idle (M4), model per session (M1), goals (R2),
reload (R1), and what the system prompt is made of (B4, A4)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from anyy.domain.errors import Conflict, InvalidInput
from anyy.domain.model_io import TextDelta
from anyy.domain.sessions import Goal
from anyy.profiles.roles import LoadedRole
from anyy.providers.gates import Gate
from anyy.runtime.deps import RuntimeSettings
from anyy.runtime.prompt import read_memory, system_prompt
from tests.runtime.harness import Harness


async def test_m4_tools_are_configured_only_when_the_session_is_idle(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with Harness(tmp_path) as h:
            session = await h.session()
            gate = Gate()
            h.model.enqueue([gate, TextDelta(text="done")])
            await h.send(session.id, "work")
            await asyncio.to_thread(gate.reached.wait_blocking, 10)
            await h.send(session.id, "queued", kind="follow_up")
            with pytest.raises(Conflict, match="a response is running"):
                await h.rt.configure_tools(session.id, ["echo"], codemode=False)
            execution_id = h.rt.running_execution(session.id)
            assert execution_id is not None
            await h.rt.stop(session.id, execution_id)
            await h.state("interrupted")
            # Something queued (accepted, not yet run) is not idle either.
            with pytest.raises(Conflict, match="waiting in its queue"):
                await h.rt.configure_tools(session.id, ["echo"], codemode=False)
            await h.store(lambda s: s.clear_queue(session.id))
            configured = await h.rt.configure_tools(session.id, ["echo", "slow"], codemode=True)
            assert configured.tools == {"enabled": ["echo", "slow"], "codemode": True}

    await scenario()


async def test_m1_model_changes_apply_to_this_session_only_and_are_recorded(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with Harness(tmp_path) as h:
            one = await h.session(provider="offline", model="offline")
            two = await h.session(provider="offline", model="offline")
            changed = await h.rt.set_model(one.id, model="bigger", effort="high")
            assert (changed.model, changed.effort) == ("bigger", "high")
            assert (await h.store(lambda s: s.get_session(two.id))).model == "offline"
            assert (await h.texts(one.id))[-1] == "model_change:offline/bigger (high)"
            h.model.enqueue("ok")
            await h.send(one.id, "hi")
            await h.state("completed")
            assert h.model.requests[-1].model == "bigger"
            assert h.model.requests[-1].effort == "high"

    await scenario()


async def test_r2_goals_are_metadata_that_start_and_stop_nothing(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with Harness(tmp_path) as h:
            session = await h.session()
            assert await h.rt.goal(session.id, "status") is None
            assert await h.rt.goal(session.id, "set", "ship the release") == Goal(text="ship the release")
            assert await h.rt.goal(session.id, "pause") == Goal(text="ship the release", state="paused")
            assert await h.rt.goal(session.id, "resume") == Goal(text="ship the release", state="active")
            assert await h.rt.goal(session.id, "clear") is None
            with pytest.raises(Conflict):
                await h.rt.goal(session.id, "pause")
            with pytest.raises(InvalidInput):
                await h.rt.goal(session.id, "set", "  ")
            assert h.model.requests == []
            assert await h.store(lambda s: s.list_executions(session.id)) == []

    await scenario()


async def test_r1_reload_reports_each_step_and_needs_an_idle_session(tmp_path: Path) -> None:
    """The steps and the idle rule. What the settings step re-reads and applies is tested on a real
    Gateway and profile (tests/gateway/test_profile_settings.py): this harness has no config.toml."""

    async def scenario() -> None:
        async with Harness(tmp_path) as h:
            session = await h.session()
            steps = await h.rt.reload(session.id)
            assert [(s.step, s.applied) for s in steps] == [
                ("settings", True),
                ("role and memory", True),
                ("model", True),
            ]
            assert h.system_prompts  # the role and memory were read again
            gate = Gate()
            h.model.enqueue([gate, TextDelta(text="x")])
            await h.send(session.id, "busy now")
            await asyncio.to_thread(gate.reached.wait_blocking, 10)
            with pytest.raises(Conflict):
                await h.rt.reload(session.id)
            gate.open()
            await h.state("completed")

    await scenario()


def test_b4_a4_the_system_prompt_is_role_identity_soul_and_a_memory_snapshot(tmp_path: Path) -> None:
    (tmp_path / "USER.md").write_text("I prefer short answers.\n")
    (tmp_path / "MEMORY.md").write_text("")
    role = LoadedRole(
        name="scribe", path=tmp_path / "scribe.toml", identity="You are Scribe.", soul="Be exact.", description=""
    )
    prompt = system_prompt(role, read_memory(tmp_path))
    assert prompt.startswith("You are Scribe.")
    assert "## Soul\n\nBe exact." in prompt
    assert "I prefer short answers." in prompt
    assert "MEMORY.md" not in prompt  # an empty file adds nothing


async def test_a4_compaction_never_writes_memory(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with Harness(tmp_path, settings=RuntimeSettings(keep_fraction=0.001)) as h:
            memory = tmp_path / "memory"
            (memory / "MEMORY.md").write_text("my notes\n")
            session = await h.session()
            for i in range(2):
                h.model.enqueue(f"answer {i}")
                await h.send(session.id, f"question {i}")
                await h.state("completed")
            h.model.enqueue("the summary")
            assert await h.rt.compact(session.id)
            assert (memory / "MEMORY.md").read_text() == "my notes\n"
            assert sorted(p.name for p in memory.iterdir()) == ["MEMORY.md"]

    await scenario()
