"""N1 end to end: a profile with an MCP server, a model (the fake OpenAI-compatible server) that calls
its tool, the result in the next request; session.tools.configure and session.reload (its own step)."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import msgspec
import pytest

from anyy.api.events import ExecutionStateChanged
from anyy.domain.errors import InvalidInput
from anyy.domain.queue import NewSubmission
from anyy.domain.sessions import Session
from anyy.profiles.profile import create_profile
from anyy.providers.registry import ModelRegistry
from anyy.runtime.assembly import build_deps, new_session
from anyy.runtime.deps import Deps
from anyy.runtime.runtime import Runtime
from tests.fakes.model_server import FakeModelServer, Reply, ToolCall
from tests.mcp.conftest import FAULT_SERVER

TIMEOUT = 60


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


def test_n1_a_model_calls_an_mcp_tool_and_reload_refreshes_the_servers(tmp_path: Path) -> None:
    server = FakeModelServer()
    server.start()
    try:
        server.enqueue(
            Reply(tool_calls=[ToolCall("mcp_faults_echo", {"text": "from the model"})]),
            Reply(text=["The server said it."]),
        )

        async def scenario() -> None:
            profile = create_profile(tmp_path / "home", "default")
            config_path = profile.path / "config.toml"
            config_path.write_text(
                config_path.read_text().replace('enabled = ["read_file"', 'enabled = ["mcp_faults_echo", "read_file"')
                + f'\n[providers.fake]\nkind = "openai"\nbase_url = "{server.openai_url}"\napi_key_env = ""\n'
                f"\n[mcp]\nwait = 60\n"  # the first turn waits for the server, however busy the machine
                f'\n[mcp.servers.faults]\ncommand = "{sys.executable}"\nargs = ["{FAULT_SERVER}"]\ntimeout = 20\n'
            )
            (tmp_path / "work").mkdir()
            deps = build_deps(profile, workdir=tmp_path / "work")
            deps.owner.start()
            runtime = Runtime(deps)
            await runtime.start()
            try:
                spec = new_session(profile.load_config())
                spec = msgspec.structs.replace(spec, provider="fake", model="m")
                session = await deps.owner.call(lambda s: s.create_session(spec))
                assert await _turn(runtime, deps, session, "ask the server") == "completed"

                with pytest.raises(InvalidInput, match="names no configured MCP server"):
                    await runtime.configure_tools(session.id, ["mcp_other_x"], codemode=False)
                configured = await runtime.configure_tools(session.id, ["mcp_faults_*"], codemode=True)
                assert configured.tools["enabled"] == ["mcp_faults_*"]

                renamed = config_path.read_text().replace("[mcp.servers.faults]", "[mcp.servers.renamed]")
                config_path.write_text(renamed.replace('"mcp_faults_echo"', '"mcp_renamed_echo"'))
                steps = await runtime.reload(session.id)
                assert [s.step for s in steps][-1] == "tool servers"
                assert steps[-1].applied
                assert steps[-1].detail.startswith("renamed: ")
            finally:
                await runtime.aclose()
                assert isinstance(deps.models, ModelRegistry)
                await deps.models.aclose()  # the SDK's HTTP client, closed in this loop
                await deps.owner.aclose()

        asyncio.run(scenario())
        first, second = (r.body for r in server.received)
        offered = [tool["function"]["name"] for tool in first["tools"]]
        assert "mcp_faults_echo" in offered
        result = [m for m in second["messages"] if m["role"] == "tool"]
        assert result[-1]["content"] == "echo: from the model"
    finally:
        server.stop()
