"""MCP servers as tool sources (SPEC N1), through the official ``mcp`` SDK's client session and its stdio
and streamable HTTP transports.

Each configured server gets one :class:`McpServer`: a connection opened on first need, its tools listed
(filtered by the ``include``/``exclude`` globs) and offered as ``mcp_<server>_<tool>``. A call that does
not answer within its timeout, a server that exits or writes garbage, all end the call with an error
result and drop the connection; the next use starts the server again. ``notifications/tools/list_changed``
re-lists the server's tools in the background. Output is capped like the built-in tools'.

The SDK is imported only when a server is used (profiles without ``[mcp.servers]`` never load it), and
in a worker thread: its import takes seconds on a busy machine and never holds the event loop.

Servers start in the background when the Gateway starts (:meth:`McpServers.start`), each within its own
timeout. A session's turn waits only for the servers its enabled tools name, and at most the profile's
``[mcp] wait`` seconds after the first turn that wanted the current attempt
(:meth:`McpServers.wait_for`); then it runs without the missing ones, and says which. A server that
hangs never delays a session that does not use it, nor anything else of the Gateway.
"""

from __future__ import annotations

import asyncio
import contextlib
import fnmatch
import importlib
import logging
import os
import re
import sys
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import msgspec

from anyy.domain.model_io import ToolSpec
from anyy.tools.base import ToolContext, ToolOutcome
from anyy.tools.environment import mcp_environment
from anyy.tools.output import cap_text

if TYPE_CHECKING:
    from mcp import ClientSession

log = logging.getLogger("anyy.tools.mcp")
PREFIX = "mcp_"
_CLOSE_SECONDS = 5.0
# Starting a server (npx fetching nothing, a Python interpreter importing its SDK) may take longer than
# one call is allowed: it gets at least this long.
STARTUP_SECONDS = 30.0
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
# What a connection imports; loaded together, once, on a worker thread.
_SDK_MODULES = ("httpx", "mcp", "mcp.types", "mcp.client.stdio", "mcp.client.streamable_http")


async def load_sdk() -> None:
    """Import the MCP SDK in a worker thread (once): its import takes seconds on a busy machine."""
    if not all(name in sys.modules for name in _SDK_MODULES):
        await asyncio.to_thread(lambda: [importlib.import_module(name) for name in _SDK_MODULES])


class McpServerSpec(msgspec.Struct, frozen=True, kw_only=True):
    """One server as the profile describes it (``[mcp.servers.NAME]``)."""

    name: str
    command: str = ""
    args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    url: str = ""
    headers: tuple[tuple[str, str], ...] = ()
    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    timeout: float = 60.0
    cwd: str = ""


def exposed_name(server: str, tool: str) -> str:
    """``mcp_<server>_<tool>``, with characters models refuse in tool names replaced, at most 64 long."""
    return _UNSAFE.sub("_", f"{PREFIX}{server}_{tool}")[:64]


def missing_servers_text(missing: Mapping[str, str]) -> str:
    """One sentence for the user and the model: which servers' tools are missing this turn, and why."""
    listed = "; ".join(f"{name} ({why})" for name, why in missing.items())
    return (
        f"The tools of these MCP servers are not available now, this turn runs without them: {listed}. "
        "They are tried again at the next turn."
    )


class McpFailure(Exception):
    """The server could not be reached or did not answer; the message says which and what happened."""


