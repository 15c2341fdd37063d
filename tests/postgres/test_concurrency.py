"""P1: several connections (as several Gateways would be) write one database at once without losing or
duplicating anything; and text PostgreSQL cannot hold as text (NUL) is kept whole."""

from __future__ import annotations

import threading

from anyy.domain.sessions import NewSession
from anyy.storage.postgres import PostgresStore
from tests.conformance.support import drain, user

WRITERS = 3
APPENDS = 30


def test_p1_concurrent_writers_on_one_session_take_turns(database: str) -> None:
    first = PostgresStore(database, profile="p")
    session_id = first.create_session(NewSession(title="shared")).id
    first.close()
    errors: list[BaseException] = []
    start = threading.Barrier(WRITERS)

    def write(number: int) -> None:
        store = PostgresStore(database, profile="p")  # one connection per thread, as the protocol asks
        try:
            start.wait()
            for index in range(APPENDS):
                store.append_entries(session_id, [user(f"writer {number} message {index}")])
        except BaseException as exc:
            errors.append(exc)
        finally:
            store.close()

    threads = [threading.Thread(target=write, args=(n,)) for n in range(WRITERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    store = PostgresStore(database, profile="p")
    try:
        path = store.path(session_id)
        assert len(path) == WRITERS * APPENDS  # one line: each append's parent is the one before it
        assert len({entry.id for entry in path}) == len(path)
        for number in range(WRITERS):
            mine = [e.text for e in path if e.text.startswith(f"writer {number} ")]
            assert mine == [f"writer {number} message {index}" for index in range(APPENDS)]  # in its order
    finally:
        store.close()


def test_p1_text_with_nul_is_kept_whole_and_searchable(database: str) -> None:
    store = PostgresStore(database, profile="p")
    try:
        session = store.create_session(NewSession())
        text = "binary tool output \x00\x01 then wombat"
        (entry,) = store.append_entries(session.id, [user(text)])
        drain(store)
        assert store.get_entry(session.id, entry.id).text == text
        assert [hit.entry_id for hit in store.search("wombat")] == [entry.id]
    finally:
        store.close()


def test_b1_p1_pages_stay_stable_while_another_connection_inserts(database: str) -> None:
    reader = PostgresStore(database, profile="p")
    writer = PostgresStore(database, profile="p")  # another Gateway, on its own connection
    try:
        original = {writer.create_session(NewSession(title=f"s{i}")).id for i in range(73)}
        seen: list[str] = []
        newcomers: set[str] = set()
        cursor: str | None = None
        while True:
            page = reader.list_sessions(limit=20, cursor=cursor)
            seen += [s.id for s in page.items]
            for i in range(5):  # committed by the other connection between two pages
                newcomers.add(writer.create_session(NewSession(title=f"new {len(seen)}.{i}")).id)
            if page.next_cursor is None:
                break
            cursor = page.next_cursor
        assert len(seen) == len(set(seen))  # no duplicates
        assert set(seen) == original  # no gaps, none of the newcomers
        assert {s.id for s in reader.list_sessions(limit=200).items} == original | newcomers
    finally:
        reader.close()
        writer.close()
