"""N1: MCP servers as tool sources, through the official SDK: tools namespaced by server, filtered, called,
capped; a server that hangs, crashes or writes garbage gives a tool error within its timeout and is
started again on the next use; tools/list_changed is honoured; stdio servers never see the secrets."""

from __future__ import annotations

import asyncio
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import msgspec
import pytest

from anyy.domain.errors import InvalidInput
from anyy.tools import BuiltinToolSource
from anyy.tools.base import ToolContext
from anyy.tools.mcp_servers import McpServers, McpServerSpec
from tests.mcp.conftest import FAULT_SERVER, fault_spec

pytestmark = pytest.mark.anyio


async def _servers(*specs: McpServerSpec) -> McpServers:
    servers = McpServers(specs)
    await servers.ready()
    return servers


def _starts(path: Path) -> int:
    return len(path.read_text().split())


async def test_n1_stdio_tools_are_namespaced_selected_and_called(starts: Path, context: ToolContext) -> None:
    servers = await _servers(fault_spec(starts))
    try:
        source = BuiltinToolSource(servers)
        tools = source.tools_for(["read_file", "mcp_faults_*"], codemode=False)
        assert "read_file" in tools.names()
        assert {"mcp_faults_echo", "mcp_faults_hang", "mcp_faults_crash"} <= set(tools.names())
        one = source.tools_for(["mcp_faults_echo"], codemode=False)
        assert one.names() == ("mcp_faults_echo",)
        echo = next(spec for spec in one.specs() if spec.name == "mcp_faults_echo")
        assert echo.parameters["properties"]["text"]["type"] == "string"
        outcome = await one.run("mcp_faults_echo", {"text": "hi"}, context)
        assert (outcome.text, outcome.is_error) == ("echo: hi", False)
        with pytest.raises(InvalidInput, match="names no configured MCP server"):
            source.tools_for(["mcp_nosuch_tool"], codemode=False)
    finally:
        await servers.aclose()


async def test_n1_include_and_exclude_globs(starts: Path) -> None:
    servers = await _servers(fault_spec(starts, include=("e*", "g*", "big"), exclude=("garbage",)))
    try:
        names = BuiltinToolSource(servers).tools_for(["mcp_*"], codemode=False).names()
        assert sorted(names) == ["mcp_faults_big", "mcp_faults_echo", "mcp_faults_grow"]
    finally:
        await servers.aclose()


@pytest.mark.parametrize("fault", ["hang", "crash", "garbage"])
async def test_n1_a_broken_server_gives_a_tool_error_in_time_and_restarts(
    fault: str, starts: Path, context: ToolContext
) -> None:
    servers = await _servers(fault_spec(starts, timeout=3.0))
    try:
        tools = BuiltinToolSource(servers).tools_for(["mcp_faults_*"], codemode=False)
        started = time.monotonic()
        outcome = await tools.run(f"mcp_faults_{fault}", {}, context)
        elapsed = time.monotonic() - started
        assert outcome.is_error
        assert "the MCP server 'faults'" in outcome.text
        assert elapsed < 3.0 + 10, elapsed  # the timeout, with room for a busy machine; never stuck
        again = await tools.run("mcp_faults_echo", {"text": "back"}, context)
        assert (again.text, again.is_error) == ("echo: back", False)
        assert _starts(starts) == 2  # started again on the next use
    finally:
        await servers.aclose()


async def test_n1_output_is_capped_like_builtin_tools(starts: Path, context: ToolContext) -> None:
    servers = await _servers(fault_spec(starts))
    try:
        tools = BuiltinToolSource(servers).tools_for(["mcp_faults_big"], codemode=False)
        outcome = await tools.run("mcp_faults_big", {"size": 50_000}, msgspec.structs.replace(context, output_cap=1000))
        assert len(outcome.text) < 1100
        assert "characters cut from the middle of the output" in outcome.text
    finally:
        await servers.aclose()


async def test_n1_tools_list_changed_is_honoured(starts: Path, context: ToolContext) -> None:
    servers = await _servers(fault_spec(starts))
    try:
        source = BuiltinToolSource(servers)
        assert "mcp_faults_added" not in source.tools_for(["mcp_faults_*"], codemode=False).names()
        await source.tools_for(["mcp_faults_grow"], codemode=False).run("mcp_faults_grow", {}, context)
        deadline = time.monotonic() + 20
        while "mcp_faults_added" not in source.tools_for(["mcp_faults_*"], codemode=False).names():
            assert time.monotonic() < deadline, "the tool list was not refreshed after list_changed"
            await asyncio.sleep(0.02)  # a yield to the refresh task, bounded by the deadline above
        added = await source.tools_for(["mcp_faults_added"], codemode=False).run("mcp_faults_added", {}, context)
        assert added.text == "added says hello"
    finally:
        await servers.aclose()


async def test_n1_stdio_servers_never_see_the_gateways_secrets(
    starts: Path, context: ToolContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret")
    monkeypatch.setenv("GITHUB_TOKEN", "ghp-secret")
    servers = await _servers(fault_spec(starts, env=(("FAULT_SERVER_STARTS", str(starts)), ("OWN_TOKEN", "mine"))))
    try:
        tools = BuiltinToolSource(servers).tools_for(["mcp_faults_secret_env"], codemode=False)
        outcome = await tools.run("mcp_faults_secret_env", {}, context)
        assert outcome.text == "OWN_TOKEN"  # its own env table only
    finally:
        await servers.aclose()


async def test_n1_a_server_that_cannot_start_is_reported_not_fatal(context: ToolContext) -> None:
    servers = await _servers(McpServerSpec(name="broken", command="/nonexistent/server", timeout=5.0))
    try:
        assert "broken: unavailable" in await servers.refresh()
        assert BuiltinToolSource(servers).tools_for(["mcp_broken_*"], codemode=False).names() == ()
    finally:
        await servers.aclose()


@pytest.fixture
def http_server(starts: Path) -> Iterator[str]:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = subprocess.Popen(
        [sys.executable, str(FAULT_SERVER), "--http", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert process.poll() is None, "the HTTP fault server exited"
                assert time.monotonic() < deadline, "the HTTP fault server did not listen"
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.kill()
        process.wait(10)


async def test_n1_streamable_http_server(http_server: str, context: ToolContext) -> None:
    servers = await _servers(McpServerSpec(name="web", url=http_server, headers=(("X-Test", "1"),), timeout=10.0))
    try:
        tools = BuiltinToolSource(servers).tools_for(["mcp_web_echo", "mcp_web_hang"], codemode=False)
        outcome = await tools.run("mcp_web_echo", {"text": "over http"}, context)
        assert (outcome.text, outcome.is_error) == ("echo: over http", False)
        hung = await tools.run("mcp_web_hang", {}, msgspec.structs.replace(context, timeout=2))
        assert hung.is_error
        assert "did not answer" in hung.text
        again = await tools.run("mcp_web_echo", {"text": "again"}, context)
        assert again.text == "echo: again"
    finally:
        await servers.aclose()
