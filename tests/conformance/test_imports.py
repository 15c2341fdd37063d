"""An imported session written through the store protocol, the same on every backend (I2, I3)."""

from __future__ import annotations

import json

from anyy.domain.entries import EntryKind
from anyy.domain.imports import pi
from anyy.storage.imports import write_import
from anyy.storage.protocol import SessionStore
from anyy.storage.reads import whole_tree


def _pi_file(extra: list[dict[str, object]] | None = None) -> list[str]:
    records: list[dict[str, object]] = [
        {"type": "session", "version": 3, "id": "S1", "timestamp": "2026-12-07T05:00:00Z", "cwd": "/srv/project"},
        {
            "type": "message",
            "id": "u1",
            "parentId": None,
            "timestamp": "2026-12-07T05:00:01Z",
            "message": {"role": "user", "content": [{"type": "text", "text": "list files"}]},
        },
        {
            "type": "message",
            "id": "a1",
            "parentId": "u1",
            "timestamp": "2026-12-07T05:00:02Z",
            "message": {
                "role": "assistant",
                "model": "m1",
                "provider": "p",
                "content": [
                    {"type": "text", "text": "looking"},
                    {"type": "toolCall", "id": "c1", "name": "bash", "arguments": {"command": "ls"}},
                ],
            },
        },
        {
            "type": "message",
            "id": "r1",
            "parentId": "a1",
            "timestamp": "2026-12-07T05:00:03Z",
            "message": {
                "role": "toolResult",
                "toolCallId": "c1",
                "toolName": "bash",
                "content": [{"type": "text", "text": "a.txt"}],
            },
        },
        {
            "type": "message",
            "id": "a2",
            "parentId": "r1",
            "timestamp": "2026-12-07T05:00:04Z",
            "message": {"role": "assistant", "model": "m2", "content": [{"type": "text", "text": "one file"}]},
        },
        {"type": "message", "id": "u2", "parentId": "a2", "message": {"role": "user", "content": "and hidden ones?"}},
        {"type": "message", "id": "u3", "parentId": "a2", "message": {"role": "user", "content": "count them"}},
    ]
    return [json.dumps(r) for r in records + (extra or [])]


def test_i2_i3_import_writes_the_tree_once_on_every_backend(store: SessionStore) -> None:
    first = write_import(store, pi.parse(_pi_file(), "s.jsonl"))
    assert first.created
    assert first.added == 7
    session = first.session
    assert session.origin is not None
    assert session.origin.kind == "import"
    assert session.origin.source == "pi:S1"
    assert session.workspace == "/srv/project"
    entries = whole_tree(store, session.id)
    kinds = [e.kind for e in entries]
    assert kinds.count(EntryKind.TOOL_CALL) == kinds.count(EntryKind.TOOL_RESULT) == 1
    branch_point = next(e for e in entries if e.text == "one file")
    assert sorted(e.text for e in entries if e.parent == branch_point.id) == ["and hidden ones?", "count them"]
    assert [e.data.get("model") for e in entries if e.kind == EntryKind.ASSISTANT] == ["m1", "m2"]
    # the source's times are kept (2026-12-07T05:00:01Z is 1796619601)
    assert [e.created_at for e in entries[:4]] == [1796619601.0, 1796619602.0, 1796619602.0, 1796619603.0]
    assert store.get_entry(session.id, session.head or 0).text == "count them"  # the source's last record

    again = write_import(store, pi.parse(_pi_file(), "s.jsonl"))
    assert (again.created, again.added, again.session.id) == (False, 0, session.id)
    assert len(whole_tree(store, session.id)) == 7

    grown = _pi_file(
        [{"type": "message", "id": "a3", "parentId": "u3", "message": {"role": "assistant", "content": "2"}}]
    )
    more = write_import(store, pi.parse(grown, "s.jsonl"))
    assert more.added == 1
    after = whole_tree(store, session.id)
    assert len(after) == 8
    assert store.get_entry(session.id, more.session.head or 0).text == "2"


def test_i3_reimport_leaves_the_persons_own_turns_and_place(store: SessionStore) -> None:
    from anyy.domain.entries import NewEntry

    done = write_import(store, pi.parse(_pi_file(), "s.jsonl"))
    mine = store.append_entries(done.session.id, [NewEntry(kind=EntryKind.USER, text="my own turn")])
    grown = _pi_file(
        [{"type": "message", "id": "a3", "parentId": "u3", "message": {"role": "assistant", "content": "2"}}]
    )
    more = write_import(store, pi.parse(grown, "s.jsonl"))
    assert more.added == 1
    assert more.session.head == mine[0].id  # the person's place, untouched
    assert any(e.text == "my own turn" for e in whole_tree(store, done.session.id))


def test_i2_an_entry_keeps_a_given_time_and_refuses_an_absurd_one(store: SessionStore) -> None:
    import pytest

    from anyy.domain.entries import NewEntry
    from anyy.domain.errors import InvalidInput
    from anyy.domain.sessions import NewSession

    session = store.create_session(NewSession())
    [kept] = store.append_entries(session.id, [NewEntry(kind=EntryKind.USER, text="then", created_at=1500000000.5)])
    assert kept.created_at == 1500000000.5
    assert store.get_entry(session.id, kept.id).created_at == 1500000000.5
    for absurd in (float("nan"), float("inf"), -1.0):
        with pytest.raises(InvalidInput, match="seconds since the epoch"):
            store.append_entries(session.id, [NewEntry(kind=EntryKind.USER, text="x", created_at=absurd)])
    assert len(store.path(session.id)) == 1


def test_i3_reimport_waits_while_the_session_works(store: SessionStore) -> None:
    import pytest

    from anyy.domain.errors import Conflict
    from anyy.domain.queue import NewSubmission

    done = write_import(store, pi.parse(_pi_file(), "s.jsonl"))
    submission = store.add_submission(done.session.id, NewSubmission(text="go on"))
    store.start_execution(done.session.id, [submission.id])
    grown = _pi_file(
        [{"type": "message", "id": "a3", "parentId": "u3", "message": {"role": "assistant", "content": "2"}}]
    )
    with pytest.raises(Conflict, match="is working now; import again once it is idle"):
        write_import(store, pi.parse(grown, "s.jsonl"))
    assert len(whole_tree(store, done.session.id)) == 7  # nothing written, the head not moved
    assert store.get_session(done.session.id).head == done.session.head
    assert write_import(store, pi.parse(_pi_file(), "s.jsonl")).added == 0  # nothing new: no conflict
