"""What the TUI's parts (event routes, commands) need of the app, as a protocol: they never import the
app, the app hands itself to them."""

from __future__ import annotations

from typing import Any, Protocol

from anyy.tui.conversation import ConversationView
from anyy.tui.editor import Editor
from anyy.tui.history import History
from anyy.tui.state import SessionState


class Host(Protocol):
    state: SessionState
    history: History
    role: str | None  # of the sessions /new makes

    @property
    def conversation(self) -> ConversationView: ...

    @property
    def editor(self) -> Editor: ...

    async def call(self, method: str, params: dict[str, Any] | None = None) -> Any:
        """A JSON-RPC call to the Gateway: its result, CallFailed, or GatewayUnavailable."""

    async def say(self, text: str) -> None:
        """A line for the user in the conversation (not recorded in the session)."""

    async def refresh_queue(self) -> None: ...

    async def switch_session(self, session: dict[str, Any], live: dict[str, Any] | None) -> None:
        """Show another session in place of this one (``live``: its ``session.get``, read if None)."""

    async def show_history(self, live: dict[str, Any]) -> None:
        """From scratch: how full the context is, the newest page of history."""

    def push_screen(self, screen: Any, callback: Any = None) -> Any: ...
