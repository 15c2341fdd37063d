"""Full-text search over messages (DESIGN §3), serving /sessions (B2) and the Dashboard lists (B1)."""

from __future__ import annotations

import contextlib

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from anyy.domain.entries import EntryKind, NewEntry
from anyy.domain.errors import InvalidInput, NotFound
from anyy.domain.sessions import SessionKind
from anyy.storage.protocol import SessionStore
from tests.conformance.support import BIG, assistant, drain, new_session, tool_call, tool_result, user


def _hits(
    store: SessionStore, query: str, *, kind: SessionKind | None = None, session_id: str | None = None
) -> set[tuple[str, int]]:
    return {(hit.session_id, hit.entry_id) for hit in store.search(query, kind=kind, session_id=session_id, limit=100)}


def test_b1_search_finds_words_in_user_and_assistant_text(store: SessionStore) -> None:
    session = new_session(store, "zoo trip")
    entries = store.append_entries(
        session.id,
        [
            user("Where do the capybaras sleep?"),
            assistant("Capybaras sleep near water."),
            tool_call("c1", "shell", {"q": "capybara"}),
            tool_result("c1", "nothing about rodents"),
            NewEntry(kind=EntryKind.NOTICE, text="rodents notice"),
        ],
    )
    hits = store.search("capybaras")
    assert {(h.session_id, h.entry_id, h.kind) for h in hits} == {
        (session.id, entries[0].id, "user"),
        (session.id, entries[1].id, "assistant"),
    }
    assert all(h.session_title == "zoo trip" and h.session_kind == "chat" for h in hits)
    assert any("apybara" in h.snippet for h in hits)
    assert _hits(store, "sleep water") == {(session.id, entries[1].id)}  # every word must match
    assert _hits(store, '"sleep near"') == {(session.id, entries[1].id)}
    assert _hits(store, "capy*") == {(session.id, entries[0].id), (session.id, entries[1].id)}
    assert _hits(store, "CAPYBARAS") == _hits(store, "capybaras")


def test_b1_search_folds_accents_both_ways(store: SessionStore) -> None:
    session = new_session(store)
    entries = store.append_entries(
        session.id, [user("Un café à São Paulo, déjà vu"), assistant("the cafe near the Łódź station")]
    )
    first, second = entries[0].id, entries[1].id
    assert _hits(store, "cafe") == {(session.id, first), (session.id, second)}
    assert _hits(store, "CAFÉ") == _hits(store, "cafe")
    assert _hits(store, "sao paulo deja") == {(session.id, first)}
    assert _hits(store, '"sao paulo"') == {(session.id, first)}
    assert _hits(store, "łodz") == {(session.id, second)}  # ł has no decomposition: it stays a letter of its own
    assert _hits(store, "dej*") == {(session.id, first)}


def _snippets(store: SessionStore, query: str) -> dict[int, str]:
    return {hit.entry_id: hit.snippet for hit in store.search(query, limit=100)}


