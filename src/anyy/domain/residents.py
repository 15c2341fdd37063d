"""Residents (SPEC K3): long-lived Background sessions with standing instructions, woken by triggers.

A resident owns one Background session. Its triggers are a heartbeat (every ``heartbeat_seconds``, with
``heartbeat_note``) and, when ``webhook`` is on, ``POST /hooks/NAME`` with the resident's own secret
(only its SHA-256 is kept). ``session.send`` to the session works as for any session. Each wake is a
follow-up of that session. Times here are wall-clock seconds (they outlive the process).
"""

from __future__ import annotations

import hashlib
import hmac

import msgspec

from anyy.domain.errors import InvalidInput
from anyy.domain.sessions import UNSET, Unset

MIN_HEARTBEAT = 60.0  # seconds; a faster heartbeat is a loop, not a resident
MAX_HOOK_BYTES = 64 * 1024  # a webhook body beyond this is refused (413), nothing recorded


class Resident(msgspec.Struct, kw_only=True):
    id: str
    name: str
    session_id: str
    instructions: str
    heartbeat_seconds: float = 0.0  # 0: no heartbeat
    heartbeat_note: str = ""
    webhook: bool = False
    secret_hash: str = ""  # SHA-256 (hex) of the webhook secret
    paused: bool = False
    last_wake_at: float | None = None
    last_trigger: str = ""  # heartbeat | webhook
    next_wake_at: float | None = None  # the next heartbeat, None without one (or while paused)
    created_at: float = 0.0
    updated_at: float = 0.0


class ResidentPatch(msgspec.Struct, kw_only=True):
    """Fields to change; ``UNSET`` keeps a field."""

    instructions: str | Unset = UNSET
    heartbeat_seconds: float | Unset = UNSET
    heartbeat_note: str | Unset = UNSET
    webhook: bool | Unset = UNSET
    secret_hash: str | Unset = UNSET
    paused: bool | Unset = UNSET
    last_wake_at: float | Unset | None = UNSET
    last_trigger: str | Unset = UNSET
    next_wake_at: float | Unset | None = UNSET

    def apply(self, resident: Resident, now: float) -> Resident:
        changes = {
            name: value for name in self.__struct_fields__ if not isinstance(value := getattr(self, name), Unset)
        }
        return msgspec.structs.replace(resident, **changes, updated_at=now)


def check_heartbeat(seconds: float) -> float:
    if seconds != 0 and seconds < MIN_HEARTBEAT:
        raise InvalidInput(
            f"heartbeat: {seconds:g} s is too often; give at least {MIN_HEARTBEAT:g} seconds (or 0 for none)"
        )
    return float(seconds)


def next_heartbeat(resident: Resident, after: float, now: float) -> float | None:
    """The heartbeat after the one due at ``after``; missed ones (no Gateway ran) are skipped, not
    fired in a burst: at most one wake for any gap."""
    if resident.heartbeat_seconds <= 0 or resident.paused:
        return None
    due = after + resident.heartbeat_seconds
    return due if due > now else now + resident.heartbeat_seconds


def hash_secret(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def secret_matches(resident: Resident, presented: str) -> bool:
    """Whether ``presented`` is the resident's webhook secret (compared in constant time)."""
    if not resident.webhook or not resident.secret_hash or not presented:
        return False
    return hmac.compare_digest(hash_secret(presented), resident.secret_hash)


def wake_text(resident: Resident, trigger: str, body: str) -> str:
    """The follow-up a wake sends: what woke it, then the standing instructions (kept in every wake, so
    that compaction never loses them)."""
    return f"[{trigger}] {body.strip() or '(no message)'}\n\nStanding instructions: {resident.instructions}"
