"""D4: the text a running pass streams is kept in pieces; a crash turns it into an interrupted answer, with
a notice saying what was kept; recording the pass or ending the execution drops it; the model is told."""

from __future__ import annotations

import pytest

from anyy.domain.entries import EntryKind
from anyy.domain.errors import Conflict
from anyy.domain.model_io import INTERRUPTED_NOTE, AssistantMessage, context_to_messages
from anyy.storage.protocol import SessionStore
from tests.conformance.conftest import Reopen
from tests.conformance.support import assistant, chat, submit

NOTE = "The gateway restarted; the running response was interrupted."


def _running(store: SessionStore) -> tuple[str, str]:
    session, _ = chat(store, ["hello", "hi"])
    execution = store.start_execution(session.id, [submit(store, session.id, "tell me")], record_inputs=True)
    return session.id, execution.id


def test_d4_kept_pieces_become_an_interrupted_answer_after_a_crash(store: SessionStore, reopen: Reopen) -> None:
    session_id, execution_id = _running(store)
    store.save_stream_text(execution_id, "Once upon ", provider="p", model="m", first=True)
    store.save_stream_text(execution_id, "a time, ", provider="p", model="m")
    store.save_stream_text(execution_id, "there was", provider="p", model="m")
    store = reopen(store)  # killed
    (recovered,) = store.recover_interrupted(NOTE)
    assert recovered.id == execution_id
    assert recovered.note is not None
    assert recovered.note.startswith(NOTE)
    assert "Kept: the first 27 characters of its answer" in recovered.note
    *_, asked, answer, notice = store.path(session_id)
    assert asked.text == "tell me"
    assert (answer.kind, answer.text) == (EntryKind.ASSISTANT, "Once upon a time, there was")
    assert (answer.data["interrupted"], answer.data["provider"], answer.data["model"]) == (True, "p", "m")
    assert (notice.kind, notice.text) == (EntryKind.NOTICE, recovered.note)
    # The next model call sees the answer, marked as cut short.
    messages = context_to_messages(store.context(session_id))
    last = messages[-1]
    assert isinstance(last, AssistantMessage)
    assert last.text == "Once upon a time, there was" + INTERRUPTED_NOTE
    assert store.recover_interrupted(NOTE) == []  # kept once, then gone


def test_d4_nothing_kept_is_said_too(store: SessionStore) -> None:
    session_id, _ = _running(store)
    (recovered,) = store.recover_interrupted(NOTE)
    assert recovered.note == f"{NOTE} No text of its answer had been saved yet."
    assert store.path(session_id)[-1].kind == EntryKind.NOTICE
    assert store.path(session_id)[-2].kind == EntryKind.USER


def test_d4_a_recorded_pass_drops_what_was_kept(store: SessionStore) -> None:
    session_id, execution_id = _running(store)
    store.save_stream_text(execution_id, "the whole answer", provider="p", model="m", first=True)
    store.record_pass(execution_id, [assistant("the whole answer")])
    (recovered,) = store.recover_interrupted(NOTE)
    assert "No text of its answer had been saved yet." in (recovered.note or "")
    assert store.path(session_id)[-2].text == "the whole answer"


def test_d4_a_retried_call_starts_afresh_and_an_ended_execution_keeps_nothing(store: SessionStore) -> None:
    session_id, execution_id = _running(store)
    store.save_stream_text(execution_id, "first try, cut", provider="p", model="m", first=True)
    store.save_stream_text(execution_id, "second ", provider="p", model="m", first=True)
    store.save_stream_text(execution_id, "try", provider="p", model="m")
    (recovered,) = store.recover_interrupted(NOTE)
    assert store.path(session_id)[-2].text == "second try"
    with pytest.raises(Conflict):
        store.save_stream_text(recovered.id, "too late", provider="p", model="m")
    other_session, other = _running(store)
    store.save_stream_text(other, "said", provider="p", model="m", first=True)
    store.set_execution_state(other, "failed", error="the model went away")
    assert store.recover_interrupted(NOTE) == []
    assert store.path(other_session)[-1].kind == EntryKind.USER
