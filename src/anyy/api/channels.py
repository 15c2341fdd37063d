"""Channels on the wire (L1, L2): what ``channel.*`` methods take and return."""

from __future__ import annotations

import msgspec

from anyy.api.params import Params


class ChannelCode(msgspec.Struct, kw_only=True):
    """A pairing code waiting for the owner's approval: who asked, and until when (wall-clock seconds)."""

    channel: str
    code: str
    sender: str
    label: str
    expires_at: float


class ChannelSender(msgspec.Struct, kw_only=True):
    """A paired sender and its send rights on the channel's session (talk, answer, stop)."""

    channel: str
    sender: str
    label: str
    session_id: str
    rights: list[str]
    owner: bool
    paired_at: float


class Channel(msgspec.Struct, kw_only=True):
    """A configured channel. ``state``: starting, polling, retrying, failed (``error`` says why) or
    stopped. The token is never shown: ``token_env`` names the variable that holds it."""

    name: str
    kind: str
    target: str  # "session ID" or "resident NAME"
    session_id: str
    token_env: str
    state: str
    error: str
    senders: int
    codes: int


class ChannelReply(msgspec.Struct, kw_only=True):
    key: str
    conversation: str
    text: str
    delivered: bool
    attempts: int
    error: str


class ChannelDetail(msgspec.Struct, kw_only=True):
    channel: Channel
    senders: list[ChannelSender]
    codes: list[ChannelCode]
    replies: list[ChannelReply]  # the latest, oldest first


class ChannelRef(Params, kw_only=True):
    name: str


class ChannelPairParams(Params, kw_only=True):
    code: str
    rights: list[str] = []  # empty: the channel's configured rights


class ChannelUnpairParams(Params, kw_only=True):
    name: str
    sender: str
