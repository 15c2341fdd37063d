"""The tests' own MCP server, for faults the reference servers never show: it hangs, crashes, writes
garbage on its stdout, answers at length, and changes its tool list (with the notification).

Run as ``python fault_server.py`` (stdio) or ``python fault_server.py --http PORT`` (streamable HTTP).
Every start appends a line to the file named by FAULT_SERVER_STARTS, so tests can count restarts.
"""

from __future__ import annotations

import asyncio
import os
import sys

from mcp.server.fastmcp import Context, FastMCP

server = FastMCP("faults")


@server.tool()
def echo(text: str) -> str:
    """Return the text."""
    return f"echo: {text}"


@server.tool()
async def hang() -> str:
    """Never answer."""
    await asyncio.Event().wait()
    return "unreachable"


@server.tool()
def crash() -> str:
    """Exit at once, without answering."""
    os._exit(3)


@server.tool()
async def garbage() -> str:
    """Write a line that is not JSON-RPC on stdout, then never answer."""
    os.write(1, b"this is not json {{{\n")
    await asyncio.Event().wait()
    return "unreachable"


@server.tool()
def big(size: int) -> str:
    """Return ``size`` characters."""
    return "x" * size


@server.tool()
async def grow(ctx: Context) -> str:  # type: ignore[type-arg]
    """Add the tool ``added`` and tell the client its tool list changed."""

    def added() -> str:
        """A tool that appeared later."""
        return "added says hello"

    server.add_tool(added, name="added")
    await ctx.session.send_tool_list_changed()
    return "grown"


@server.tool()
def secret_env() -> str:
    """Which variables of the environment look like secrets."""
    return ",".join(sorted(name for name in os.environ if "KEY" in name or "TOKEN" in name)) or "none"


def main() -> None:
    starts = os.environ.get("FAULT_SERVER_STARTS")
    if starts:
        with open(starts, "a") as file:
            file.write(f"{os.getpid()}\n")
    if len(sys.argv) == 3 and sys.argv[1] == "--http":
        server.settings.port = int(sys.argv[2])
        server.settings.host = "127.0.0.1"
        server.run(transport="streamable-http")
    else:
        server.run()


if __name__ == "__main__":
    main()
