"""A5: a store's snapshot is a consistent copy, in the backend's own format, that the backend opens again."""

from __future__ import annotations

from pathlib import Path

import pytest

from anyy.domain.errors import InvalidInput
from anyy.domain.queue import NewSubmission
from anyy.storage.protocol import SessionStore
from tests.conformance.backends import open_backend
from tests.conformance.support import BIG, all_sessions, assistant, chat, new_session, user


def test_a5_snapshot_copies_sessions_trees_and_queues(store: SessionStore, backend: str, tmp_path: Path) -> None:
    original, _ = chat(store, ["hello", "hi", "how are you", "fine"])
    fork = store.fork_session(original.id, store.path(original.id)[1].id, title="branch")
    store.append_entries(fork.id, [user("another way"), assistant("indeed")])
    gone = new_session(store, "gone")
    store.delete_session(gone.id)
    big_session = new_session(store, "big")
    (big,) = store.append_entries(big_session.id, [user("b" * (BIG + 1))])
    upload = store.put_object(b"an attachment", media_type="text/plain")
    store.add_submission(original.id, NewSubmission(text="queued"))

    target = tmp_path / "snapshot"
    target.mkdir()
    snap = store.snapshot(target)

    assert snap.files
    assert all((target / name).is_file() for name in snap.files)
    assert snap.sessions == 3
    assert snap.entries == 4 + 2 + 1
    assert snap.submissions == 1
    assert big.object in snap.objects
    assert upload.hash not in snap.objects  # an upload nothing references yet is not part of the copy's needs

    copy = open_backend(backend, target)
    try:
        assert [s.id for s in all_sessions(copy)] == [s.id for s in all_sessions(store)]
        assert copy.path(fork.id) == store.path(fork.id)
        assert copy.tree(original.id) == store.tree(original.id)
        assert [s.text for s in copy.list_submissions(original.id)] == ["queued"]
    finally:
        copy.close()


def test_a5_snapshot_never_overwrites_and_the_store_goes_on(store: SessionStore, tmp_path: Path) -> None:
    session, _ = chat(store, ["one"])
    target = tmp_path / "snapshot"
    target.mkdir()
    first = store.snapshot(target)
    with pytest.raises(InvalidInput):
        store.snapshot(target)
    assert all((target / name).is_file() for name in first.files)
    store.append_entries(session.id, [assistant("two")])
    assert [e.text for e in store.path(session.id)] == ["one", "two"]