class _Connection:
    """A live client session to one server, owned by a task that holds the SDK's context managers."""

    def __init__(self, spec: McpServerSpec, on_list_changed: Any) -> None:
        self.spec = spec
        self.session: ClientSession | None = None
        self._on_list_changed = on_list_changed
        self._ready = asyncio.Event()
        self._closing = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self.failure: BaseException | None = None

    @property
    def _startup(self) -> float:
        return max(self.spec.timeout, STARTUP_SECONDS)

    @property
    def alive(self) -> bool:
        return self._task is not None and not self._task.done() and self.session is not None

    async def open(self) -> None:
        self._task = asyncio.create_task(self._run(), name=f"mcp-{self.spec.name}")
        ended: asyncio.Future[Any] = asyncio.ensure_future(asyncio.shield(self._task))
        ready: asyncio.Future[Any] = asyncio.ensure_future(self._ready.wait())
        try:
            done, _ = await asyncio.wait({ended, ready}, timeout=self._startup, return_when="FIRST_COMPLETED")
        except asyncio.CancelledError:  # the Gateway stops while the server starts: no waiting on it
            self._task.cancel()
            raise
        finally:
            ready.cancel()
            ended.cancel()
        if ready in done and self.session is not None:
            return
        await self.close()
        if not done:
            raise McpFailure(f"did not start within {self._startup:g} s")
        raise McpFailure(f"could not start: {_describe(self.failure)}")

    async def _run(self) -> None:
        try:
            await load_sdk()
            from mcp import ClientSession

            async with contextlib.AsyncExitStack() as stack:
                read, write = await _open_transport(self.spec, stack)
                session = await stack.enter_async_context(ClientSession(read, write, message_handler=self._message))
                await session.initialize()
                self.session = session
                self._ready.set()
                await self._closing.wait()
        except BaseException as error:
            self.failure = error
        finally:
            self.session = None

    async def _message(self, message: Any) -> None:
        from mcp import types

        if isinstance(message, types.ServerNotification) and isinstance(
            message.root, types.ToolListChangedNotification
        ):
            self._on_list_changed()

    async def close(self) -> None:
        self._closing.set()
        task = self._task
        if task is None or task.done():
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(task), _CLOSE_SECONDS)
        if not task.done():
            task.cancel()
            await asyncio.wait([task], timeout=_CLOSE_SECONDS)


async def _open_transport(spec: McpServerSpec, stack: contextlib.AsyncExitStack) -> tuple[Any, Any]:
    if spec.command:
        from mcp.client.stdio import stdio_client

        from mcp import StdioServerParameters

        parameters = StdioServerParameters(
            command=spec.command,
            args=list(spec.args),
            env=mcp_environment(os.environ, dict(spec.env)),
            cwd=spec.cwd or None,
        )
        errlog = stack.enter_context(open(os.devnull, "w"))  # noqa: SIM115 - closed by the stack
        read, write = await stack.enter_async_context(stdio_client(parameters, errlog=errlog))
        return read, write
    import httpx
    from mcp.client.streamable_http import streamable_http_client

    client = await stack.enter_async_context(
        httpx.AsyncClient(headers=dict(spec.headers), timeout=httpx.Timeout(spec.timeout), follow_redirects=True)
    )
    read, write, _ = await stack.enter_async_context(streamable_http_client(spec.url, http_client=client))
    return read, write


def _describe(error: BaseException | None) -> str:
    if error is None:
        return "it ended without a reason"
    if isinstance(error, BaseExceptionGroup):
        return "; ".join(_describe(inner) for inner in error.exceptions)
    return f"{type(error).__name__}: {error}" if str(error) else type(error).__name__


