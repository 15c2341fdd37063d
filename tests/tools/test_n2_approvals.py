"""N2: approval rules from [tools.approval]: deny gives the model a tool result saying so; ask suspends
the execution on an approval request (like a clarification: it survives a restart, a stop ends it),
answered once, for the session, or denied (Runtime.approve, the RPC session.approve)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import msgspec
import pytest

from anyy.api.events import ExecutionStateChanged
from anyy.domain.entries import EntryKind
from anyy.domain.errors import Conflict, InvalidInput
from anyy.domain.queue import NewSubmission
from anyy.domain.sessions import Session
from anyy.profiles.profile import Profile, create_profile
from anyy.providers.registry import ModelRegistry
from anyy.runtime.assembly import build_deps, new_session
from anyy.runtime.deps import Deps
from anyy.runtime.runtime import Runtime
from tests.fakes.model_server import FakeModelServer, Reply, ToolCall

RULES = """
[tools.approval]
shell = { "rm *" = "deny", "echo *" = "ask", "*" = "allow" }
"""


def _profile(tmp_path: Path, server: FakeModelServer, rules: str = RULES) -> Profile:
    profile = create_profile(tmp_path / "home", "default", exist_ok=True)
    config_path = profile.path / "config.toml"
    config_path.write_text(
        config_path.read_text()
        + f'\n[providers.fake]\nkind = "openai"\nbase_url = "{server.openai_url}"\napi_key_env = ""\n'
        + rules
    )
    (tmp_path / "work").mkdir(exist_ok=True)
    return profile


@asynccontextmanager
async def _runtime(profile: Profile, work: Path) -> AsyncIterator[tuple[Runtime, Deps]]:
    deps = build_deps(profile, workdir=work)
    deps.owner.start()
    runtime = Runtime(deps)
    await runtime.start()
    try:
        yield runtime, deps
    finally:
        await runtime.aclose()
        assert isinstance(deps.models, ModelRegistry)
        await deps.models.aclose()
        await deps.owner.aclose()


async def _until(deps: Deps, session: Session, *states: str) -> ExecutionStateChanged:
    events = deps.bus.subscribe(session.id)

    async def wait() -> ExecutionStateChanged:
        while True:
            event = await events.get()
            if isinstance(event, ExecutionStateChanged) and event.state in states:
                return event

    try:
        return await asyncio.wait_for(wait(), 60)
    finally:
        events.close()


async def _session(runtime: Runtime, deps: Deps, profile: Profile) -> Session:
    spec = msgspec.structs.replace(new_session(profile.load_config()), provider="fake", model="m")
    return await deps.owner.call(lambda s: s.create_session(spec))


async def _send(runtime: Runtime, deps: Deps, session: Session, text: str, *states: str) -> ExecutionStateChanged:
    waiting = asyncio.create_task(_until(deps, session, *states))
    await asyncio.sleep(0)  # the subscription exists before the submission can start
    await runtime.submit(session.id, NewSubmission(text=text))
    return await waiting


def _tool_results(server: FakeModelServer, index: int) -> list[str]:
    return [m["content"] for m in server.received[index].body["messages"] if m["role"] == "tool"]


def test_n2_a_denied_command_returns_a_tool_result_saying_so(tmp_path: Path, server: FakeModelServer) -> None:
    server.enqueue(Reply(tool_calls=[ToolCall("shell", {"command": "rm -rf keep"})]), Reply(text=["OK."]))
    profile = _profile(tmp_path, server)
    (tmp_path / "work" / "keep").mkdir()

    async def scenario() -> None:
        async with _runtime(profile, tmp_path / "work") as (runtime, deps):
            session = await _session(runtime, deps, profile)
            end = await _send(runtime, deps, session, "clean up", "completed", "failed", "suspended")
            assert end.state == "completed"

    asyncio.run(scenario())
    assert (tmp_path / "work" / "keep").is_dir()
    [result] = _tool_results(server, 1)
    assert result.startswith(
        "Error: Denied: the profile's approval rules deny shell (the command 'rm -rf keep' matches the pattern 'rm *')"
    )


def test_n2_ask_suspends_and_once_runs_the_call(tmp_path: Path, server: FakeModelServer) -> None:
    server.enqueue(
        Reply(tool_calls=[ToolCall("shell", {"command": "echo approved > out.txt"})]),
        Reply(text=["Written."]),
    )
    profile = _profile(tmp_path, server)

    async def scenario() -> None:
        async with _runtime(profile, tmp_path / "work") as (runtime, deps):
            session = await _session(runtime, deps, profile)
            asked = await _send(runtime, deps, session, "write it", "suspended", "completed", "failed")
            assert asked.state == "suspended"
            path = await deps.owner.call(lambda s: s.path(session.id))
            question = next(e for e in path if e.kind == EntryKind.QUESTION)
            assert question.text.startswith("Approval needed: shell 'echo approved > out.txt'\n")
            assert "Decision: ask, because 'echo approved' matches the rule 'echo *' = ask.\n" in question.text
            assert "- '> out.txt': allowed by '*'" in question.text
            assert "session.approve" not in question.text  # the request speaks to people, not to RPC clients
            assert not (tmp_path / "work" / "out.txt").exists()
            with pytest.raises(InvalidInput, match="decision must be one of once, session, deny"):
                await runtime.approve(session.id, asked.execution_id, "yes please")
            done = asyncio.create_task(_until(deps, session, "completed", "failed"))
            await asyncio.sleep(0)
            await runtime.approve(session.id, asked.execution_id, "once")
            assert (await done).state == "completed"
            refreshed = await deps.owner.call(lambda s: s.get_session(session.id))
            assert "approved" not in refreshed.tools  # once is not remembered

    asyncio.run(scenario())
    assert (tmp_path / "work" / "out.txt").read_text() == "approved\n"
    assert _tool_results(server, 1) == ["[exit code 0]"]


def test_n2_session_approval_is_remembered_and_deny_is_told(tmp_path: Path, server: FakeModelServer) -> None:
    call = ToolCall("shell", {"command": "echo hi"})
    server.enqueue(
        Reply(tool_calls=[call]),
        Reply(text=["One."]),
        Reply(tool_calls=[ToolCall("shell", {"command": "echo hi"})]),  # the same call: no question now
        Reply(text=["Two."]),
        Reply(tool_calls=[ToolCall("shell", {"command": "echo other"})]),  # another one asks again
        Reply(text=["Three."]),
    )
    profile = _profile(tmp_path, server)

    async def scenario() -> None:
        async with _runtime(profile, tmp_path / "work") as (runtime, deps):
            session = await _session(runtime, deps, profile)
            asked = await _send(runtime, deps, session, "one", "suspended")
            done = asyncio.create_task(_until(deps, session, "completed", "failed"))
            await asyncio.sleep(0)
            await runtime.approve(session.id, asked.execution_id, "session")
            assert (await done).state == "completed"
            second = await _send(runtime, deps, session, "two", "completed", "failed", "suspended")
            assert second.state == "completed"
            third = await _send(runtime, deps, session, "three", "completed", "failed", "suspended")
            assert third.state == "suspended"
            done = asyncio.create_task(_until(deps, session, "completed", "failed"))
            await asyncio.sleep(0)
            await runtime.approve(session.id, third.execution_id, "deny")
            assert (await done).state == "completed"
            refreshed = await deps.owner.call(lambda s: s.get_session(session.id))
            assert refreshed.tools["approved"] == ["shell\necho hi"]

    asyncio.run(scenario())
    assert _tool_results(server, 3)[-1].startswith("hi\n")
    assert _tool_results(server, 5)[-1] == "Error: Denied: the user did not approve this call."


def test_n2_an_approval_request_survives_a_restart_and_a_stop_ends_it(tmp_path: Path, server: FakeModelServer) -> None:
    server.enqueue(
        Reply(tool_calls=[ToolCall("shell", {"command": "echo after-restart > r.txt"})]),
        Reply(text=["Done."]),
        Reply(tool_calls=[ToolCall("shell", {"command": "echo never > n.txt"})]),
    )
    profile = _profile(tmp_path, server)
    work = tmp_path / "work"

    async def scenario() -> None:
        async with _runtime(profile, work) as (runtime, deps):
            session = await _session(runtime, deps, profile)
            asked = await _send(runtime, deps, session, "write after a restart", "suspended")
        async with _runtime(profile, work) as (runtime, deps):  # a new Gateway process, same profile
            done = asyncio.create_task(_until(deps, session, "completed", "failed"))
            await asyncio.sleep(0)
            await runtime.approve(session.id, asked.execution_id, "once")
            assert (await done).state == "completed"
            stopped = await _send(runtime, deps, session, "another", "suspended")
            assert await runtime.stop(session.id, stopped.execution_id)
            with pytest.raises(Conflict):
                await runtime.approve(session.id, stopped.execution_id, "once")

    asyncio.run(scenario())
    assert (work / "r.txt").read_text() == "after-restart\n"
    assert not (work / "n.txt").exists()
