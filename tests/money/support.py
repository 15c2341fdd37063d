"""A profile whose providers are the loopback fake model servers, and a runtime over it (Y1-Y3 tests)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

import msgspec

from anyy.api.events import ExecutionStateChanged
from anyy.domain.queue import NewSubmission
from anyy.domain.sessions import Session
from anyy.profiles.profile import Profile, create_profile
from anyy.providers.registry import ModelRegistry
from anyy.runtime.assembly import build_deps, new_session
from anyy.runtime.deps import Deps
from anyy.runtime.runtime import Runtime
from tests.fakes.model_server import FakeModelServer

TIMEOUT = 60.0  # a bound for a hung turn, not a window: a cold SDK import on a loaded machine takes seconds
ENDS = ("completed", "failed", "interrupted", "timed_out", "budget_exhausted")
KEYS = {"ANYY_TEST_OPENAI_KEY": "sk-test", "ANYY_TEST_ANTHROPIC_KEY": "sk-ant-test"}


def money_profile(home: Path, server: FakeModelServer, extra: str = "") -> Profile:
    """A profile with ``gpt`` (the OpenAI kind) and ``claude`` (the Anthropic kind) on ``server``."""
    profile = create_profile(home, "default")
    config = profile.path / "config.toml"
    config.write_text(
        config.read_text() + f'\n[providers.gpt]\nkind = "openai"\nbase_url = "{server.openai_url}"\n'
        'api_key_env = "ANYY_TEST_OPENAI_KEY"\n'
        f'\n[providers.claude]\nkind = "anthropic"\nbase_url = "{server.anthropic_url}"\n'
        'api_key_env = "ANYY_TEST_ANTHROPIC_KEY"\n' + extra
    )
    return profile


@contextlib.asynccontextmanager
async def running(profile: Profile, workdir: Path) -> AsyncIterator[tuple[Runtime, Deps]]:
    workdir.mkdir(exist_ok=True)
    deps = build_deps(profile, workdir=workdir)
    deps.owner.start()
    runtime = Runtime(deps)
    await runtime.start()
    try:
        yield runtime, deps
    finally:
        await runtime.aclose()
        if isinstance(deps.models, ModelRegistry):
            await deps.models.aclose()
        await deps.owner.aclose()


async def new_chat(deps: Deps, profile: Profile, provider: str, model: str) -> Session:
    spec = msgspec.structs.replace(new_session(profile.load_config()), provider=provider, model=model, tools={})
    return await deps.owner.call(lambda s: s.create_session(spec))


async def turn(runtime: Runtime, deps: Deps, session: Session, text: str) -> str:
    """Send ``text`` and wait for the execution's end state."""
    events = deps.bus.subscribe(session.id)
    await runtime.submit(session.id, NewSubmission(text=text))

    async def ended() -> str:
        while True:
            event = await events.get()
            if isinstance(event, ExecutionStateChanged) and event.state in ENDS:
                return str(event.state)

    try:
        return await asyncio.wait_for(ended(), TIMEOUT)
    finally:
        events.close()
