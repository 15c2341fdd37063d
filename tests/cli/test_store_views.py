"""What the CLI shows of the store: history a fork keeps after a delete, previews of large bodies."""

from __future__ import annotations

import json

from anyy.domain.entries import EntryKind, NewEntry
from anyy.domain.sessions import NewSession
from tests.cli.conftest import MakeProfile, OpenStore, Run


def test_f3_search_still_finds_history_a_fork_keeps_after_delete(
    anyy: Run, make_profile: MakeProfile, open_store: OpenStore
) -> None:
    profile = make_profile()
    with open_store(profile) as store:
        original = store.create_session(NewSession(title="original")).id
        store.append_entries(original, [NewEntry(kind=EntryKind.USER, text="oolong question")])
        fork = store.fork_session(original).id
        store.append_entries(fork, [NewEntry(kind=EntryKind.USER, text="matcha follow-up")])
        store.delete_session(original)
        while store.maintain().more:
            pass
        assert [entry.text for entry in store.path(fork)] == ["oolong question", "matcha follow-up"]

    hits = json.loads(anyy("sessions", "search", "oolong", "--json").stdout)

    assert hits, "the fork's conversation still holds 'oolong question' but search finds nothing"


def test_t1_tree_previews_a_long_message(anyy: Run, make_profile: MakeProfile, open_store: OpenStore) -> None:
    profile = make_profile()
    body = "pasted log " + "x" * 70_000
    with open_store(profile) as store:
        sid = store.create_session(NewSession()).id
        (entry,) = store.append_entries(sid, [NewEntry(kind=EntryKind.USER, text=body)])
        assert entry.object is not None  # the body went to objects/

    (line,) = anyy("sessions", "tree", sid).stdout.splitlines()

    assert "user: pasted log xxx" in line
