"""What a channel's platform link is (one implementation per kind: :mod:`anyy.channels.telegram`), and what
it hands over and raises; :mod:`anyy.channels.service` drives links without knowing their kind."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

import msgspec

from anyy.profiles.channels_file import ChannelSettings


class Message(msgspec.Struct, kw_only=True):
    """One inbound message as a link hands it over: already parsed, not yet trusted."""

    key: str  # unique on the channel (Telegram: the update id)
    position: str  # the read position once it is handled
    sender: str
    conversation: str
    text: str
    label: str = ""  # the sender's name, to show the owner


class SendFailed(Exception):
    """A send the platform refused; ``permanent``: sending it again cannot work (the reply is dropped)."""

    def __init__(self, message: str, *, permanent: bool = False, retry_after: float = 0.0) -> None:
        super().__init__(message)
        self.permanent = permanent
        self.retry_after = retry_after


class Link(Protocol):
    """A platform connection: it polls messages and sends text (one implementation per kind)."""

    limit: int  # the platform's longest message, in characters

    async def open(self) -> None: ...
    async def poll(self, position: str) -> list[Message]: ...
    async def send(self, conversation: str, text: str) -> str: ...
    async def aclose(self) -> None: ...


LinkFactory = Callable[[str, ChannelSettings, str], Link]
