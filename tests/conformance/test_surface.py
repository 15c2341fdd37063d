"""The protocol is each backend's whole public face: what code above storage may call is what the
conformance suite proves, and nothing a backend adds for itself is reachable without naming it."""

from __future__ import annotations

import inspect

import pytest

from anyy.storage.memory import MemoryStore
from anyy.storage.postgres import PostgresStore
from anyy.storage.protocol import SessionStore
from anyy.storage.sqlite import SqliteStore

PROTOCOL = {name for name, _ in inspect.getmembers(SessionStore, inspect.isfunction) if not name.startswith("_")}
# Ways to open a store, used only by the composition root (anyy.profiles.store) and by tests.
OPENERS = {"open_profile", "from_snapshot"}


@pytest.mark.parametrize("backend", [SqliteStore, MemoryStore, PostgresStore], ids=["sqlite", "memory", "postgresql"])
def test_a1_a_backend_offers_the_protocol_and_nothing_else(backend: type) -> None:
    public = {name for name, member in inspect.getmembers(backend) if callable(member) and not name.startswith("_")}
    assert public - OPENERS == PROTOCOL
    for name in PROTOCOL:
        mine = inspect.signature(getattr(backend, name))
        theirs = inspect.signature(getattr(SessionStore, name))
        assert list(mine.parameters) == list(theirs.parameters), name
