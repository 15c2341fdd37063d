"""K3: residents are durable in every backend (by id or name, listed by name, changed field by field,
removed), and a heartbeat's wake is claimed once, across reopen."""

from __future__ import annotations

import pytest

from anyy.domain.errors import Conflict, NotFound
from anyy.domain.residents import Resident, ResidentPatch
from anyy.domain.sessions import NewSession
from anyy.storage.protocol import SessionStore
from tests.conformance.conftest import Reopen


def _resident(store: SessionStore, name: str) -> Resident:
    session = store.create_session(NewSession(kind="background", title=name))
    return Resident(id=f"res_{name}", name=name, session_id=session.id, instructions="watch", heartbeat_seconds=60)


def test_k3_residents_are_kept_changed_and_removed(store: SessionStore, reopen: Reopen) -> None:
    made = store.create_resident(_resident(store, "inbox"))
    store.create_resident(_resident(store, "alerts"))
    with pytest.raises(Conflict):
        store.create_resident(_resident(store, "inbox"))
    store = reopen(store)
    assert store.get_resident("inbox") == store.get_resident(made.id)
    assert [r.name for r in store.list_residents()] == ["alerts", "inbox"]
    changed = store.update_resident(made.id, ResidentPatch(paused=True, next_wake_at=None, last_trigger="webhook"))
    assert (changed.paused, changed.next_wake_at, changed.last_trigger, changed.instructions) == (
        True,
        None,
        "webhook",
        "watch",
    )
    store = reopen(store)
    assert store.get_resident("inbox").paused
    store.delete_resident(made.id)
    with pytest.raises(NotFound):
        store.get_resident("inbox")
    with pytest.raises(NotFound):
        store.delete_resident(made.id)
    assert store.get_session(made.session_id).id == made.session_id  # its session stays


def test_k3_a_wake_is_claimed_once(store: SessionStore, reopen: Reopen) -> None:
    made = store.create_resident(_resident(store, "inbox"))
    assert store.claim_wake(made.id, 1800.0)
    assert not store.claim_wake(made.id, 1800.0)
    store = reopen(store)
    assert not store.claim_wake(made.id, 1800.0)
    assert store.claim_wake(made.id, 3600.0)
