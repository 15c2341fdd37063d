"""R4 and DESIGN §3-§4: the model context follows the path, honours the newest compaction, estimates tokens."""

from __future__ import annotations

import msgspec

from anyy.domain.entries import CompactionData, Entry, EntryKind, NewEntry, Usage
from anyy.storage.protocol import SessionStore
from tests.conformance.conftest import Reopen
from tests.conformance.support import assistant, ids, new_session, tool_call, tool_result, user


def compaction(summary: str, first_kept: int) -> NewEntry:
    return NewEntry(kind=EntryKind.COMPACTION, text=summary, data=CompactionData(first_kept=first_kept))


def _item_ids(store: SessionStore, session_id: str) -> list[int]:
    return [item[0] for item in store.context(session_id).items]


def _conversation(store: SessionStore) -> tuple[str, list[Entry]]:
    session = new_session(store)
    entries = store.append_entries(
        session.id,
        [user("u1"), assistant("a1"), user("u2"), assistant("a2"), tool_call("c1"), tool_result("c1", "r1")],
    )
    return session.id, entries


def test_r4_context_without_compaction_is_the_whole_path(store: SessionStore) -> None:
    sid, entries = _conversation(store)
    context = store.context(sid)
    assert context.summary is None
    assert context.compaction is None
    assert context.head == entries[-1].id
    assert [item[0] for item in context.items] == ids(entries)
    assert [item[2] for item in context.items] == ["u1", "a1", "u2", "a2", "", "r1"]
    payload = context.items[4][3]  # tool kinds carry their payload (as JSON text or decoded)
    assert payload is not None
    assert (msgspec.json.decode(payload) if isinstance(payload, str | bytes) else payload) == {
        "call_id": "c1",
        "name": "shell",
    }
    assert context.items[0][3] is None


def test_r4_context_of_an_empty_session(store: SessionStore) -> None:
    session = new_session(store)
    context = store.context(session.id)
    assert (context.items, context.summary, context.compaction, context.head) == ([], None, None, None)


def test_r4_compaction_keeps_summary_and_entries_from_first_kept(store: SessionStore, reopen: Reopen) -> None:
    sid, entries = _conversation(store)
    (comp,) = store.append_entries(sid, [compaction("SUMMARY of u1 a1", entries[2].id)])
    after = store.append_entries(sid, [user("u3")])
    store = reopen(store)
    context = store.context(sid)
    assert context.summary == "SUMMARY of u1 a1"
    assert context.compaction == comp.id
    assert _item_ids(store, sid) == ids(entries[2:]) + ids(after)  # the compaction entry itself is left out
    assert comp.id not in _item_ids(store, sid)


def test_r4_newest_compaction_on_the_path_wins(store: SessionStore) -> None:
    sid, entries = _conversation(store)
    (old,) = store.append_entries(sid, [compaction("OLD", entries[2].id)])
    more = store.append_entries(sid, [user("u3"), assistant("a3")])
    (new,) = store.append_entries(sid, [compaction("NEW", more[0].id)])
    context = store.context(sid)
    assert (context.summary, context.compaction) == ("NEW", new.id)
    assert [item[0] for item in context.items] == ids(more)
    # Navigating to before the newest compaction brings the older one back.
    store.set_head(sid, more[-1].id)
    context = store.context(sid)
    assert (context.summary, context.compaction) == ("OLD", old.id)
    assert [item[0] for item in context.items] == ids(entries[2:]) + ids(more)


def test_r4_older_compaction_inside_the_kept_part_is_left_out(store: SessionStore) -> None:
    sid, entries = _conversation(store)
    (old,) = store.append_entries(sid, [compaction("OLD", entries[4].id)])
    (new,) = store.append_entries(sid, [compaction("NEW", entries[2].id)])
    context = store.context(sid)
    assert (context.summary, context.compaction) == ("NEW", new.id)
    assert [item[0] for item in context.items] == ids(entries[2:])
    assert old.id not in [item[0] for item in context.items]


def test_r4_compaction_on_another_branch_is_ignored(store: SessionStore) -> None:
    sid, entries = _conversation(store)
    store.append_entries(sid, [compaction("on branch A", entries[2].id), user("A")])
    store.set_head(sid, entries[-1].id)
    branch_b = store.append_entries(sid, [user("B")])
    context = store.context(sid)
    assert context.summary is None
    assert context.compaction is None
    assert [item[0] for item in context.items] == ids(entries) + ids(branch_b)


def test_r4_fork_inherits_the_compacted_context(store: SessionStore) -> None:
    sid, entries = _conversation(store)
    store.append_entries(sid, [compaction("S", entries[3].id)])
    fork = store.fork_session(sid)
    assert store.context(fork.id) == store.context(sid)
    (mine,) = store.append_entries(fork.id, [user("fork's own")])
    context = store.context(fork.id)
    assert context.summary == "S"
    assert [item[0] for item in context.items] == [*ids(entries[3:]), mine.id]


def test_r4_tokens_are_last_usage_plus_a_quarter_of_newer_chars(store: SessionStore) -> None:
    session = new_session(store)
    store.append_entries(
        session.id,
        [
            user("x" * 4000),
            assistant("y" * 400, usage=Usage(input=100, output=10)),
            user("z" * 800),
            assistant("w" * 40, usage=Usage(input=1000, output=50, cache_read=200, cache_write=8)),
            user("n" * 400),
            user("m" * 39),
        ],
    )
    # The last response re-read input + cache, then wrote its output; what came after is counted as chars/4.
    assert store.context(session.id).tokens == 1000 + 200 + 8 + 50 + (400 + 39) // 4


def test_r4_tokens_without_any_usage_are_chars_over_four(store: SessionStore) -> None:
    session = new_session(store)
    store.append_entries(session.id, [user("a" * 400), assistant("b" * 401), user("c" * 3)])
    assert store.context(session.id).tokens == (400 + 401 + 3) // 4


def test_r4_tokens_right_after_a_response_are_its_usage(store: SessionStore) -> None:
    session = new_session(store)
    store.append_entries(session.id, [user("a" * 1000), assistant("b" * 100, usage=Usage(input=300, output=25))])
    assert store.context(session.id).tokens == 325


def test_r4_tokens_drop_after_a_compaction(store: SessionStore) -> None:
    session = new_session(store)
    entries = store.append_entries(
        session.id,
        [
            user("u" * 40_000),
            assistant("a" * 400, usage=Usage(input=10_000, output=100)),
            user("k" * 80),
            assistant("b" * 40, usage=Usage(input=10_200, output=10)),
        ],
    )
    before = store.context(session.id).tokens
    assert before == 10_210
    store.append_entries(session.id, [compaction("s" * 200, entries[2].id)])
    after = store.context(session.id).tokens
    # What the next call re-reads now: the summary and the kept entries, nothing of the dropped 40 000 chars.
    assert after < before
    assert after <= (200 + 80 + 40) // 4 + 1
