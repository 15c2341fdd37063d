"""K4: a Background session keeps what made it (a schedule's run, a delegated task, a resident) across
reopen; lists show it; a fork is a session of its own and has no origin."""

from __future__ import annotations

import pytest

from anyy.domain.sessions import NewSession, Origin
from anyy.storage.protocol import SessionStore
from tests.conformance.conftest import Reopen

ORIGINS = {
    "schedule": Origin(kind="schedule", name="daily summary", schedule_id="sch_1", scheduled_for=1_790_000_000.0),
    "delegate": Origin(kind="delegate", parent_session_id="ses_parent", parent_call_id="call_7"),
    "resident": Origin(kind="resident", name="inbox", resident_id="res_1"),
}


@pytest.mark.parametrize("kind", sorted(ORIGINS))
def test_k4_a_background_session_keeps_its_origin(store: SessionStore, reopen: Reopen, kind: str) -> None:
    origin = ORIGINS[kind]
    made = store.create_session(NewSession(kind="background", title="run", origin=origin))
    assert made.origin == origin
    chat = store.create_session(NewSession(title="a chat"))
    assert chat.origin is None
    store = reopen(store)
    assert store.get_session(made.id).origin == origin
    listed = {s.id: s.origin for s in store.list_sessions(kind="background").items}
    assert listed == {made.id: origin}
    fork = store.fork_session(made.id)
    assert fork.origin is None
    assert store.get_session(fork.id).origin is None
