"""L4 at the PostgreSQL store: with several Gateways on one database, one polls a channel; the others
stand by and take it once its holder left the service or stopped renewing its lease."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from anyy.storage.postgres import PostgresStore

NOTE = "taken over: interrupted"


@pytest.fixture
def pair(database: str) -> Iterator[tuple[PostgresStore, PostgresStore]]:
    a, b = PostgresStore(database, profile="a"), PostgresStore(database, profile="b")
    a.join_service("gw-a", lease=30.0, address="http://a", recovery_note=NOTE)
    b.join_service("gw-b", lease=30.0, address="http://b", recovery_note=NOTE)
    yield a, b
    a.close()
    b.close()


def test_l4_one_gateway_polls_a_channel_the_other_stands_by(pair: tuple[PostgresStore, PostgresStore]) -> None:
    a, b = pair
    assert a.claim_channel("mail")
    assert not b.claim_channel("mail")
    assert a.claim_channel("mail")  # the holder keeps it
    assert b.claim_channel("telegram")  # another channel: another lease
    assert not a.claim_channel("telegram")


def test_l4_a_channel_is_taken_over_when_its_gateway_dies_or_leaves(pair: tuple[PostgresStore, PostgresStore]) -> None:
    a, b = pair
    assert a.claim_channel("mail")
    # a stops renewing (SIGKILLed): its lease runs out
    b.conn.execute("UPDATE gateways SET last_seen = clock_timestamp() - interval '1 minute' WHERE id = 'gw-a'")
    assert b.claim_channel("mail")
    assert not a.claim_channel("mail")
    b.leave_service()  # a clean stop gives it back at once
    a.heartbeat()
    assert a.claim_channel("mail")