class McpServer:
    """One configured server: its tools (as last listed) and calls to them, restarting it when needed."""

    def __init__(self, spec: McpServerSpec) -> None:
        self.spec = spec
        self.tools: dict[str, tuple[str, ToolSpec]] = {}  # exposed name -> (the server's name, spec)
        self.error = ""  # why the last listing failed
        self._connection: _Connection | None = None
        self._lock = asyncio.Lock()
        self._relist: asyncio.Task[str] | None = None
        self._listed = False  # a listing succeeded once
        self._attempt: asyncio.Task[str] | None = None  # the background listing in progress or last ended
        self._deadline: float | None = None  # when turns stop waiting for this attempt (monotonic seconds)

    @property
    def listed(self) -> bool:
        """Its tools are listed (possibly none) and its last listing did not fail."""
        return self._listed and not self.error

    def begin(self) -> asyncio.Task[str] | None:
        """Start listing in the background, unless it is listed or an attempt is under way; a failed one
        is tried again (each within the server's own start timeout). The attempt, None when listed."""
        return None if self.listed else self.relist()

    def relist(self) -> asyncio.Task[str]:
        """List again now (config.toml re-read), unless an attempt is under way: that one is the answer."""
        if self._attempt is None or self._attempt.done():
            self._attempt = asyncio.create_task(self.list_tools(), name=f"mcp-list-{self.spec.name}")
            self._deadline = None
        return self._attempt

    def patience(self, wait: float) -> float:
        """How much longer a turn may wait for the current attempt: ``wait`` seconds from the first turn
        that asked, the same deadline for every turn after it."""
        now = time.monotonic()
        if self._deadline is None:
            self._deadline = now + wait
        return max(0.0, self._deadline - now)

    def missing(self) -> str:
        """Why its tools are not offered now ("" when they are)."""
        if self.listed:
            return ""
        if self._attempt is None or not self._attempt.done():
            return "still starting"
        return self.error or "unavailable"

    def _wanted(self, tool: str) -> bool:
        included = not self.spec.include or any(fnmatch.fnmatchcase(tool, p) for p in self.spec.include)
        return included and not any(fnmatch.fnmatchcase(tool, p) for p in self.spec.exclude)

    async def _session(self) -> ClientSession:
        async with self._lock:
            connection = self._connection
            if connection is None or not connection.alive:
                if connection is not None:
                    await connection.close()
                connection = self._connection = _Connection(self.spec, self._list_changed)
                await connection.open()
            if connection.session is None:  # ended between the check and now
                raise McpFailure("the connection closed")
            return connection.session

    async def drop(self) -> None:
        """Close the connection (the next use starts the server again)."""
        async with self._lock:
            connection, self._connection = self._connection, None
        if connection is not None:
            await connection.close()

    async def aclose(self) -> None:
        """Stop a start under way (a hung server is not waited for) and close the connection."""
        for task in (self._attempt, self._relist):
            if task is not None and not task.done():
                task.cancel()
                await asyncio.wait([task])
        await self.drop()

    def _list_changed(self) -> None:
        if self._relist is None or self._relist.done():
            self._relist = asyncio.create_task(self.list_tools())

    async def list_tools(self) -> str:
        """List the server's tools again; a sentence saying what was found (or why nothing was)."""
        try:
            session = await self._session()
            tools: list[Any] = []
            cursor: str | None = None
            while True:
                result = await asyncio.wait_for(session.list_tools(cursor=cursor), self.spec.timeout)
                tools.extend(result.tools)
                cursor = result.nextCursor
                if not cursor:
                    break
        except (McpFailure, TimeoutError, Exception) as error:
            await self.drop()
            self.tools = {}
            self.error = error.args[0] if isinstance(error, McpFailure) else _describe(error)
            return f"{self.spec.name}: unavailable ({self.error})"
        self.error = ""
        self._listed = True
        self.tools = {
            exposed_name(self.spec.name, tool.name): (
                tool.name,
                ToolSpec(
                    name=exposed_name(self.spec.name, tool.name),
                    description=(tool.description or tool.title or tool.name)[:2000],
                    parameters=dict(tool.inputSchema or {"type": "object", "properties": {}}),
                ),
            )
            for tool in tools
            if self._wanted(tool.name)
        }
        return f"{self.spec.name}: {len(self.tools)} tool{'s' if len(self.tools) != 1 else ''}"

    async def call(self, tool: str, arguments: dict[str, Any], context: ToolContext) -> ToolOutcome:
        timeout = min(self.spec.timeout, context.timeout)
        try:
            session = await self._session()
            result = await asyncio.wait_for(session.call_tool(tool, arguments), timeout)
        except TimeoutError:
            await self.drop()
            return ToolOutcome(
                text=f"the MCP server {self.spec.name!r} did not answer {tool} within {timeout:g} s: the call was "
                "abandoned and the server will be started again on its next use",
                is_error=True,
            )
        except McpFailure as failure:
            return ToolOutcome(text=f"the MCP server {self.spec.name!r} {failure}", is_error=True)
        except Exception as error:  # the server crashed, closed the connection or answered garbage
            await self.drop()
            return ToolOutcome(
                text=f"the MCP server {self.spec.name!r} failed during {tool} ({_describe(error)}); it will be "
                "started again on its next use",
                is_error=True,
            )
        return ToolOutcome(text=cap_text(_result_text(result), context.output_cap), is_error=bool(result.isError))


def _result_text(result: Any) -> str:
    parts: list[str] = []
    for block in result.content:
        kind = getattr(block, "type", "")
        if kind == "text":
            parts.append(block.text)
        elif kind in ("image", "audio"):
            parts.append(f"[{kind} content, {block.mimeType}, {len(block.data) * 3 // 4} bytes: not shown]")
        elif kind == "resource":
            resource = block.resource
            parts.append(getattr(resource, "text", None) or f"[resource {resource.uri}]")
        elif kind == "resource_link":
            parts.append(f"[resource {block.uri}]")
    if not parts and result.structuredContent is not None:
        parts.append(msgspec.json.encode(result.structuredContent).decode())
    return "\n".join(parts) if parts else "[no content]"


