"""B1: sessions and history load by pages, most recent first, stable while rows are inserted."""

from __future__ import annotations

import base64

import pytest

from anyy.domain.errors import InvalidInput
from anyy.domain.sessions import NewSession
from anyy.storage.protocol import SessionStore
from tests.conformance.support import all_sessions, chat, ids, new_session, user


def test_b1_sessions_are_listed_by_kind(store: SessionStore) -> None:
    chats = [new_session(store, f"chat {i}").id for i in range(3)]
    background = [new_session(store, f"job {i}", kind="background").id for i in range(2)]
    assert {s.id for s in all_sessions(store, kind="chat")} == set(chats)
    assert {s.id for s in all_sessions(store, kind="background")} == set(background)
    assert {s.id for s in all_sessions(store)} == set(chats + background)
    assert all(s.kind == "background" for s in all_sessions(store, kind="background"))


def test_b1_most_recent_first(store: SessionStore) -> None:
    made = [new_session(store, f"s{i}").id for i in range(5)]
    assert [s.id for s in store.list_sessions().items] == made[::-1]
    assert [s.id for s in store.list_sessions(limit=2).items] == made[:2:-1]


def test_b1_fifty_per_page_stable_under_concurrent_inserts(store: SessionStore) -> None:
    original = {store.create_session(NewSession(title=f"s{i}")).id for i in range(123)}
    seen: list[str] = []
    sizes = []
    cursor: str | None = None
    newcomers = set()
    while True:
        page = store.list_sessions(cursor=cursor)
        sizes.append(len(page.items))
        seen += [s.id for s in page.items]
        for i in range(7):  # other clients start sessions while this one pages
            newcomers.add(store.create_session(NewSession(title=f"new {len(sizes)}.{i}")).id)
        if page.next_cursor is None:
            break
        cursor = page.next_cursor
    assert sizes == [50, 50, 23]
    assert len(seen) == len(set(seen))  # no duplicates
    assert set(seen) == original  # no gaps, none of the newcomers
    assert {s.id for s in all_sessions(store)} == original | newcomers


def test_b1_kind_pages_stable_under_concurrent_inserts(store: SessionStore) -> None:
    original = set()
    for i in range(30):
        sid = new_session(store, kind="background" if i % 3 else "chat").id
        if i % 3:
            original.add(sid)
    seen: list[str] = []
    cursor: str | None = None
    while True:
        page = store.list_sessions(kind="background", limit=7, cursor=cursor)
        assert len(page.items) <= 7
        seen += [s.id for s in page.items]
        new_session(store, kind="background")
        new_session(store, kind="chat")
        if page.next_cursor is None:
            break
        cursor = page.next_cursor
    assert sorted(seen) == sorted(original)


def test_b1_history_pages_the_current_path_newest_first(store: SessionStore) -> None:
    session, first = chat(store, [f"m{i}" for i in range(40)])
    store.set_head(session.id, first[29].id)  # a branch: the path is m0..m29 then the new ones
    second = store.append_entries(session.id, [user(f"n{i}") for i in range(45)])
    fork = store.fork_session(session.id, second[39].id)
    third = store.append_entries(fork.id, [user(f"f{i}") for i in range(36)])
    path = [*first[:30], *second[:40], *third]
    assert store.path(fork.id) == path

    pages = []
    cursor: str | None = None
    while True:
        page = store.history(fork.id, cursor=cursor)
        pages.append(page.items)
        if page.next_cursor is None:
            break
        cursor = page.next_cursor
    assert [len(items) for items in pages] == [50, 50, 6]
    assert [e for items in pages for e in items] == path[::-1]

    small = store.history(fork.id, limit=1)
    assert ids(small.items) == [path[-1].id]
    assert small.next_cursor is not None
    assert ids(store.history(fork.id, limit=3, cursor=small.next_cursor).items) == ids(path[-4:-1][::-1])
    exact = store.history(session.id, limit=len(first[:30]) + len(second))
    assert exact.next_cursor is None
    assert ids(exact.items) == ids([*first[:30], *second][::-1])


def _cursor(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


@pytest.mark.parametrize(
    "cursor",
    [
        pytest.param("", id="empty"),
        pytest.param("not a cursor!", id="garbage"),
        pytest.param(_cursor(b"{}"), id="json-object"),
        pytest.param(_cursor(b"[1, 2, 3]"), id="wrong-arity"),
        pytest.param(_cursor(b"\xff\xfe"), id="not-json"),
    ],
)
def test_b1_invalid_cursor_is_invalid_input(store: SessionStore, cursor: str) -> None:
    session, _ = chat(store, ["a", "b", "c"])
    with pytest.raises(InvalidInput):
        store.list_sessions(cursor=cursor)
    with pytest.raises(InvalidInput):
        store.history(session.id, cursor=cursor)


def test_b1_cursor_of_one_listing_is_invalid_for_the_other(store: SessionStore) -> None:
    session, _ = chat(store, ["a", "b", "c"])
    new_session(store)
    sessions_cursor = store.list_sessions(limit=1).next_cursor
    history_cursor = store.history(session.id, limit=1).next_cursor
    assert sessions_cursor is not None
    assert history_cursor is not None
    with pytest.raises(InvalidInput):
        store.history(session.id, cursor=sessions_cursor)
    with pytest.raises(InvalidInput):
        store.list_sessions(cursor=history_cursor)


@pytest.mark.parametrize("raw", [b"[[1], 2]", b'[{"a": 1}, 2]'])
def test_b1_tampered_sessions_cursor_is_invalid_input(store: SessionStore, raw: bytes) -> None:
    new_session(store)
    with pytest.raises(InvalidInput):
        store.list_sessions(cursor=_cursor(raw))


@pytest.mark.parametrize("limit", [0, -1, 100_000])
def test_b1_page_size_out_of_range_is_invalid_input(store: SessionStore, limit: int) -> None:
    session = new_session(store)
    with pytest.raises(InvalidInput):
        store.list_sessions(limit=limit)
    with pytest.raises(InvalidInput):
        store.history(session.id, limit=limit)


def test_b1_a_session_with_new_activity_moves_to_the_top(store: SessionStore) -> None:
    older, _ = chat(store, ["first words"])
    newer, _ = chat(store, ["later words"])
    assert [s.id for s in all_sessions(store)][:2] == [newer.id, older.id]
    store.append_entries(older.id, [user("the older one speaks again")])
    assert [s.id for s in all_sessions(store)][:2] == [older.id, newer.id]
    assert [s.id for s in store.list_sessions(kind="chat", limit=2).items] == [older.id, newer.id]
