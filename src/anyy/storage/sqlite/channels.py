"""Channels (SPEC L1-L3) in SQL; PostgreSQL runs the same statements with its own placeholders."""

from __future__ import annotations

from typing import Any

import msgspec

from anyy.domain.channels import MAX_PENDING_CODES, Inbound, Pairing, PendingCode, Reply, new_code, normal_code
from anyy.domain.errors import NotFound

_encode = msgspec.json.Encoder().encode


def _json(value: msgspec.Struct) -> str:
    return _encode(value).decode()


class ChannelsSql:
    """The channel methods of :class:`anyy.storage.protocol.SessionStore` over SQL (``?`` marks)."""

    clock: Any
    _tx: Any
    conn: Any

    def _sql(self, text: str) -> str:
        return text

    # -- pairing (L2) ------------------------------------------------------------------------------
    def channel_code(self, channel: str, sender: str, conversation: str, label: str, ttl: float) -> str | None:
        now = self.clock()
        with self._tx() as conn:
            conn.execute(self._sql("DELETE FROM channel_codes WHERE expires_at <= ?"), (now,))
            row = conn.execute(
                self._sql("SELECT code FROM channel_codes WHERE channel = ? AND sender = ?"), (channel, sender)
            ).fetchone()
            if row is not None:
                return str(row[0])
            (waiting,) = conn.execute(
                self._sql("SELECT count(*) FROM channel_codes WHERE channel = ?"), (channel,)
            ).fetchone()
            if waiting >= MAX_PENDING_CODES:
                return None
            pending = PendingCode(
                channel=channel,
                code=new_code(),
                sender=sender,
                conversation=conversation,
                label=label,
                expires_at=now + ttl,
            )
            conn.execute(
                self._sql("INSERT INTO channel_codes (channel, code, sender, body, expires_at) VALUES (?, ?, ?, ?, ?)"),
                (channel, pending.code, sender, _json(pending), pending.expires_at),
            )
            return pending.code

    def list_channel_codes(self) -> list[PendingCode]:
        rows = self.conn.execute(
            self._sql("SELECT body FROM channel_codes WHERE expires_at > ? ORDER BY expires_at"), (self.clock(),)
        ).fetchall()
        return [msgspec.json.decode(row[0], type=PendingCode) for row in rows]

    def pair_with_code(self, code: str, session_id: str, rights: list[str]) -> Pairing:
        now = self.clock()
        with self._tx() as conn:
            row = conn.execute(
                self._sql("SELECT body FROM channel_codes WHERE code = ? AND expires_at > ?"), (normal_code(code), now)
            ).fetchone()
            if row is None:
                raise NotFound(
                    f"no pairing code {code!r} is waiting (codes expire after an hour): ask the sender to write "
                    "to the channel again for a new one; `anyy channel list` shows the codes waiting"
                )
            pending = msgspec.json.decode(row[0], type=PendingCode)
            conn.execute(self._sql("DELETE FROM channel_codes WHERE code = ?"), (pending.code,))
            (paired,) = conn.execute(
                self._sql("SELECT count(*) FROM channel_senders WHERE channel = ?"), (pending.channel,)
            ).fetchone()
            pairing = Pairing(
                channel=pending.channel,
                sender=pending.sender,
                session_id=session_id,
                conversation=pending.conversation,
                rights=rights,
                owner=paired == 0,
                label=pending.label,
                paired_at=now,
            )
            conn.execute(
                self._sql("DELETE FROM channel_senders WHERE channel = ? AND sender = ? AND session_id = ?"),
                (pairing.channel, pairing.sender, session_id),
            )
            conn.execute(
                self._sql(
                    "INSERT INTO channel_senders (channel, sender, session_id, body, paired_at) VALUES (?, ?, ?, ?, ?)"
                ),
                (pairing.channel, pairing.sender, session_id, _json(pairing), now),
            )
        return pairing

    def get_pairing(self, channel: str, sender: str, session_id: str) -> Pairing | None:
        row = self.conn.execute(
            self._sql("SELECT body FROM channel_senders WHERE channel = ? AND sender = ? AND session_id = ?"),
            (channel, sender, session_id),
        ).fetchone()
        return None if row is None else msgspec.json.decode(row[0], type=Pairing)

    def list_pairings(self, channel: str | None = None) -> list[Pairing]:
        where, params = (" WHERE channel = ?", (channel,)) if channel is not None else ("", ())
        rows = self.conn.execute(
            self._sql(f"SELECT body FROM channel_senders{where} ORDER BY channel, paired_at, sender"), params
        ).fetchall()
        return [msgspec.json.decode(row[0], type=Pairing) for row in rows]

    def unpair_sender(self, channel: str, sender: str) -> int:
        with self._tx() as conn:
            cursor = conn.execute(
                self._sql("DELETE FROM channel_senders WHERE channel = ? AND sender = ?"), (channel, sender)
            )
            return int(cursor.rowcount)

    # -- inbound (L3) ------------------------------------------------------------------------------
    def channel_position(self, channel: str) -> str:
        row = self.conn.execute(
            self._sql("SELECT read_position FROM channel_positions WHERE channel = ?"), (channel,)
        ).fetchone()
        return "" if row is None else str(row[0])

    def get_inbound(self, channel: str, key: str) -> Inbound | None:
        row = self.conn.execute(
            self._sql("SELECT body FROM channel_inbox WHERE channel = ? AND key = ?"), (channel, key)
        ).fetchone()
        return None if row is None else msgspec.json.decode(row[0], type=Inbound)

    def record_inbound(self, inbound: Inbound, position: str, replies: list[Reply]) -> bool:
        now = self.clock()
        stored = msgspec.structs.replace(inbound, received_at=now)
        with self._tx() as conn:
            taken = conn.execute(
                self._sql("SELECT 1 FROM channel_inbox WHERE channel = ? AND key = ?"), (inbound.channel, inbound.key)
            ).fetchone()
            if not taken:
                conn.execute(
                    self._sql(
                        "INSERT INTO channel_inbox (channel, key, answered, body, received_at) VALUES (?, ?, ?, ?, ?)"
                    ),
                    (
                        inbound.channel,
                        inbound.key,
                        1 if replies or inbound.submission_id is None else 0,
                        _json(stored),
                        now,
                    ),
                )
                self._add_replies(conn, replies, now)
            if position:
                conn.execute(
                    self._sql(
                        "INSERT INTO channel_positions (channel, read_position) VALUES (?, ?) "
                        "ON CONFLICT (channel) DO UPDATE SET read_position = excluded.read_position"
                    ),
                    (inbound.channel, position),
                )
            return not taken

    def unanswered_inbound(self, channel: str) -> list[Inbound]:
        rows = self.conn.execute(
            self._sql("SELECT body FROM channel_inbox WHERE channel = ? AND answered = 0 ORDER BY received_at, key"),
            (channel,),
        ).fetchall()
        return [msgspec.json.decode(row[0], type=Inbound) for row in rows]

    # -- outbound (L3) -----------------------------------------------------------------------------
    def queue_replies(self, replies: list[Reply], *, answers: str | None = None) -> None:
        now = self.clock()
        with self._tx() as conn:
            self._add_replies(conn, replies, now)
            if answers is not None and replies:
                conn.execute(
                    self._sql("UPDATE channel_inbox SET answered = 1 WHERE channel = ? AND key = ?"),
                    (replies[0].channel, answers),
                )

    def _add_replies(self, conn: Any, replies: list[Reply], now: float) -> None:
        for reply in replies:
            stored = msgspec.structs.replace(reply, created_at=now)
            conn.execute(
                self._sql(
                    "INSERT INTO channel_outbox (channel, key, delivered, body, created_at) VALUES (?, ?, 0, ?, ?) "
                    "ON CONFLICT (channel, key) DO NOTHING"
                ),
                (reply.channel, reply.key, _json(stored), now),
            )

    def pending_replies(self, channel: str) -> list[Reply]:
        rows = self.conn.execute(
            self._sql("SELECT body FROM channel_outbox WHERE channel = ? AND delivered = 0 ORDER BY created_at, key"),
            (channel,),
        ).fetchall()
        return [msgspec.json.decode(row[0], type=Reply) for row in rows]

    def list_replies(self, channel: str, limit: int = 50) -> list[Reply]:
        rows = self.conn.execute(
            self._sql("SELECT body FROM channel_outbox WHERE channel = ? ORDER BY created_at DESC, key DESC LIMIT ?"),
            (channel, limit),
        ).fetchall()
        return [msgspec.json.decode(row[0], type=Reply) for row in rows][::-1]

    def reply_sent(self, channel: str, key: str, platform_id: str) -> None:
        self._change_reply(channel, key, delivered=True, platform_id=platform_id)

    def reply_failed(self, channel: str, key: str, error: str, next_at: float) -> None:
        self._change_reply(channel, key, delivered=False, error=error, next_at=next_at)

    def _change_reply(self, channel: str, key: str, *, delivered: bool, **changes: Any) -> None:
        with self._tx() as conn:
            row = conn.execute(
                self._sql("SELECT body FROM channel_outbox WHERE channel = ? AND key = ?"), (channel, key)
            ).fetchone()
            if row is None:
                raise NotFound(f"no reply {key!r} on channel {channel!r}")
            reply = msgspec.json.decode(row[0], type=Reply)
            reply = msgspec.structs.replace(reply, attempts=reply.attempts + 1, **changes)
            if delivered:
                reply.delivered_at = self.clock()
            conn.execute(
                self._sql("UPDATE channel_outbox SET delivered = ?, body = ? WHERE channel = ? AND key = ?"),
                (1 if delivered else 0, _json(reply), channel, key),
            )

    def claim_channel(self, channel: str) -> bool:
        return True  # a SQLite file has one Gateway

    def forget_channel(self, channel: str) -> None:
        with self._tx() as conn:
            for table in ("channel_senders", "channel_codes", "channel_positions", "channel_inbox", "channel_outbox"):
                conn.execute(self._sql(f"DELETE FROM {table} WHERE channel = ?"), (channel,))