class McpTool:
    """One server tool as a session's tool (the :class:`anyy.tools.base.Tool` protocol)."""

    def __init__(self, server: McpServer, original: str, spec: ToolSpec) -> None:
        self._server = server
        self._original = original
        self.spec = spec

    async def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolOutcome:
        if not isinstance(arguments, dict):
            return ToolOutcome(text=f"{self.spec.name} takes a JSON object of arguments", is_error=True)
        return await self._server.call(self._original, arguments, context)


class McpServers:
    """Every configured server of the profile; the runtime's handle for readiness, reload and shutdown."""

    def __init__(self, specs: Sequence[McpServerSpec] = ()) -> None:
        self._servers: dict[str, McpServer] = {spec.name: McpServer(spec) for spec in specs}
        self._pending: dict[str, McpServerSpec] | None = None

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self._servers)

    def configure(self, specs: Sequence[McpServerSpec]) -> None:
        """New settings (config.toml re-read); applied by the next :meth:`refresh`."""
        self._pending = {spec.name: spec for spec in specs}

    def start(self) -> None:
        """List every server in the background (the Gateway's start); nothing waits for it here."""
        for server in self._servers.values():
            server.begin()

    async def ready(self) -> None:
        """Wait for the first listing of every server, however long it takes (tests and tools that need
        all of them; a session's turn uses :meth:`wait_for`)."""
        attempts = [attempt for server in self._servers.values() if (attempt := server.begin()) is not None]
        await asyncio.gather(*(asyncio.shield(attempt) for attempt in attempts))

    def named_by(self, enabled: Sequence[str]) -> list[str]:
        """The servers whose tools ``enabled`` names (``mcp_<server>_<tool>`` or a glob of such names)."""
        patterns = [name for name in enabled if name.startswith(PREFIX)]
        return [
            name
            for name in self._servers
            if any(fnmatch.fnmatchcase(f"{PREFIX}{name}_", p[: len(PREFIX) + len(name) + 1]) for p in patterns)
        ]

    async def wait_for(self, enabled: Sequence[str], wait: float) -> dict[str, str]:
        """Wait for the servers a session's tools name, at most ``wait`` seconds per start attempt (shared
        by every turn), and return those still missing, each with why ("still starting", an error)."""
        servers = [self._servers[name] for name in self.named_by(enabled)]
        starting = [(server, attempt) for server in servers if (attempt := server.begin()) is not None]
        pending = {attempt: server.patience(wait) for server, attempt in starting if not attempt.done()}
        bound = max(pending.values(), default=0.0)
        if bound > 0:
            await asyncio.wait(pending, timeout=bound)  # a timeout leaves them running in the background
        return {server.spec.name: reason for server in servers if (reason := server.missing())}

    async def refresh(self, wait: float | None = None) -> str:
        """Apply new settings (servers added, changed, removed) and list every server's tools again, in
        the order of the configuration; one line per server. With ``wait``, a server still starting after
        that many seconds is reported so and goes on starting in the background."""
        if self._pending is not None:
            wanted, self._pending = self._pending, None
            for name, server in list(self._servers.items()):
                if wanted.get(name) != server.spec:
                    await server.aclose()  # a start under way is cancelled, not waited for
                    del self._servers[name]
            for name, spec in wanted.items():
                self._servers.setdefault(name, McpServer(spec))
        if not self._servers:
            return "no MCP servers configured"
        # Listed side by side (a slow server does not hold the others up), reported in configuration order.
        attempts = [server.relist() for server in self._servers.values()]
        if wait is None:
            await asyncio.wait(attempts)
        elif wait > 0:
            await asyncio.wait(attempts, timeout=wait)
        return "; ".join(
            attempt.result() if attempt.done() else f"{name}: still starting"
            for name, attempt in zip(self._servers, attempts, strict=True)
        )

    def server_tools(self) -> dict[str, list[McpTool]]:
        return {
            name: [McpTool(server, original, spec) for original, spec in server.tools.values()]
            for name, server in self._servers.items()
        }

    def status(self) -> Mapping[str, str]:
        return {name: server.error or f"{len(server.tools)} tools" for name, server in self._servers.items()}

    async def aclose(self) -> None:
        for server in self._servers.values():
            await server.aclose()
