"""F3: delete removes a conversation but keeps what another session still reaches, in any order; unfinished
work is a conflict; upkeep reclaims the rest, objects included."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from anyy.domain.entries import Attachment, Entry
from anyy.domain.errors import Conflict, NotFound
from anyy.domain.queue import NewSubmission
from anyy.domain.sessions import NewSession
from anyy.storage.protocol import SessionStore
from tests.conformance.conftest import OpenStore, Reopen
from tests.conformance.support import (
    BIG,
    all_sessions,
    assistant,
    chat,
    drain,
    ids,
    snapshot,
    submit,
    texts,
    tool_call,
    tool_result,
    user,
)

WORDS = {"original": "wombat", "fork": "numbat", "fork_of_fork": "bilby", "old_fork": "dingo"}


class Family:
    """Four sessions sharing history: an original, a fork, a fork of the fork, and a fork at an older entry.

    Each has a word of its own (for search) and objects of its own; one object is shared by all.
    """

    def __init__(self, store: SessionStore, *, old_fork_has_entries: bool) -> None:
        self.objects: dict[str, list[str]] = {name: [] for name in WORDS}  # reached by that session only
        self.words = dict(WORDS) if old_fork_has_entries else {k: v for k, v in WORDS.items() if k != "old_fork"}
        shared = store.put_object(b"the logo every branch still shows", media_type="image/png")
        self.shared = shared.hash

        def attach(data: bytes, owner: str) -> list[Attachment]:
            ref = store.put_object(data)
            self.objects[owner].append(ref.hash)
            return [Attachment(object=ref.hash, name=f"{owner}.bin", size=ref.size)]

        word = WORDS["original"]
        original = store.create_session(NewSession(title="original"))
        main = store.append_entries(
            original.id,
            [
                user(f"{word} hello"),
                user(f"{word} logo", [Attachment(object=shared.hash, name="logo.png", size=shared.size)]),
                assistant(f"{word} seen"),
                tool_call("c1", "shell", {"cmd": "ls"}),
                tool_result("c1", f"{word} files"),
                assistant(f"{word} done"),
                user(f"{word} tail only the original has", attach(b"original's own attachment", "original")),
                assistant(f"{word} large " + "o" * (BIG + 1)),
            ],
        )
        assert main[-1].object is not None
        self.objects["original"].append(main[-1].object)
        store.set_head(original.id, main[2].id)
        store.append_entries(original.id, [user(f"{word} side branch"), assistant(f"{word} side reply")])
        store.set_head(original.id, main[-1].id)

        word = WORDS["fork"]
        fork = store.fork_session(original.id, main[4].id)
        own = store.append_entries(
            fork.id,
            [
                user(f"{word} fork starts"),
                assistant(f"{word} fork reply"),
                user(f"{word} attached", attach(b"the fork's attachment", "fork")),
                assistant(f"{word} large " + "f" * (BIG + 1)),
            ],
        )
        assert own[-1].object is not None
        self.objects["fork"].append(own[-1].object)

        word = WORDS["fork_of_fork"]
        fork_of_fork = store.fork_session(fork.id, own[1].id)
        store.append_entries(
            fork_of_fork.id,
            [user(f"{word} deeper", attach(b"the fork of fork's attachment", "fork_of_fork")), assistant(word)],
        )

        old_fork = store.fork_session(original.id, main[1].id)
        if old_fork_has_entries:
            word = WORDS["old_fork"]
            store.append_entries(
                old_fork.id, [user(f"{word} older", attach(b"the old fork's attachment", "old_fork")), assistant(word)]
            )
        self.sessions = {
            "original": original.id,
            "fork": fork.id,
            "fork_of_fork": fork_of_fork.id,
            "old_fork": old_fork.id,
        }

    def all_objects(self) -> list[str]:
        return [self.shared, *(obj for objs in self.objects.values() for obj in objs)]


def _hits(store: SessionStore, word: str) -> set[str]:
    return {hit.session_id for hit in store.search(word, limit=100)}


def _check_survivors(store: SessionStore, family: Family, alive: set[str], seen: dict[str, Any]) -> None:
    for name in alive:
        sid = family.sessions[name]
        assert snapshot(store, sid) == seen[name], f"{name} changed"
        for obj in family.objects[name]:
            assert store.read_object(obj)
        if name in family.words:
            assert _hits(store, family.words[name]) == {sid}
    if alive:
        assert store.read_object(family.shared)


def _check_gone(store: SessionStore, family: Family, name: str, *, collected: bool) -> None:
    sid = family.sessions[name]
    with pytest.raises(NotFound):
        store.get_session(sid)
    assert sid not in {s.id for s in all_sessions(store)}
    assert sid not in _hits(store, WORDS[name])  # (a fork that still reaches the words may be named instead)
    if collected:
        for obj in family.objects[name]:
            with pytest.raises(NotFound):
                store.read_object(obj)


def _delete_in_every_order(open_store: OpenStore, *, old_fork_has_entries: bool) -> None:
    for number, order in enumerate(itertools.permutations(WORDS)):
        store = open_store(f"order-{number}")
        family = Family(store, old_fork_has_entries=old_fork_has_entries)
        seen = {name: snapshot(store, sid) for name, sid in family.sessions.items()}
        alive = set(WORDS)
        for name in order:
            store.delete_session(family.sessions[name])
            alive.discard(name)
            _check_gone(store, family, name, collected=False)
            _check_survivors(store, family, alive, seen)
            for _ in range(10_000):  # small upkeep steps, every survivor checked between them
                more = store.maintain(3).more
                _check_survivors(store, family, alive, seen)
                if not more:
                    break
            _check_gone(store, family, name, collected=True)
            _check_survivors(store, family, alive, seen)
        drain(store)
        assert all_sessions(store) == [], order
        for word in WORDS.values():
            assert store.search(word) == [], order
        for obj in family.all_objects():
            with pytest.raises(NotFound):
                store.read_object(obj)
        store.close()


def test_f3_delete_keeps_what_forks_reach_in_every_order(open_store: OpenStore) -> None:
    _delete_in_every_order(open_store, old_fork_has_entries=True)


def test_f3_delete_in_every_order_with_a_fork_that_has_no_entries(open_store: OpenStore) -> None:
    _delete_in_every_order(open_store, old_fork_has_entries=False)


def test_f3_deleted_head_only_fork_releases_the_original_objects(store: SessionStore) -> None:
    """The smallest case of the bug above, kept passing: the *other* order (fork deleted first) works."""
    original, _ = chat(store, ["u1"])
    (big,) = store.append_entries(original.id, [assistant("b" * (BIG + 1))])
    fork = store.fork_session(original.id)
    store.delete_session(fork.id)
    drain(store)
    store.delete_session(original.id)
    drain(store)
    assert big.object is not None
    with pytest.raises(NotFound):
        store.read_object(big.object)


def test_f3_head_only_fork_deleted_last_releases_the_original_objects(store: SessionStore) -> None:
    original, _ = chat(store, ["u1"])
    (big,) = store.append_entries(original.id, [assistant("b" * (BIG + 1))])
    fork = store.fork_session(original.id)
    store.delete_session(original.id)
    drain(store)
    assert store.path(fork.id)[-1].text == big.text
    store.delete_session(fork.id)
    drain(store)
    assert big.object is not None
    with pytest.raises(NotFound):
        store.read_object(big.object)


def test_f3_deleted_session_is_not_found_everywhere(store: SessionStore, reopen: Reopen) -> None:
    session, entries = chat(store, ["u1", "a1"])
    sub = submit(store, session.id, "done soon")
    execution = store.start_execution(session.id, [sub])
    store.set_execution_state(execution.id, "completed")
    store.delete_session(session.id)
    store = reopen(store)
    sid = session.id
    calls: list[Callable[[], object]] = [
        lambda: store.get_session(sid),
        lambda: store.path(sid),
        lambda: store.tree(sid),
        lambda: store.context(sid),
        lambda: store.history(sid),
        lambda: store.get_entry(sid, entries[0].id),
        lambda: store.append_entries(sid, [user("x")]),
        lambda: store.set_head(sid, None),
        lambda: store.fork_session(sid),
        lambda: store.delete_session(sid),
        lambda: store.list_submissions(sid),
        lambda: store.add_submission(sid, NewSubmission(text="x")),
        lambda: store.get_submission(sub),
        lambda: store.get_execution(execution.id),
        lambda: store.list_executions(sid),
        lambda: store.search("u1", session_id=sid),
    ]
    for call in calls:
        with pytest.raises(NotFound):
            call()
    assert all_sessions(store) == []


def _unfinished(store: SessionStore, how: str) -> str:
    session, _ = chat(store, ["u1", "a1"])
    if how == "running":
        store.start_execution(session.id, [submit(store, session.id, "work")])
    elif how == "suspended":
        execution = store.start_execution(session.id, [submit(store, session.id, "work")])
        store.set_execution_state(execution.id, "suspended")
    elif how == "retry_wait":
        execution = store.start_execution(session.id, [submit(store, session.id, "work")])
        store.set_execution_state(execution.id, "retry_wait")
    elif how == "pending":
        submit(store, session.id, "queued", "follow_up")
    return session.id


@pytest.mark.parametrize("how", ["running", "suspended", "retry_wait", "pending"])
def test_f3_delete_with_unfinished_work_is_a_conflict_and_changes_nothing(store: SessionStore, how: str) -> None:
    sid = _unfinished(store, how)
    before = (
        store.get_session(sid),
        snapshot(store, sid),
        store.list_submissions(sid, states=("pending", "taken", "suspended")),
        store.list_executions(sid),
    )
    with pytest.raises(Conflict):
        store.delete_session(sid)
    drain(store)
    after = (
        store.get_session(sid),
        snapshot(store, sid),
        store.list_submissions(sid, states=("pending", "taken", "suspended")),
        store.list_executions(sid),
    )
    assert after == before
    assert sid in {s.id for s in all_sessions(store)}


def test_f3_delete_after_the_work_finished(store: SessionStore) -> None:
    sid = _unfinished(store, "running")
    submit(store, sid, "queued")
    (execution,) = store.list_executions(sid, active_only=True)
    store.set_execution_state(execution.id, "interrupted")
    with pytest.raises(Conflict):
        store.delete_session(sid)  # the queue is still pending
    store.clear_queue(sid)
    store.delete_session(sid)
    with pytest.raises(NotFound):
        store.get_session(sid)


def test_f3_objects_of_deleted_entries_are_reclaimed_and_shared_ones_stay(store: SessionStore) -> None:
    shared = store.put_object(b"used by both sessions")
    kept_by_queue = store.put_object(b"attached to a pending item of another session")
    only_mine = store.put_object(b"used by the deleted session only")
    body = "m" * (BIG + 1)
    same_body = "s" * (BIG + 1)

    def att(ref: Any) -> list[Attachment]:
        return [Attachment(object=ref.hash, name="f", size=ref.size)]

    mine = store.create_session(NewSession(title="deleted"))
    entries = store.append_entries(
        mine.id,
        [
            user("mine", att(only_mine) + att(shared)),
            assistant(body),
            assistant(same_body),
            user("again", att(kept_by_queue)),
        ],
    )
    other = store.create_session(NewSession(title="kept"))
    store.append_entries(other.id, [user("theirs", att(shared)), assistant(same_body)])
    store.add_submission(other.id, NewSubmission(text="with a file", attachments=att(kept_by_queue)))

    store.delete_session(mine.id)
    drain(store)
    for gone in (only_mine.hash, entries[1].object):
        assert gone is not None
        with pytest.raises(NotFound):
            store.read_object(gone)
    assert store.read_object(shared.hash) == b"used by both sessions"
    assert store.read_object(kept_by_queue.hash) == b"attached to a pending item of another session"
    assert entries[2].object is not None
    assert store.read_object(entries[2].object) == same_body.encode()
    assert texts(store.path(other.id)) == ["theirs", same_body]


def test_f3_objects_a_fork_reaches_stay_until_the_fork_goes(store: SessionStore) -> None:
    ref = store.put_object(b"attachment on the shared part")
    original = store.create_session(NewSession())
    shared = store.append_entries(original.id, [user("shared", [Attachment(object=ref.hash, name="f")])])
    store.append_entries(original.id, [assistant("original only")])
    fork = store.fork_session(original.id, shared[0].id)
    store.append_entries(fork.id, [assistant("fork's reply")])
    store.delete_session(original.id)
    drain(store)
    assert store.read_object(ref.hash) == b"attachment on the shared part"
    assert texts(store.path(fork.id)) == ["shared", "fork's reply"]
    store.delete_session(fork.id)
    drain(store)
    with pytest.raises(NotFound):
        store.read_object(ref.hash)


def test_f3_delete_is_durable(store: SessionStore, reopen: Reopen) -> None:
    session, _ = chat(store, ["u1"])
    kept, _ = chat(store, ["u2"])
    store.delete_session(session.id)
    store = reopen(store)
    assert [s.id for s in all_sessions(store)] == [kept.id]
    drain(store)
    store = reopen(store)
    assert [s.id for s in all_sessions(store)] == [kept.id]
    assert texts(store.path(kept.id)) == ["u2"]


_examples = itertools.count()

# -- a property: any sequence of forks, appends, navigations, deletes and upkeep steps keeps live paths intact --

_op = st.one_of(
    st.tuples(st.just("new"), st.just(0), st.just(0)),
    st.tuples(st.just("append"), st.integers(0, 99), st.integers(1, 3)),
    st.tuples(st.just("fork"), st.integers(0, 99), st.integers(-1, 99)),
    st.tuples(st.just("navigate"), st.integers(0, 99), st.integers(-1, 99)),
    st.tuples(st.just("delete"), st.integers(0, 99), st.just(0)),
    st.tuples(st.just("maintain"), st.integers(1, 5), st.just(0)),
)


class _Model:
    def __init__(self, store: SessionStore) -> None:
        self.store = store
        self.paths: dict[str, list[Entry]] = {}
        self.order: list[str] = []
        self.counter = 0

    def new(self) -> None:
        sid = self.store.create_session(NewSession(title="p")).id
        self.paths[sid] = []
        self.order.append(sid)

    def pick(self, index: int) -> str | None:
        return self.order[index % len(self.order)] if self.order else None

    def apply(self, op: str, a: int, b: int) -> None:
        store = self.store
        if op == "new":
            self.new()
            return
        if op == "maintain":
            store.maintain(a)
            return
        sid = self.pick(a)
        if sid is None:
            return
        path = self.paths[sid]
        if op == "append":
            news = []
            for _ in range(b):
                self.counter += 1
                news.append(user(f"marsupial w{self.counter}"))
            path.extend(store.append_entries(sid, news))
        elif op == "fork":
            if b < 0 or not path:
                fork = store.fork_session(sid)
                kept = list(path)
            else:
                k = b % len(path)
                fork = store.fork_session(sid, path[k].id)
                kept = path[: k + 1]
            self.paths[fork.id] = kept
            self.order.append(fork.id)
        elif op == "navigate":
            if b < 0 or not path:
                store.set_head(sid, None)
                self.paths[sid] = []
            else:
                k = b % len(path)
                store.set_head(sid, path[k].id)
                self.paths[sid] = path[: k + 1]
        elif op == "delete":
            store.delete_session(sid)
            del self.paths[sid]
            self.order.remove(sid)

    def check(self) -> None:
        for sid, expected in self.paths.items():
            assert self.store.path(sid) == expected
            assert self.store.get_session(sid).head == (expected[-1].id if expected else None)
        live = set(self.paths)
        assert {hit.session_id for hit in self.store.search("marsupial", limit=500)} <= live


@settings(
    max_examples=200,
    deadline=None,
    database=None,  # no example database in the working directory: every file of a test is in tmp_path
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(ops=st.lists(_op, max_size=50))
def test_f3_property_live_paths_survive_any_fork_append_navigate_delete(
    open_store: OpenStore, ops: list[tuple[str, int, int]]
) -> None:
    store = open_store(f"example-{next(_examples)}")
    try:
        model = _Model(store)
        model.new()
        for op, a, b in ops:
            model.apply(op, a, b)
            model.check()
        for sid in list(model.order):
            store.delete_session(sid)
            del model.paths[sid]
            model.check()
        drain(store)
        assert all_sessions(store) == []
        assert store.search("marsupial") == []
    finally:
        store.close()


def test_f3_ids_of_a_family(store: SessionStore) -> None:
    """The family used above is what it says: four sessions sharing the original's first entries."""
    family = Family(store, old_fork_has_entries=True)
    paths = {name: ids(store.path(sid)) for name, sid in family.sessions.items()}
    root = paths["original"][0]
    assert all(path[0] == root for path in paths.values())
    assert paths["fork_of_fork"][:6] == paths["fork"][:6]
