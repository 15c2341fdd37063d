"""An imported session continues with any provider (I2): the offline model, and the real Anthropic and
OpenAI SDKs against the fake model server, each receiving the imported tool calls paired with their
results."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from anyy.api.events import ExecutionStateChanged
from anyy.cli.import_sources import parse_sessions
from anyy.domain.queue import NewSubmission
from anyy.domain.sessions import SessionPatch
from anyy.profiles.profile import create_profile
from anyy.providers.registry import ModelRegistry
from anyy.runtime.assembly import build_deps
from anyy.runtime.runtime import Runtime
from anyy.storage.imports import write_import
from tests.fakes.model_server import FakeModelServer, Reply
from tests.importers.conftest import Made

TIMEOUT = 60.0
FORMATS = {"claude": "claude-code", "codex": "codex", "pi": "pi", "acp": "opencode", "hermes": "hermes"}
PROVIDERS = {
    "offline": ("offline", "offline"),
    "anthropic": ("fake-anthropic", "claude-test"),
    "openai": ("fake-openai", "gpt-test"),
}


def _calls_and_results(body: dict[str, Any]) -> tuple[list[str], list[str]]:
    """The tool-call ids and the ids results answer, in a request of either API."""
    calls: list[str] = []
    results: list[str] = []
    for message in body.get("messages", []):
        for call in message.get("tool_calls") or []:
            calls.append(call["id"])
        if message.get("role") == "tool":
            results.append(message["tool_call_id"])
        for block in message.get("content") if isinstance(message.get("content"), list) else []:
            if block.get("type") == "tool_use":
                calls.append(block["id"])
            if block.get("type") == "tool_result":
                results.append(block["tool_use_id"])
    return calls, results


@pytest.mark.parametrize("provider", list(PROVIDERS))
async def test_i2_imported_session_continues_with_any_provider(made: Made, provider: str, tmp_path: Path) -> None:
    server = FakeModelServer()
    server.start()
    server.enqueue(Reply(text=["continued"]))
    try:
        profile = create_profile(tmp_path / "home", "default")
        config = profile.path / "config.toml"
        config.write_text(
            config.read_text()
            + f'\n[providers.fake-anthropic]\nkind = "anthropic"\nbase_url = "{server.anthropic_url}"\n'
            'api_key_env = "ANYY_TEST_ANTHROPIC_KEY"\n'
            f'\n[providers.fake-openai]\nkind = "openai"\nbase_url = "{server.openai_url}"\n'
            'api_key_env = "ANYY_TEST_OPENAI_KEY"\n'
        )
        deps = build_deps(profile, workdir=made.workdir)
        deps.owner.start()
        runtime = Runtime(deps)
        await runtime.start()
        parsed = parse_sessions(FORMATS[made.name], made.files[0])[0]  # the first session: the one with a call
        assert not isinstance(parsed, Exception)
        imported = await deps.owner.call(lambda s: write_import(s, parsed))
        name, model = PROVIDERS[provider]
        session_id = imported.session.id
        await deps.owner.call(lambda s: s.update_session(session_id, SessionPatch(provider=name, model=model)))
        events = deps.bus.subscribe(session_id)
        await runtime.submit(session_id, NewSubmission(text="go on"))

        async def ended() -> str:
            while True:
                event = await events.get()
                if isinstance(event, ExecutionStateChanged) and event.state in ("completed", "failed"):
                    return event.state

        with pytest.MonkeyPatch.context() as mp:
            mp.setenv("ANYY_TEST_ANTHROPIC_KEY", "sk-ant-test")
            mp.setenv("ANYY_TEST_OPENAI_KEY", "sk-test")
            state = await asyncio.wait_for(ended(), TIMEOUT)
        events.close()
        path = await deps.owner.call(lambda s: s.path(session_id))
        await runtime.aclose()
        if isinstance(deps.models, ModelRegistry):
            await deps.models.aclose()
        await deps.owner.aclose()
        assert state == "completed", path[-1].text
        if provider != "offline":
            assert path[-1].text == "continued"
            [request] = server.received
            calls, results = _calls_and_results(request.body)
            assert calls
            assert sorted(calls) == sorted(results)
    finally:
        server.stop()
