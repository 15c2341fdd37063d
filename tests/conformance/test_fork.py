"""F1: fork from any point keeps that path's history and labels, copies nothing, and leaves the original as it was."""

from __future__ import annotations

import pytest

from anyy.domain.entries import Entry, EntryKind, LabelData, NewEntry
from anyy.domain.errors import NotFound
from anyy.domain.sessions import NewSession
from anyy.storage.protocol import SessionStore
from tests.conformance.conftest import Reopen
from tests.conformance.support import assistant, chat, ids, snapshot, submit, texts, user


def label(text: str, target: int) -> NewEntry:
    return NewEntry(kind=EntryKind.LABEL, text=text, data=LabelData(target=target))


def _family(store: SessionStore) -> tuple[str, list[Entry], str, list[Entry]]:
    """An original with a side branch, and a fork of it with entries of its own."""
    session = store.create_session(NewSession(title="original", role="scribe", model="m1"))
    _, main = chat(store, ["u1", "a1", "u2", "a2", "u3", "a3"], session=session)
    store.set_head(session.id, main[1].id)
    side = store.append_entries(session.id, [user("side")])
    store.set_head(session.id, main[-1].id)
    fork = store.fork_session(session.id, main[3].id)
    own = store.append_entries(fork.id, [user("f1"), assistant("f2")])
    assert side
    return session.id, main, fork.id, own


@pytest.mark.parametrize("point", ["head", "middle", "root", "inherited", "own"])
def test_f1_fork_path_is_the_original_path_up_to_the_point(store: SessionStore, reopen: Reopen, point: str) -> None:
    original, main, source, own = _family(store)
    expected_by_point = {
        "head": (original, None, main),
        "middle": (original, main[2].id, main[:3]),
        "root": (original, main[0].id, main[:1]),
        "inherited": (source, main[1].id, main[:2]),  # an entry the source fork inherited from the original
        "own": (source, own[0].id, [*main[:4], own[0]]),
    }
    from_session, at, expected = expected_by_point[point]
    before = {sid: snapshot(store, sid) for sid in (original, source)}

    fork = store.fork_session(from_session, at)
    assert fork.id not in (original, source)
    assert fork.forked_from == from_session
    assert fork.head == expected[-1].id
    assert store.path(fork.id) == expected
    assert [node.id for node in store.tree(fork.id).nodes] == ids(expected)
    assert {sid: snapshot(store, sid) for sid in (original, source)} == before

    store = reopen(store)
    assert store.path(fork.id) == expected
    assert store.get_session(fork.id).head == expected[-1].id
    mine = store.append_entries(fork.id, [user("fork's own"), assistant("reply")])
    assert store.path(fork.id) == [*expected, *mine]
    assert mine[0].parent == expected[-1].id
    assert {sid: snapshot(store, sid) for sid in (original, source)} == before


def test_f1_fork_keeps_the_session_settings_but_is_distinct(store: SessionStore) -> None:
    original, _, _, _ = _family(store)
    fork = store.fork_session(original, title="my fork")
    assert fork.title == "my fork"
    assert (fork.role, fork.model) == ("scribe", "m1")
    assert store.get_session(original).title == "original"


def test_f1_fork_of_an_empty_session(store: SessionStore) -> None:
    session = store.create_session(NewSession())
    fork = store.fork_session(session.id)
    assert fork.head is None
    (first,) = store.append_entries(fork.id, [user("hello")])
    assert store.path(fork.id) == [first]
    assert store.path(session.id) == []


def test_f1_labels_on_the_path_are_visible_in_the_fork(store: SessionStore) -> None:
    session, main = chat(store, ["u1", "a1", "u2", "a2"])
    (mark,) = store.append_entries(session.id, [label("before the refactor", main[1].id)])
    after = store.append_entries(session.id, [user("u3")])
    store.append_entries(session.id, [label("late label", main[0].id)])  # after the fork point

    fork = store.fork_session(session.id, after[0].id)
    tree = store.tree(fork.id)
    assert tree.labels == {main[1].id: "before the refactor"}
    by_id = {node.id: node for node in tree.nodes}
    assert by_id[main[1].id].label == "before the refactor"
    assert by_id[main[0].id].label is None
    assert mark.id in by_id
    # The fork's own labels don't touch the original.
    store.append_entries(fork.id, [label("fork label", main[2].id)])
    assert store.tree(fork.id).labels == {main[1].id: "before the refactor", main[2].id: "fork label"}
    assert main[2].id not in store.tree(session.id).labels


