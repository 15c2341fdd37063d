"""Channels (SPEC L1-L3): what the store keeps of a conversation outside, and the pure rules about it.

A channel is a configured connection to a messaging platform (Telegram this round). A sender writing to it
is first *paired*: an unknown sender gets a one-time code, and the owner approves it with
``anyy channel pair CODE``; the approval records the sender's *send rights* on the channel's session. The
rights belong to that session: a fork (another session) has none, a delete removes them.

Inbound messages are recorded by their platform key (Telegram's update id) once they produced their
submission, with the platform's read position; outbound replies are recorded before they are sent and
marked delivered after, keyed by the message they answer, so a restart neither answers twice nor forgets.
"""

from __future__ import annotations

import secrets
from typing import Literal

import msgspec

from anyy.domain.errors import InvalidInput

Right = Literal["talk", "answer", "stop"]
RIGHTS: tuple[Right, ...] = ("talk", "answer", "stop")
DEFAULT_RIGHTS: tuple[Right, ...] = ("talk", "answer", "stop")

CODE_ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"  # no 0/O, 1/I: read aloud or typed from a phone
CODE_LENGTH = 8
CODE_SECONDS = 3600.0  # a pairing code expires after an hour
MAX_PENDING_CODES = 3  # codes waiting per channel: more unknown senders are refused without one


class Pairing(msgspec.Struct, kw_only=True):
    """A sender allowed to write to a channel's session, and what it may do there."""

    channel: str
    sender: str  # the platform's id of the person (Telegram: the user id)
    session_id: str  # the session the rights belong to
    conversation: str  # where replies go (Telegram: the chat id)
    rights: list[str]
    owner: bool  # the first sender approved on the channel
    label: str = ""  # a name to show (the platform's user name)
    paired_at: float = 0.0


class PendingCode(msgspec.Struct, kw_only=True):
    channel: str
    code: str
    sender: str
    conversation: str
    label: str
    expires_at: float


class Reply(msgspec.Struct, kw_only=True):
    """One message to send on a channel: recorded first, sent, then marked delivered."""

    channel: str
    key: str  # unique per channel: what it answers (and which part of it)
    conversation: str
    text: str
    created_at: float = 0.0
    attempts: int = 0
    next_at: float = 0.0  # not retried before this time
    error: str = ""
    delivered_at: float | None = None
    platform_id: str = ""  # the platform's id of the sent message


class Inbound(msgspec.Struct, kw_only=True):
    """An inbound message already handled: its submission, if it made one, and whether it was answered."""

    channel: str
    key: str
    conversation: str
    sender: str
    session_id: str
    submission_id: str | None
    received_at: float = 0.0


def new_code() -> str:
    return "".join(secrets.choice(CODE_ALPHABET) for _ in range(CODE_LENGTH))


def normal_code(text: str) -> str:
    """A code as typed by a person: case and separators do not matter."""
    return "".join(ch for ch in text.upper() if ch.isalnum())


def check_rights(rights: list[str]) -> list[str]:
    unknown = [r for r in rights if r not in RIGHTS]
    if unknown or not rights:
        raise InvalidInput(
            f"rights: {', '.join(map(repr, unknown)) or 'none given'}; choose among {', '.join(RIGHTS)} "
            "(talk: send messages; answer: answer the agent's questions and approvals; stop: stop its work)"
        )
    return list(dict.fromkeys(rights))


def split_text(text: str, limit: int) -> list[str]:
    """``text`` in parts of at most ``limit`` characters, cut at a paragraph, then a line, then a space,
    never inside a code fence when a cut outside it exists: each part stays readable Markdown."""
    parts: list[str] = []
    rest = text.strip()
    while len(rest) > limit:
        window = rest[:limit]
        cut = _best_cut(window)
        parts.append(rest[:cut].rstrip())
        rest = rest[cut:].lstrip("\n ")
    if rest or not parts:
        parts.append(rest)
    return parts


def _best_cut(window: str) -> int:
    for sep in ("\n\n", "\n", " "):
        at = window.rfind(sep)
        while at > len(window) // 4:
            if window[:at].count("```") % 2 == 0:  # not inside a fenced block
                return at + len(sep)
            at = window.rfind(sep, 0, at)
    return len(window)
