"""T2 and DESIGN §3: the head is stored; navigation is durable; appending after it branches; nothing is lost."""

from __future__ import annotations

import pytest

from anyy.domain.entries import EntryKind, LabelData, NewEntry
from anyy.domain.errors import Conflict, NotFound
from anyy.storage.protocol import SessionStore
from tests.conformance.conftest import Reopen
from tests.conformance.support import assistant, chat, ids, new_session, texts, user


def label(text: str, target: int) -> NewEntry:
    return NewEntry(kind=EntryKind.LABEL, text=text, data=LabelData(target=target))


def test_t2_set_head_is_durable_across_reopen(store: SessionStore, reopen: Reopen) -> None:
    session, entries = chat(store, ["u1", "a1", "u2", "a2", "u3", "a3"])
    moved = store.set_head(session.id, entries[2].id)
    assert moved.head == entries[2].id
    store = reopen(store)
    assert store.get_session(session.id).head == entries[2].id
    assert store.path(session.id) == entries[:3]
    assert store.context(session.id).head == entries[2].id


def test_t2_set_head_to_before_the_first_entry(store: SessionStore, reopen: Reopen) -> None:
    session, entries = chat(store, ["u1", "a1"])
    assert store.set_head(session.id, None).head is None
    store = reopen(store)
    assert store.get_session(session.id).head is None
    assert store.path(session.id) == []
    assert store.context(session.id).items == []
    (root,) = store.append_entries(session.id, [user("a new first message")])
    assert root.parent is None
    tree = store.tree(session.id)
    assert {node.id for node in tree.nodes} == {*ids(entries), root.id}
    assert [node.parent for node in tree.nodes if node.id in (entries[0].id, root.id)] == [None, None]


def test_t2_append_after_navigating_creates_a_sibling_and_keeps_the_old_branch(
    store: SessionStore, reopen: Reopen
) -> None:
    session, entries = chat(store, ["u1", "a1", "u2", "a2"])
    store.set_head(session.id, entries[1].id)
    sibling = store.append_entries(session.id, [user("u2 revised"), assistant("a2 revised")])
    assert sibling[0].parent == entries[1].id
    assert store.path(session.id) == [*entries[:2], *sibling]

    store = reopen(store)
    tree = store.tree(session.id)
    assert tree.head == sibling[-1].id
    by_id = {node.id: node for node in tree.nodes}
    assert set(by_id) == set(ids(entries) + ids(sibling))
    assert by_id[entries[1].id].children == 2
    assert [by_id[e.id].on_path for e in entries] == [True, True, False, False]
    assert all(by_id[e.id].on_path for e in sibling)
    assert [node.id for node in tree.nodes if node.is_head] == [sibling[-1].id]
    assert [by_id[e.id].parent for e in entries] == [None, entries[0].id, entries[1].id, entries[2].id]
    # The old branch is still reachable by navigation, and the new one stays after going back.
    store.set_head(session.id, entries[-1].id)
    assert store.path(session.id) == entries
    assert {node.id for node in store.tree(session.id).nodes} == set(ids(entries) + ids(sibling))


def test_t2_path_to_any_entry_of_the_tree(store: SessionStore) -> None:
    session, entries = chat(store, ["u1", "a1", "u2"])
    store.set_head(session.id, entries[0].id)
    (other,) = store.append_entries(session.id, [assistant("other")])
    assert store.path(session.id, to=entries[2].id) == entries
    assert store.path(session.id, to=other.id) == [entries[0], other]
    assert store.path(session.id) == [entries[0], other]


def test_t2_set_head_outside_the_tree_is_not_found(store: SessionStore) -> None:
    session, entries = chat(store, ["u1", "a1"])
    _, others = chat(store, ["x", "y"])
    with pytest.raises(NotFound):
        store.set_head(session.id, others[0].id)
    with pytest.raises(NotFound):
        store.set_head(session.id, entries[-1].id + 10_000)
    assert store.get_session(session.id).head == entries[-1].id


def test_t2_append_with_the_expected_head_succeeds(store: SessionStore) -> None:
    session, entries = chat(store, ["u1"])
    (reply,) = store.append_entries(session.id, [assistant("a1")], expected_head=entries[0].id)
    assert reply.parent == entries[0].id


def test_t2_append_with_a_stale_expected_head_is_a_conflict(store: SessionStore) -> None:
    session, entries = chat(store, ["u1", "a1", "u2"])
    seen = store.get_session(session.id).head
    assert seen == entries[-1].id
    store.set_head(session.id, entries[0].id)  # another client navigated meanwhile
    with pytest.raises(Conflict):
        store.append_entries(session.id, [user("based on what I saw")], expected_head=seen)
    (late,) = store.append_entries(session.id, [user("after another client's append")])
    with pytest.raises(Conflict):
        store.append_entries(session.id, [user("stale again")], expected_head=entries[0].id)
    assert store.path(session.id) == [entries[0], late]
    assert len(store.tree(session.id).nodes) == 4


def test_t2_new_session_has_no_head(store: SessionStore) -> None:
    session = new_session(store)
    assert session.head is None
    assert store.path(session.id) == []
    assert store.tree(session.id).nodes == []
    assert store.history(session.id).items == []
    assert texts(store.path(session.id)) == []


def test_t2_the_label_on_the_current_path_wins(store: SessionStore) -> None:
    session, entries = chat(store, ["u1", "a1"])
    target = entries[0].id
    store.append_entries(session.id, [label("on a branch left behind", target)])
    store.set_head(session.id, entries[1].id)
    store.append_entries(session.id, [label("on the current path", target)])
    tree = store.tree(session.id)
    assert tree.labels == {target: "on the current path"}
    assert next(node for node in tree.nodes if node.id == target).label == "on the current path"
