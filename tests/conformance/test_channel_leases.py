"""L4 at the store, every backend: a store one Gateway uses alone always lets it poll its channels."""

from __future__ import annotations

from anyy.storage.protocol import SessionStore


def test_l4_a_store_used_alone_always_lets_its_gateway_poll(store: SessionStore) -> None:
    assert store.claim_channel("mail")
    assert store.claim_channel("mail")
    store.forget_channel("mail")
    assert store.claim_channel("mail")
