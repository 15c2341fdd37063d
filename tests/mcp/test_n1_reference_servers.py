"""N1 against real MCP servers nobody here wrote: the filesystem and "everything" reference servers (npm)
and mcp-server-time (PyPI), pinned and installed by scripts/setup-mcp-servers, run offline over stdio."""

from __future__ import annotations

from pathlib import Path

import pytest

from anyy.tools import BuiltinToolSource
from anyy.tools.base import ToolContext
from anyy.tools.mcp_servers import McpServers, McpServerSpec

pytestmark = pytest.mark.anyio


async def test_n1_reference_servers_list_and_answer(reference_servers: Path, context: ToolContext) -> None:
    bin_dir = reference_servers / "node_modules" / ".bin"
    shared = context.workdir / "shared"
    shared.mkdir()
    (shared / "notes.txt").write_text("milk\neggs\n")
    servers = McpServers(
        [
            McpServerSpec(name="fs", command=str(bin_dir / "mcp-server-filesystem"), args=(str(shared),)),
            McpServerSpec(name="everything", command=str(bin_dir / "mcp-server-everything"), include=("echo", "get-*")),
            McpServerSpec(
                name="time",
                command=str(reference_servers / "time-venv" / "bin" / "mcp-server-time"),
                args=("--local-timezone", "UTC"),
            ),
        ]
    )
    try:
        report = await servers.refresh()
        assert report.startswith("fs: 14 tools; everything: "), report
        assert report.endswith("; time: 2 tools"), report
        source = BuiltinToolSource(servers)
        tools = source.tools_for(
            ["mcp_fs_read_text_file", "mcp_fs_write_file", "mcp_everything_*", "mcp_time_*"], codemode=False
        )
        assert "mcp_everything_echo" in tools.names()
        assert not any("long-running" in name for name in tools.names())  # include globs

        read = await tools.run("mcp_fs_read_text_file", {"path": str(shared / "notes.txt")}, context)
        assert (read.text, read.is_error) == ("milk\neggs\n", False)
        outside = await tools.run("mcp_fs_read_text_file", {"path": "/etc/hostname"}, context)
        assert outside.is_error  # the server's own confinement, reported as a tool error
        wrote = await tools.run("mcp_fs_write_file", {"path": str(shared / "new.txt"), "content": "hi"}, context)
        assert not wrote.is_error, wrote.text
        assert (shared / "new.txt").read_text() == "hi"

        echo = await tools.run("mcp_everything_echo", {"message": "hello"}, context)
        assert "hello" in echo.text
        assert not echo.is_error
        total = await tools.run("mcp_everything_get-sum", {"a": 2, "b": 3}, context)
        assert "5" in total.text

        now = await tools.run("mcp_time_get_current_time", {"timezone": "UTC"}, context)
        assert '"timezone": "UTC"' in now.text
        assert not now.is_error
        wrong = await tools.run("mcp_time_get_current_time", {"timezone": "Mars/Olympus"}, context)
        assert wrong.is_error
    finally:
        await servers.aclose()
