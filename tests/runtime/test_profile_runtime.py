"""The runtime as a profile configures it: the offline model out of the box (M5), roles (B4), memory
(A4), profile defaults for new sessions (M1, M3), and the virtual-model fallback (M2)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import msgspec
import pytest

from anyy.api.events import ExecutionStateChanged
from anyy.domain.entries import EntryKind
from anyy.domain.queue import NewSubmission
from anyy.domain.sessions import Session
from anyy.profiles.profile import create_profile
from anyy.providers.offline import OfflineProvider
from anyy.providers.registry import ModelRegistry
from anyy.runtime.assembly import build_deps, new_session
from anyy.runtime.deps import Deps
from anyy.runtime.runtime import Runtime
from tests.fakes.model_server import FakeModelServer, Reply, ToolCall

TIMEOUT = 60.0  # a bound for a hung turn, not a window: a cold SDK import on a loaded machine takes seconds


async def _turn(runtime: Runtime, deps: Deps, session: Session, text: str) -> str:
    events = deps.bus.subscribe(session.id)
    await runtime.submit(session.id, NewSubmission(text=text))

    async def completed() -> str:
        while True:
            event = await events.get()
            if isinstance(event, ExecutionStateChanged) and event.state in ("completed", "failed"):
                return event.state

    state = await asyncio.wait_for(completed(), TIMEOUT)
    events.close()
    return state


async def test_m5_a_new_profile_talks_to_the_offline_model_out_of_the_box(tmp_path: Path) -> None:
    async def scenario() -> None:
        profile = create_profile(tmp_path / "home", "default")
        (tmp_path / "work").mkdir()
        (tmp_path / "work" / "todo.txt").write_text("buy milk\n")
        deps = build_deps(profile, workdir=tmp_path / "work")
        deps.owner.start()
        runtime = Runtime(deps)
        await runtime.start()
        config = profile.load_config()
        session = await deps.owner.call(lambda s: s.create_session(new_session(config)))
        assert (session.provider, session.model) == ("offline", "offline")
        assert session.tools["enabled"] == list(config.tools.enabled)
        assert await _turn(runtime, deps, session, "hello there") == "completed"
        assert await _turn(runtime, deps, session, "read todo.txt") == "completed"
        path = await deps.owner.call(lambda s: s.path(session.id))
        texts = [e.text for e in path]
        assert "offline model" in texts[1]
        assert any("buy milk" in t for t in texts[3:])
        await runtime.aclose()
        await deps.owner.aclose()

    await scenario()


async def test_b4_a4_the_role_and_memory_reach_the_model(tmp_path: Path) -> None:
    async def scenario() -> None:
        profile = create_profile(tmp_path / "home", "default")
        (profile.roles_dir / "scribe.toml").write_text('identity = "You are Scribe."\nsoul = "Write tersely."\n')
        profile.user_memory_path.write_text("The user is called Ana.\n")
        deps = build_deps(profile, workdir=tmp_path)
        model = OfflineProvider()
        config = profile.load_config()
        deps.models = ModelRegistry(
            {n: config.provider(n) for n in config.provider_names()}, instances={"offline": model}
        )
        deps.owner.start()
        runtime = Runtime(deps)
        session = await deps.owner.call(lambda s: s.create_session(new_session(config, role="scribe")))
        assert await _turn(runtime, deps, session, "hi") == "completed"
        system = model.requests[0].system
        assert system.startswith("You are Scribe.")
        assert "Write tersely." in system
        assert "The user is called Ana." in system
        await runtime.aclose()
        await deps.owner.aclose()

    await scenario()


async def test_m2_a_virtual_model_no_longer_registered_falls_back_to_the_last_physical_one(tmp_path: Path) -> None:
    async def scenario() -> None:
        profile = create_profile(tmp_path / "home", "default")
        cheap, smart = OfflineProvider("cheap"), OfflineProvider("smart")
        providers = {"cheap": cheap, "smart": smart}
        config = profile.load_config()
        settings = {n: config.provider(n) for n in config.provider_names()}
        deps = build_deps(profile, workdir=tmp_path)
        deps.models = ModelRegistry(settings, {"best": "smart/v2"}, instances=providers)
        deps.owner.start()
        runtime = Runtime(deps)
        session = await deps.owner.call(lambda s: s.create_session(new_session(config)))
        session = await runtime.set_model(session.id, provider="alias", model="best")
        assert await _turn(runtime, deps, session, "first") == "completed"
        assert smart.requests[-1].model == "v2"
        # The alias disappears from the configuration: the session keeps talking to smart/v2.
        deps.models = ModelRegistry(settings, {}, instances=providers)
        assert await _turn(runtime, deps, session, "second") == "completed"
        assert len(smart.requests) == 2
        assert cheap.requests == []
        path = await deps.owner.call(lambda s: s.path(session.id))
        last = path[-1]
        assert (last.data["provider"], last.data["model"]) == ("smart", "v2")
        notes = [e.text for e in path if e.kind == EntryKind.NOTICE]
        assert len(notes) == 1  # the user is told, once
        assert "no longer registered" in notes[0]
        assert "smart/v2" in notes[0]
        await runtime.aclose()
        await deps.owner.aclose()

    await scenario()


async def test_m6_programs_the_model_runs_never_see_the_providers_keys(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-very-secret")
    monkeypatch.setenv("MY_SERVICE_TOKEN", "tok-secret")
    monkeypatch.setenv("ANYY_HARMLESS", "visible")

    async def scenario() -> None:
        profile = create_profile(tmp_path / "home", "default")
        deps = build_deps(profile, workdir=tmp_path)
        deps.owner.start()
        runtime = Runtime(deps)
        config = profile.load_config()
        session = await deps.owner.call(lambda s: s.create_session(new_session(config)))
        assert await _turn(runtime, deps, session, "run: env") == "completed"
        path = await deps.owner.call(lambda s: s.path(session.id))
        output = next(e.text for e in path if e.kind == EntryKind.TOOL_RESULT)
        assert "ANYY_HARMLESS=visible" in output
        assert "sk-very-secret" not in output
        assert "tok-secret" not in output
        await runtime.aclose()
        await deps.owner.aclose()

    await scenario()


async def test_m5_anthropic_thinking_is_handed_back_while_the_calls_it_led_to_are_answered(tmp_path: Path) -> None:
    """With effort on, Claude's thinking block (with its signature) precedes its tool call; the pass that
    carries the call's result must give that block back first, verbatim, with thinking still on."""
    server = FakeModelServer()
    server.start()
    try:
        server.enqueue(
            Reply(thinking=["I should read ", "the file."], tool_calls=[ToolCall("read_file", {"path": "todo.txt"})]),
            Reply(thinking=["It says milk."], text=["You need milk."]),
        )

        async def scenario() -> None:
            profile = create_profile(tmp_path / "home", "default")
            config_path = profile.path / "config.toml"
            config_path.write_text(
                config_path.read_text()
                + f'\n[providers.claude]\nkind = "anthropic"\nbase_url = "{server.anthropic_url}"\n'
                'api_key_env = "ANYY_TEST_ANTHROPIC_KEY"\n'
            )
            (tmp_path / "work").mkdir()
            (tmp_path / "work" / "todo.txt").write_text("buy milk\n")
            deps = build_deps(profile, workdir=tmp_path / "work")
            deps.owner.start()
            runtime = Runtime(deps)
            await runtime.start()
            spec = new_session(profile.load_config())
            spec = msgspec.structs.replace(spec, provider="claude", model="claude-test", effort="high")
            session = await deps.owner.call(lambda s: s.create_session(spec))
            assert await _turn(runtime, deps, session, "what is on my list?") == "completed"
            await runtime.aclose()
            assert isinstance(deps.models, ModelRegistry)
            await deps.models.aclose()  # the SDK's HTTP client: left open, its cleanup runs in a later loop
            await deps.owner.aclose()

        with pytest.MonkeyPatch.context() as mp:
            mp.setenv("ANYY_TEST_ANTHROPIC_KEY", "sk-ant-test")
            await scenario()
        first, second = (r.body for r in server.received)
        assert first["thinking"]["type"] == "enabled"
        assert second["thinking"]["type"] == "enabled"  # still on while the tool turn goes on
        assistant = second["messages"][1]
        assert assistant["role"] == "assistant"
        assert assistant["content"][0] == {
            "type": "thinking",
            "thinking": "I should read the file.",
            "signature": "sig",
        }
        assert assistant["content"][1]["type"] == "tool_use"
        assert second["messages"][2]["content"][0]["type"] == "tool_result"
        assert "buy milk" in second["messages"][2]["content"][0]["content"]
    finally:
        server.stop()
