"""Channels (SPEC L1-L3) of the in-memory store."""

from __future__ import annotations

from typing import Any

import msgspec

from anyy.domain.channels import MAX_PENDING_CODES, Inbound, Pairing, PendingCode, Reply, new_code, normal_code
from anyy.domain.errors import NotFound
from anyy.storage.memory.core import MemoryCore
from anyy.storage.memory.data import copied


def _at(channel: str, key: str) -> str:
    return f"{channel} {key}"


class ChannelsPart(MemoryCore):
    def channel_code(self, channel: str, sender: str, conversation: str, label: str, ttl: float) -> str | None:
        self._check_open()
        now = self.clock()
        data = self.data
        data.channel_codes = [c for c in data.channel_codes if c.expires_at > now]
        mine = [c for c in data.channel_codes if c.channel == channel]
        found = next((c for c in mine if c.sender == sender), None)
        if found is not None:
            return found.code
        if len(mine) >= MAX_PENDING_CODES:
            return None
        pending = PendingCode(
            channel=channel,
            code=new_code(),
            sender=sender,
            conversation=conversation,
            label=label,
            expires_at=now + ttl,
        )
        data.channel_codes.append(pending)
        return pending.code

    def list_channel_codes(self) -> list[PendingCode]:
        self._check_open()
        now = self.clock()
        return copied(sorted((c for c in self.data.channel_codes if c.expires_at > now), key=lambda c: c.expires_at))

    def pair_with_code(self, code: str, session_id: str, rights: list[str]) -> Pairing:
        self._check_open()
        now = self.clock()
        data = self.data
        pending = next((c for c in data.channel_codes if c.code == normal_code(code) and c.expires_at > now), None)
        if pending is None:
            raise NotFound(
                f"no pairing code {code!r} is waiting (codes expire after an hour): ask the sender to write "
                "to the channel again for a new one; `anyy channel list` shows the codes waiting"
            )
        data.channel_codes.remove(pending)
        pairing = Pairing(
            channel=pending.channel,
            sender=pending.sender,
            session_id=session_id,
            conversation=pending.conversation,
            rights=list(rights),
            owner=not any(p.channel == pending.channel for p in data.channel_senders),
            label=pending.label,
            paired_at=now,
        )
        data.channel_senders = [
            p
            for p in data.channel_senders
            if (p.channel, p.sender, p.session_id) != (pairing.channel, pairing.sender, session_id)
        ]
        data.channel_senders.append(pairing)
        return copied(pairing)

    def get_pairing(self, channel: str, sender: str, session_id: str) -> Pairing | None:
        self._check_open()
        found = next(
            (
                p
                for p in self.data.channel_senders
                if (p.channel, p.sender, p.session_id) == (channel, sender, session_id)
            ),
            None,
        )
        return copied(found)

    def list_pairings(self, channel: str | None = None) -> list[Pairing]:
        self._check_open()
        found = [p for p in self.data.channel_senders if channel is None or p.channel == channel]
        return copied(sorted(found, key=lambda p: (p.channel, p.paired_at, p.sender)))

    def unpair_sender(self, channel: str, sender: str) -> int:
        self._check_open()
        before = len(self.data.channel_senders)
        self.data.channel_senders = [p for p in self.data.channel_senders if (p.channel, p.sender) != (channel, sender)]
        return before - len(self.data.channel_senders)

    def channel_position(self, channel: str) -> str:
        self._check_open()
        return self.data.channel_positions.get(channel, "")

    def get_inbound(self, channel: str, key: str) -> Inbound | None:
        self._check_open()
        return copied(self.data.channel_inbox.get(_at(channel, key)))

    def record_inbound(self, inbound: Inbound, position: str, replies: list[Reply]) -> bool:
        self._check_open()
        at = _at(inbound.channel, inbound.key)
        fresh = at not in self.data.channel_inbox
        if fresh:
            self.data.channel_inbox[at] = msgspec.structs.replace(inbound, received_at=self.clock())
            if replies or inbound.submission_id is None:
                self.data.channel_answered.append(at)
            self._add_replies(replies)
        if position:
            self.data.channel_positions[inbound.channel] = position
        return fresh

    def unanswered_inbound(self, channel: str) -> list[Inbound]:
        self._check_open()
        answered = set(self.data.channel_answered)
        found = [i for at, i in self.data.channel_inbox.items() if i.channel == channel and at not in answered]
        return copied(sorted(found, key=lambda i: (i.received_at, i.key)))

    def queue_replies(self, replies: list[Reply], *, answers: str | None = None) -> None:
        self._check_open()
        self._add_replies(replies)
        if answers is not None and replies:
            self.data.channel_answered.append(_at(replies[0].channel, answers))

    def _add_replies(self, replies: list[Reply]) -> None:
        now = self.clock()
        for reply in replies:
            at = _at(reply.channel, reply.key)
            if at not in self.data.channel_outbox:
                self.data.channel_outbox[at] = msgspec.structs.replace(reply, created_at=now)

    def _replies(self, channel: str) -> list[Reply]:
        return [r for r in self.data.channel_outbox.values() if r.channel == channel]

    def pending_replies(self, channel: str) -> list[Reply]:
        self._check_open()
        found = [r for r in self._replies(channel) if r.delivered_at is None]
        return copied(sorted(found, key=lambda r: (r.created_at, r.key)))

    def list_replies(self, channel: str, limit: int = 50) -> list[Reply]:
        self._check_open()
        return copied(sorted(self._replies(channel), key=lambda r: (r.created_at, r.key))[-limit:])

    def reply_sent(self, channel: str, key: str, platform_id: str) -> None:
        self._change_reply(channel, key, delivered_at=self.clock(), platform_id=platform_id)

    def reply_failed(self, channel: str, key: str, error: str, next_at: float) -> None:
        self._change_reply(channel, key, error=error, next_at=next_at)

    def _change_reply(self, channel: str, key: str, **changes: Any) -> None:
        self._check_open()
        at = _at(channel, key)
        reply = self.data.channel_outbox.get(at)
        if reply is None:
            raise NotFound(f"no reply {key!r} on channel {channel!r}")
        self.data.channel_outbox[at] = msgspec.structs.replace(reply, attempts=reply.attempts + 1, **changes)

    def claim_channel(self, channel: str) -> bool:
        return True  # one Gateway per memory store

    def forget_channel(self, channel: str) -> None:
        self._check_open()
        data = self.data
        data.channel_senders = [p for p in data.channel_senders if p.channel != channel]
        data.channel_codes = [c for c in data.channel_codes if c.channel != channel]
        data.channel_positions.pop(channel, None)
        prefix = _at(channel, "")
        data.channel_inbox = {k: v for k, v in data.channel_inbox.items() if not k.startswith(prefix)}
        data.channel_answered = [k for k in data.channel_answered if not k.startswith(prefix)]
        data.channel_outbox = {k: v for k, v in data.channel_outbox.items() if not k.startswith(prefix)}