def test_f1_queues_and_executions_are_not_copied(store: SessionStore) -> None:
    session, _ = chat(store, ["u1", "a1"])
    running = submit(store, session.id, "taken by the running execution")
    store.start_execution(session.id, [running])
    submit(store, session.id, "queued follow-up", "follow_up")
    submit(store, session.id, "queued steering", "steering")
    before = store.list_submissions(session.id)

    fork = store.fork_session(session.id)
    assert store.list_submissions(fork.id, states=("pending", "taken", "suspended")) == []
    assert store.list_executions(fork.id) == []
    assert store.list_submissions(session.id) == before
    assert len(store.list_executions(session.id, active_only=True)) == 1
    # The fork is idle: it can start its own work at once.
    store.start_execution(fork.id, [submit(store, fork.id, "in the fork")])


def test_f1_fork_of_a_fork_of_a_fork(store: SessionStore) -> None:
    original, main = chat(store, ["u1", "a1", "u2"])
    chain = [original.id]
    expected = list(main)
    for depth in range(4):
        fork = store.fork_session(chain[-1])
        assert store.path(fork.id) == expected
        expected += store.append_entries(fork.id, [user(f"depth {depth}")])
        chain.append(fork.id)
    deep_mid = store.fork_session(chain[-1], expected[4].id)
    assert store.path(deep_mid.id) == expected[:5]
    for depth, sid in enumerate(chain):
        assert len(store.path(sid)) == 3 + depth


def test_f1_fork_at_an_entry_outside_the_tree_is_not_found(store: SessionStore) -> None:
    original, main = chat(store, ["u1", "a1", "u2"])
    _, stranger = chat(store, ["x"])
    fork = store.fork_session(original.id, main[1].id)
    store.append_entries(fork.id, [user("fork's")])
    original_later = store.append_entries(original.id, [user("original's, after the fork")])
    for session_id, at in [
        (original.id, stranger[0].id),  # another session's entry
        (original.id, main[-1].id + 999),  # no such entry
        (fork.id, main[2].id),  # the original's entry after the fork point: not in the fork's tree
        (fork.id, original_later[0].id),
    ]:
        with pytest.raises(NotFound):
            store.fork_session(session_id, at)
    with pytest.raises(NotFound):
        store.fork_session("ses_doesnotexist")
    assert len(store.path(fork.id)) == 3


def test_f1_original_can_go_on_after_the_fork(store: SessionStore) -> None:
    original, _ = chat(store, ["u1", "a1"])
    fork = store.fork_session(original.id)
    later = store.append_entries(original.id, [user("original continues")])
    mine = store.append_entries(fork.id, [user("fork continues")])
    assert texts(store.path(original.id)) == ["u1", "a1", "original continues"]
    assert texts(store.path(fork.id)) == ["u1", "a1", "fork continues"]
    assert later[0].id != mine[0].id
    assert later[0].id not in {node.id for node in store.tree(fork.id).nodes}
    assert mine[0].id not in {node.id for node in store.tree(original.id).nodes}


def test_f1_navigation_inside_a_fork_stays_in_its_tree(store: SessionStore) -> None:
    original, main = chat(store, ["u1", "a1", "u2", "a2"])
    fork = store.fork_session(original.id, main[2].id)
    own = store.append_entries(fork.id, [assistant("fork reply")])
    store.set_head(fork.id, main[0].id)  # into the inherited part
    branch = store.append_entries(fork.id, [assistant("another reply")])
    assert store.path(fork.id) == [main[0], *branch]
    nodes = {node.id for node in store.tree(fork.id).nodes}
    assert nodes == {*ids(main[:3]), *ids(own), *ids(branch)}
    store.set_head(fork.id, own[0].id)
    assert store.path(fork.id) == [*main[:3], *own]
    assert store.path(original.id) == main


def test_t2_navigating_back_in_a_fresh_fork_keeps_the_forked_path(store: SessionStore) -> None:
    original, main = chat(store, ["u1", "a1", "u2", "a2"])
    fork = store.fork_session(original.id)
    store.set_head(fork.id, main[1].id)
    assert [node.id for node in store.tree(fork.id).nodes] == ids(main)
    store.set_head(fork.id, main[-1].id)
    assert store.path(fork.id) == main
