"""P1: what the PostgreSQL store's common calls cost the server, counted (not timed): a fork is one round
trip, a page of history reads the page and not the whole path."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator

import msgspec
import pytest

from anyy.domain.context import CONTEXT_KINDS, carries_payload
from anyy.domain.entries import AssistantData, CompactionData, EntryKind, NewEntry
from anyy.domain.sessions import NewSession
from anyy.storage.postgres import PostgresStore
from anyy.storage.postgres.entries import CONTEXT_CHUNK
from tests.conformance.support import BIG, assistant, tool_call, tool_result, user

PATH_LENGTH = 2_000
PAGE = 10


@pytest.fixture
def store(database: str) -> Iterator[PostgresStore]:
    opened = PostgresStore(database, profile="p")
    yield opened
    opened.close()


def _round_trips(store: PostgresStore, call: object) -> int:
    """How many times ``call()`` sent something to the server and waited for its answer (libpq's trace:
    a run of client messages is one round trip)."""
    with tempfile.TemporaryFile("w+") as trace:
        store.conn.pgconn.trace(trace.fileno())
        try:
            call()  # type: ignore[operator]
        finally:
            store.conn.pgconn.untrace()
        os.fsync(trace.fileno())
        trace.seek(0)
        directions = [line.split("\t")[1] for line in trace.read().splitlines() if "\t" in line]
    return sum(1 for i, d in enumerate(directions) if d == "F" and (i == 0 or directions[i - 1] != "F"))


def test_p1_a_fork_at_the_head_is_one_round_trip(store: PostgresStore) -> None:
    session = store.create_session(NewSession(title="source"))
    store.append_entries(session.id, [user("one"), user("two")])
    forks = []
    assert _round_trips(store, lambda: forks.append(store.fork_session(session.id))) == 1
    (fork,) = forks
    head = store.get_session(session.id).head
    assert (fork.title, fork.forked_from, fork.head) == ("source (fork)", session.id, head)
    assert [entry.text for entry in store.path(fork.id)] == ["one", "two"]


def _entries_read(store: PostgresStore, call: object) -> int:
    """Rows of ``entries`` the server fetched through an index while ``call()`` ran: the backend's counts
    before and after, inside one transaction opened here (the server adds them up until the backend next
    idles outside a transaction)."""
    fetched = "SELECT idx_tup_fetch FROM pg_stat_xact_user_tables WHERE relname = 'entries'"
    store.conn.execute("BEGIN")
    try:
        before = store.conn.execute(fetched).fetchone()
        call()  # type: ignore[operator]
        after = store.conn.execute(fetched).fetchone()
    finally:
        store.conn.execute("ROLLBACK")
    assert before is not None
    assert after is not None
    return int(after[0]) - int(before[0])


def test_p1_a_page_of_history_reads_the_page_not_the_path(store: PostgresStore) -> None:
    session = store.create_session(NewSession())
    store.append_entries(session.id, [user(f"message {i}") for i in range(PATH_LENGTH)])
    fork = store.fork_session(session.id)
    store.append_entries(fork.id, [user("fork 1"), user("fork 2")])  # a path of two runs
    store.conn.execute("ANALYZE entries")  # the statistics upkeep (or autovacuum) keeps
    pages = []
    read = _entries_read(store, lambda: pages.append(store.history(fork.id, limit=PAGE)))
    (page,) = pages
    assert [entry.text for entry in page.items] == ["fork 2", "fork 1"] + [
        f"message {i}" for i in range(PATH_LENGTH - 1, PATH_LENGTH - PAGE + 1, -1)
    ]
    assert read < 5 * PAGE, f"a page of {PAGE} read {read} rows of a {PATH_LENGTH:,}-entry path"
    older = store.history(fork.id, limit=PAGE, cursor=page.next_cursor)
    assert older.items[0].text == f"message {PATH_LENGTH - PAGE + 1}"


def test_p1_the_search_index_keeps_a_small_pending_list(store: PostgresStore) -> None:
    """The pages a GIN pending list frees stay in the index: a 4 MB list cost ~45 bytes per message at 100k."""
    row = store.conn.execute("SELECT reloptions FROM pg_class WHERE relname = 'entry_words_gin'").fetchone()
    assert row is not None
    assert "gin_pending_list_limit=256" in (row[0] or [])
    session = store.create_session(NewSession())
    store.append_entries(session.id, [user(f"wombat number {i}") for i in range(100)])
    assert len(store.search("wombat", limit=200)) == 100


def test_p1_a_path_whose_runs_go_down_in_ids_still_reads_in_path_order(store: PostgresStore) -> None:
    """Every path the store writes goes up in ids, which the context's fast read relies on; a path that
    does not (written by hand here: an older session's entry hanging from a newer one's) is read in path
    order all the same."""
    older = store.create_session(NewSession())
    newer = store.create_session(NewSession())
    first, second = store.append_entries(newer.id, [user("newer one"), user("newer two")])
    older_num = store.conn.execute("SELECT num FROM sessions WHERE id = %s", (older.id,)).fetchone()
    assert older_num is not None
    child = (older_num[0] << 30) | 1
    assert child < first.id
    store.conn.execute(
        "INSERT INTO entries (id, parent, run, kind, text, created_at) VALUES (%s, %s, %s, 1, 'older one', 0)",
        (child, second.id, child),
    )
    store.conn.execute("INSERT INTO cross_links (child, parent) VALUES (%s, %s)", (child, second.id))
    expected = ["newer one", "newer two", "older one"]
    assert [entry.text for entry in store.path(older.id)] == expected
    assert [item[2] for item in store.context(older.id).items] == expected


def test_p1_a_long_context_is_read_in_rounds_whole_and_in_order(store: PostgresStore) -> None:
    """The context of a path longer than a few rounds of the stream (its items read in binary, in rounds of
    CONTEXT_CHUNK rows) is the path's context items, payloads included where ``carries_payload`` says, an
    object body read back, from the applied compaction on."""
    session = store.create_session(NewSession())
    entries: list[NewEntry] = []
    for n in range(CONTEXT_CHUNK):
        entries += [user(f"question {n}"), assistant(f"answer {n}"), tool_call(f"c{n}"), tool_result(f"c{n}", "ok")]
    entries[5] = NewEntry(kind=EntryKind.ASSISTANT, text="cut short", data=AssistantData(interrupted=True))
    entries[-4] = user("x" * (BIG + 1))  # a body stored as an object
    first = store.append_entries(session.id, entries)
    compaction = NewEntry(kind=EntryKind.COMPACTION, text="summary", data=CompactionData(first_kept=first[4].id))
    store.append_entries(session.id, [compaction, user("after")])
    path = store.path(session.id)
    payloads = {e.id: msgspec.json.encode(e.data) for e in path}
    expected = [
        (e.id, int(e.kind), e.text, payloads[e.id] if carries_payload(e.kind, payloads[e.id].decode()) else None)
        for e in path
        if e.kind in CONTEXT_KINDS and e.id >= first[4].id
    ]
    context = store.context(session.id)
    items = context.items
    got = [(i, k, t, None if d is None else msgspec.json.encode(msgspec.json.decode(d))) for i, k, t, d in items]
    assert len(got) > 3 * CONTEXT_CHUNK
    assert got == expected
    assert context.summary == "summary"


def test_p1_a_context_read_leaves_the_connection_as_it_found_it(store: PostgresStore) -> None:
    """libpq keeps the chunked mode of the context's read until the next statement sent outside a pipeline;
    a pipeline opened next would get its first statement's rows in chunks, which psycopg refuses. A context
    without answers (nothing else is read after its items) leaves a connection on which that works."""
    session = store.create_session(NewSession())
    store.append_entries(session.id, [user(f"message {n}") for n in range(3)])
    assert [item[2] for item in store.context(session.id).items] == ["message 0", "message 1", "message 2"]
    with store.conn.pipeline():
        row = store.conn.execute("SELECT 1").fetchone()
    assert row == (1,)
