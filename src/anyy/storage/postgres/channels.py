"""Channels (SPEC L1-L3): the SQLite store's statements, with PostgreSQL's placeholders."""

from __future__ import annotations

from typing import Any

from anyy.storage.sqlite.channels import ChannelsSql

# The holder keeps the channel; anyone takes it from a Gateway that left (no row) or was not seen for its
# lease (a SIGKILLed one): the same liveness as a session's owner.
_CLAIM = (
    "INSERT INTO channel_leases (channel, owner) VALUES (%(channel)s, %(me)s) ON CONFLICT (channel) DO UPDATE "
    "SET owner = EXCLUDED.owner WHERE channel_leases.owner = EXCLUDED.owner OR NOT EXISTS ("
    "SELECT 1 FROM gateways g WHERE g.id = channel_leases.owner "
    "AND g.last_seen + make_interval(secs => g.lease_seconds) > clock_timestamp()) RETURNING owner"
)


class PgChannelsSql(ChannelsSql):
    member: Any

    def _sql(self, text: str) -> str:
        return text.replace("?", "%s")

    def claim_channel(self, channel: str) -> bool:
        """L4: one Gateway of a service polls a channel; a store used alone always may."""
        if self.member is None:
            return True
        with self._tx() as conn:
            row = conn.execute(_CLAIM, {"channel": channel, "me": self.member.id}).fetchone()
        return row is not None

    def forget_channel(self, channel: str) -> None:
        super().forget_channel(channel)
        with self._tx() as conn:
            conn.execute("DELETE FROM channel_leases WHERE channel = %s", (channel,))
