"""The read side over the protocol (``anyy.storage.reads``) gives the same views on every backend: the
whole tree in the tree's order, the export, the question a suspended execution waits on."""

from __future__ import annotations

import json

from anyy.domain.entries import EntryKind, NewEntry, Usage
from anyy.domain.sessions import NewSession
from anyy.storage import reads
from anyy.storage.protocol import SessionStore
from tests.conformance.support import assistant, chat, ids, submit, user


def test_a2_whole_tree_lists_every_branch_whole_parents_first(store: SessionStore) -> None:
    session, (hello, hi) = chat(store, ["hello", "hi"])
    (a1,) = store.append_entries(session.id, [user("branch a")])
    store.set_head(session.id, hi.id)
    (b1,) = store.append_entries(session.id, [user("branch b")])
    store.set_head(session.id, a1.id)
    (a2,) = store.append_entries(session.id, [assistant("more of a")])  # newer than b1, yet before it
    assert ids(reads.whole_tree(store, session.id)) == [hello.id, hi.id, a1.id, a2.id, b1.id]
    fork = store.fork_session(session.id, hi.id)
    (f1,) = store.append_entries(fork.id, [user("the fork's own")])
    assert ids(reads.whole_tree(store, fork.id)) == [hello.id, hi.id, f1.id]


def test_a2_export_jsonl_is_the_session_then_its_whole_tree(store: SessionStore) -> None:
    session, entries = chat(store, ["hello", "hi"])
    lines = [json.loads(line) for line in reads.export_text(store, session.id, "jsonl").splitlines()]
    assert lines[0]["type"] == "session"
    assert lines[0]["session"]["id"] == session.id
    assert [line["entry"]["id"] for line in lines[1:]] == ids(entries)
    assert [line["entry"]["kind"] for line in lines[1:]] == ["user", "assistant"]
    markdown = reads.export_text(store, session.id, "markdown")
    assert "## User\n\nhello\n\n## Assistant\n\nhi\n" in markdown


def test_a2_recent_state_names_the_waiting_question_and_the_last_context_size(store: SessionStore) -> None:
    session, _ = chat(store, ["hello"])
    assert reads.recent_state(store, session.id) == reads.RecentState(None, None)
    execution = store.start_execution(session.id, [submit(store, session.id, "ask me")], record_inputs=True)
    store.record_pass(
        execution.id,
        [
            NewEntry(kind=EntryKind.ASSISTANT, text="", data={"usage": {"input": 100, "cache_read": 20}}),
            NewEntry(kind=EntryKind.QUESTION, text="which colour?"),
        ],
    )
    store.set_execution_state(execution.id, "suspended")
    question = store.path(session.id)[-1]
    assert reads.recent_state(store, session.id) == reads.RecentState(
        reads.WaitingQuestion(execution.id, question.id, "which colour?"), 120
    )
    store.set_execution_state(execution.id, "completed")
    assert reads.recent_state(store, session.id).waiting is None
    assert Usage(input=100, cache_read=20).context_tokens == 120


def test_u1_lists_preview_each_sessions_last_message_on_its_path(store: SessionStore) -> None:
    talk, _ = chat(store, ["hello", "hi there"])
    store.append_entries(talk.id, [NewEntry(kind=EntryKind.NOTICE, text="a notice is passed over")])
    long, _ = chat(store, ["word " * 100])
    empty = store.create_session(NewSession(title="nothing yet"))
    branched, (first, _) = chat(store, ["first question", "first answer"])
    store.append_entries(branched.id, [user("second question")])
    store.set_head(branched.id, first.id)  # back on the first question: the newer message is off the path
    page = reads.with_previews(store, store.list_sessions(limit=10))
    previews = {found.id: found.preview for found in page.items}
    assert previews[talk.id] == "hi there"
    assert previews[long.id].endswith("…")
    assert len(previews[long.id]) <= 100
    assert previews[empty.id] == ""
    assert previews[branched.id] == "first question"
    assert page.next_cursor is None