def test_b1_snippets_mark_words_matched_through_accent_folding(store: SessionStore) -> None:
    session = new_session(store)
    entries = store.append_entries(
        session.id,
        [
            user("Un café à São Paulo, déjà vu"),
            assistant("the cafe near the Łódź station"),
            user("Crème brûlée " + "filler " * (BIG // 7)),  # a body stored apart from its row
        ],
    )
    first, second, large = (entry.id for entry in entries)
    assert _snippets(store, "cafe") == {
        first: "Un [café] à São Paulo, déjà vu",
        second: "the [cafe] near the Łódź station",
    }
    assert "[cafe]" in _snippets(store, "CAFÉ")[second]
    assert "[São Paulo]" in _snippets(store, '"sao paulo"')[first]
    assert "[déjà]" in _snippets(store, "dej*")[first]
    assert _snippets(store, "creme brulee")[large].startswith("[Crème] [brûlée] filler")


def test_b1_search_sees_what_was_just_appended(store: SessionStore) -> None:
    session = new_session(store)
    (entry,) = store.append_entries(session.id, [user("fresh axolotl")])
    assert _hits(store, "axolotl") == {(session.id, entry.id)}
    drain(store)
    assert _hits(store, "axolotl") == {(session.id, entry.id)}


def test_b1_search_scoped_by_kind_and_session(store: SessionStore) -> None:
    first = new_session(store)
    second = new_session(store)
    job = new_session(store, kind="background")
    (a,) = store.append_entries(first.id, [user("pangolin one")])
    (b,) = store.append_entries(second.id, [user("pangolin two")])
    (c,) = store.append_entries(job.id, [assistant("pangolin report")])
    assert _hits(store, "pangolin") == {(first.id, a.id), (second.id, b.id), (job.id, c.id)}
    assert _hits(store, "pangolin", kind="chat") == {(first.id, a.id), (second.id, b.id)}
    assert _hits(store, "pangolin", kind="background") == {(job.id, c.id)}
    assert _hits(store, "pangolin", session_id=second.id) == {(second.id, b.id)}
    assert _hits(store, "pangolin", kind="chat", session_id=job.id) == set()
    with pytest.raises(NotFound):
        store.search("pangolin", session_id="ses_doesnotexist")


def test_b1_search_ignores_deleted_sessions(store: SessionStore) -> None:
    gone = new_session(store)
    kept = new_session(store)
    store.append_entries(gone.id, [user("narwhal gone")])
    (k,) = store.append_entries(kept.id, [user("narwhal kept")])
    drain(store)
    store.delete_session(gone.id)
    assert _hits(store, "narwhal") == {(kept.id, k.id)}
    drain(store)
    assert _hits(store, "narwhal") == {(kept.id, k.id)}
    # A deleted session whose entries a fork still reaches is not found either.
    original = new_session(store)
    store.append_entries(original.id, [user("narwhal shared")])
    store.fork_session(original.id)
    store.delete_session(original.id)
    drain(store)
    assert all(hit.session_id != original.id for hit in store.search("narwhal"))


@pytest.mark.parametrize("query", ["", "   ", "\t\n"])
def test_b1_empty_query_is_invalid_input(store: SessionStore, query: str) -> None:
    with pytest.raises(InvalidInput):
        store.search(query)


QUERIES = [
    "AND",
    "OR NOT",
    "foo AND",
    "NOT x",
    "NEAR(a b)",
    "a:b",
    "text:narwhal",
    '"unbalanced',
    'x"y',
    "(",
    "a OR (b",
    "^start",
    "-minus +plus",
    "*",
    "**",
    "_*",
    "{a b}",
    "'; DROP TABLE entries; --",
    "é*",
    "\u0301",
    "\U0001d7d9",  # a mathematical digit one
    "\x00",
    "'",
    "100%",
    "c++",
]


@pytest.mark.parametrize("query", QUERIES)
def test_b1_operators_and_punctuation_never_raise_a_syntax_error(store: SessionStore, query: str) -> None:
    session = new_session(store)
    store.append_entries(session.id, [user("AND OR NOT NEAR text narwhal c++ 100% start")])
    with contextlib.suppress(InvalidInput):  # nothing searchable in it: told so plainly
        store.search(query)


@settings(
    max_examples=200,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(query=st.text(max_size=30))
@example(query='"" *')
@example(query="a*b*")
def test_b1_any_query_is_a_result_or_invalid_input(store: SessionStore, query: str) -> None:
    if not store.list_sessions(limit=1).items:  # the first example: something for the query to run over
        session = new_session(store)
        store.append_entries(session.id, [user('some words to find, with punctuation: (a) [b] {c} "d"')])
    try:
        hits = store.search(query)
    except InvalidInput:
        return
    assert isinstance(hits, list)


def test_b1_search_finds_words_in_a_large_message(store: SessionStore) -> None:
    session = new_session(store)
    (entry,) = store.append_entries(session.id, [user("okapi " + "long paste " * (BIG // 10))])
    assert _hits(store, "okapi") == {(session.id, entry.id)}


def test_b1_search_scoped_to_a_fork_finds_its_inherited_history(store: SessionStore) -> None:
    original = new_session(store)
    (inherited,) = store.append_entries(original.id, [user("tapir history")])
    fork = store.fork_session(original.id)
    store.append_entries(fork.id, [user("tapir follow-up")])
    assert any(hit.entry_id == inherited.id for hit in store.search("tapir", session_id=fork.id))
    store.delete_session(original.id)
    drain(store)
    assert any(hit.entry_id == inherited.id for hit in store.search("tapir"))
