"""W2/W4: captures joined to entries: listed by entry and by execution, kept across a reopen, shared by a
fork, and released once upkeep reclaims the entries no live session reaches."""

from __future__ import annotations

from anyy.domain.file_captures import NewFileCapture
from anyy.storage.protocol import SessionStore
from tests.conformance.conftest import Reopen
from tests.conformance.support import chat, drain, user

A, B, C = "a" * 40, "b" * 40, "c" * 40


def _capture(store: SessionStore, session_id: str, entry_id: int, commit: str, kind: str = "after") -> None:
    store.add_file_capture(
        NewFileCapture(
            session_id=session_id,
            entry_id=entry_id,
            commit=commit,
            workspace="/w",
            kind=kind,  # type: ignore[arg-type]
            execution_id="exe_1" if kind != "rewind" else "",
        )
    )


def test_w2_captures_are_listed_by_entry_and_execution(store: SessionStore, reopen: Reopen) -> None:
    session, entries = chat(store, ["one", "two", "three"])
    _capture(store, session.id, entries[0].id, A, "before")
    _capture(store, session.id, entries[2].id, B)
    _capture(store, session.id, entries[2].id, C, "rewind")
    store = reopen(store)
    found = store.list_file_captures(entry_ids=[e.id for e in entries])
    assert [(c.entry_id, c.commit, c.kind) for c in found] == [
        (entries[0].id, A, "before"),
        (entries[2].id, B, "after"),
        (entries[2].id, C, "rewind"),
    ]
    assert [c.commit for c in store.list_file_captures(execution_id="exe_1")] == [A, B]
    assert store.list_file_captures(entry_ids=[entries[1].id]) == []
    assert found[0].session_id == session.id
    assert found[0].workspace == "/w"
    assert found[0].created_at > 0
    assert store.file_capture_commits() == {A, B, C}


def test_w4_delete_releases_captures_no_session_reaches(store: SessionStore) -> None:
    session, entries = chat(store, ["one", "two"])
    _capture(store, session.id, entries[0].id, A)
    fork = store.fork_session(session.id, at=entries[0].id)
    mine = store.append_entries(fork.id, [user("fork")])
    _capture(store, fork.id, mine[0].id, B)
    _capture(store, session.id, entries[1].id, C)
    store.delete_session(session.id)
    drain(store)
    # The fork still reaches the first entry (and its capture); the original's own second entry is gone.
    assert store.file_capture_commits() == {A, B}
    store.delete_session(fork.id)
    drain(store)
    assert store.file_capture_commits() == set()
