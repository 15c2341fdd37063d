"""U1 with D8: a session created with its first message, in one transaction, on every backend."""

from __future__ import annotations

import pytest

from anyy.domain.entries import Attachment
from anyy.domain.errors import Conflict, InvalidInput, NotFound
from anyy.domain.queue import NewSubmission
from anyy.domain.sessions import NewSession
from anyy.storage.protocol import SessionStore
from tests.conformance.conftest import Reopen


def test_u1_start_session_writes_the_session_and_its_first_message_together(
    store: SessionStore, reopen: Reopen
) -> None:
    session, sub = store.start_session(NewSession(role="default", model="m"), NewSubmission(text="hello", key="k1"))
    assert (sub.session_id, sub.text, sub.state, sub.position) == (session.id, "hello", "pending", 1)
    store = reopen(store)
    assert [s.id for s in store.list_sessions().items] == [session.id]
    assert [s.id for s in store.list_submissions(session.id)] == [sub.id]
    assert store.get_session(session.id).model == "m"


def test_u1_start_session_retried_with_its_key_makes_no_second_session(store: SessionStore, reopen: Reopen) -> None:
    session, sub = store.start_session(NewSession(), NewSubmission(text="once", key="k-start"))
    store = reopen(store)
    again_session, again = store.start_session(NewSession(), NewSubmission(text="once", key="k-start"))
    assert (again_session.id, again.id) == (session.id, sub.id)
    with pytest.raises(Conflict, match="already used for another message"):
        store.start_session(NewSession(), NewSubmission(text="something else", key="k-start"))
    assert [s.id for s in store.list_sessions().items] == [session.id]
    store.clear_queue(session.id)
    store.delete_session(session.id)  # a deleted session's key no longer answers
    fresh, _ = store.start_session(NewSession(), NewSubmission(text="once", key="k-start"))
    assert fresh.id != session.id


def test_u1_a_refused_first_message_creates_no_session(store: SessionStore, reopen: Reopen) -> None:
    missing = Attachment(object="0" * 64, name="gone.txt", media_type="text/plain", size=3)
    with pytest.raises((InvalidInput, NotFound)):
        store.start_session(NewSession(), NewSubmission(text="with a lost file", attachments=[missing]))
    with pytest.raises(InvalidInput):
        store.start_session(NewSession(), NewSubmission(text="x", key=""))
    with pytest.raises(InvalidInput):
        store.start_session(NewSession(kind="nonsense"), NewSubmission(text="x"))  # type: ignore[arg-type]
    store = reopen(store)
    assert store.list_sessions().items == []
