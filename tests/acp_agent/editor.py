"""An editor for the tests: the ACP SDK's own client side, driving ``anyy acp`` as a real process over its
stdio. It records every ``session/update`` in order, answers permission requests as the test says, and
lets a test wait for an update without sleeping."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import acp
from acp.schema import AllowedOutcome, ClientCapabilities, DeniedOutcome, Implementation, RequestPermissionResponse

from tests.fakes.gateways import ANYY, env_for

TIMEOUT = 120.0  # generous: the suite runs on a loaded 2-core machine (nothing waits on it when all goes well)


class Editor:
    """The client side: ``updates`` holds (session id, update) in arrival order."""

    def __init__(self, decision: str | None = "once") -> None:
        self.updates: list[tuple[str, Any]] = []
        self.permissions: list[Any] = []  # the tool_call of each permission request
        self.decision = decision  # the option chosen; None: the request is cancelled
        self._changed = asyncio.Condition()

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        async with self._changed:
            self.updates.append((session_id, update))
            self._changed.notify_all()

    async def request_permission(self, options: list[Any], session_id: str, tool_call: Any, **kwargs: Any) -> Any:
        async with self._changed:
            self.permissions.append(tool_call)
            self._changed.notify_all()
        if self.decision is None:
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        assert self.decision in {option.option_id for option in options}
        return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id=self.decision))

    async def wait_for(self, predicate: Callable[[Any], bool], timeout: float = TIMEOUT) -> Any:
        """The first update (seen already or arriving) that matches."""

        def found() -> Any:
            return next((u for _, u in self.updates if predicate(u)), None)

        async with self._changed:
            await asyncio.wait_for(self._changed.wait_for(lambda: found() is not None), timeout)
            return found()

    async def wait_text(self, part: str, timeout: float = TIMEOUT) -> None:
        """Until the agent's message chunks, joined, hold ``part`` (the model streams word by word)."""
        async with self._changed:
            await asyncio.wait_for(self._changed.wait_for(lambda: part in self.text()), timeout)

    def kinds(self, session_id: str | None = None) -> list[str]:
        return [u.session_update for s, u in self.updates if session_id is None or s == session_id]

    def text(self, kind: str = "agent_message_chunk") -> str:
        return "".join(u.content.text for _, u in self.updates if u.session_update == kind)

    def clear(self) -> None:
        self.updates.clear()


@contextlib.asynccontextmanager
async def anyy_acp(home: Path, editor: Editor, *args: str) -> AsyncIterator[tuple[Any, Any]]:
    """``anyy acp ARGS`` started as the editor starts it; the connection, initialized, and the process."""
    async with acp.spawn_agent_process(
        editor,  # type: ignore[arg-type]  # a partial client: the SDK answers "method not found" for the rest
        ANYY,
        "acp",
        *args,
        env=env_for(home),
        transport_kwargs={"limit": 64 << 20},
    ) as (conn, process):
        init = await asyncio.wait_for(
            conn.initialize(
                protocol_version=acp.PROTOCOL_VERSION,
                client_capabilities=ClientCapabilities(),
                client_info=Implementation(name="test-editor", version="1"),
            ),
            TIMEOUT,
        )
        conn.init = init  # type: ignore[attr-defined]  # what initialize answered, for the tests to read
        try:
            yield conn, process
        finally:
            if process.returncode is None:
                process.terminate()
