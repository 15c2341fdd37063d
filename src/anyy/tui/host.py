"""What the TUI's parts (event routes, commands) need of the app, as a protocol: they never import the
app, the app hands itself to them."""

from __future__ import annotations

from typing import Any, Protocol, TypeVar, overload

from anyy.api.methods import MethodSpec
from anyy.api.params import Params
from anyy.api.sessions import Session, SessionView
from anyy.profiles.gateway_address import Address
from anyy.tui.conversation import ConversationView
from anyy.tui.editor import Editor
from anyy.tui.history import History
from anyy.tui.pending import PendingQueue
from anyy.tui.state import SessionState

P = TypeVar("P", bound=Params)
R = TypeVar("R")


class Host(Protocol):
    state: SessionState
    history: History

    @property
    def address(self) -> Address:
        """Where the Gateway is (its HTTP routes, such as /upload, take the same token)."""

    @property
    def conversation(self) -> ConversationView: ...

    @property
    def editor(self) -> Editor: ...

    @property
    def pending(self) -> PendingQueue: ...

    @overload
    async def call(self, method: MethodSpec[P, R], params: P) -> R: ...
    @overload
    async def call(self, method: str, params: Any = None) -> Any: ...
    async def call(self, method: Any, params: Any = None) -> Any:
        """A JSON-RPC call to the Gateway: its result, CallFailed, or GatewayUnavailable."""

    @property
    def drafting(self) -> bool:
        """The session shown is a draft: created by its first message (:mod:`anyy.tui.draft`)."""

    async def open_draft(self) -> None:
        """Show a new session of the role the app was opened with, created by its first message (``/new``)."""

    async def say(self, text: str) -> None:
        """A line for the user in the conversation (not recorded in the session)."""

    async def switch_session(self, session: Session) -> None:
        """Show another session in place of this one (read again once its events are followed)."""

    async def show_history(self, live: SessionView) -> None:
        """From scratch: how full the context is, the newest page of history."""

    def push_screen(self, screen: Any, callback: Any = None) -> Any: ...
