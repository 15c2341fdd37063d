"""D4: the text a running pass streams is kept in pieces; a crash turns it into an interrupted answer, with
a notice saying what was kept; recording the pass or ending the execution drops it; the model is told."""

from __future__ import annotations

import pytest

from anyy.domain.entries import EntryKind
from anyy.domain.errors import Conflict
from anyy.domain.model_io import INTERRUPTED_NOTE, AssistantMessage, context_to_messages
from anyy.storage.protocol import SessionStore
from anyy.storage.rules import INTERRUPTED_CALL
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


# -- D3: tool calls of the running pass ------------------------------------------------------------------
def test_d3_recorded_tool_calls_are_recovered_with_their_output(store: SessionStore, reopen: Reopen) -> None:
    session_id, execution_id = _running(store)
    store.save_stream_text(execution_id, "Let me look.", provider="p", model="m", first=True)
    store.record_tool_call(execution_id, "c1", name="read_file", arguments={"path": "a.txt"})
    store.save_tool_output(execution_id, "c1", "the file's text", result=True)
    store.record_tool_call(execution_id, "c2", name="shell", arguments={"command": "make"})
    store.record_tool_call(execution_id, "c2", name="shell", arguments={"command": "make"}, pid=4242, started=99)
    store.save_tool_output(execution_id, "c2", "compiling a\n")
    store.save_tool_output(execution_id, "c2", "compiling b\n")
    store = reopen(store)
    (left,) = store.leftover_tools()  # the finished call has no process left to end
    assert (left.execution_id, left.call_id, left.pid, left.started) == (execution_id, "c2", 4242, 99)
    (recovered,) = store.recover_interrupted(NOTE)
    assert "Tool calls stopped and recorded as interrupted, with what they printed: shell." in (recovered.note or "")
    answer, call1, call2, result1, result2, notice = store.path(session_id)[-6:]
    assert (answer.kind, answer.text) == (EntryKind.ASSISTANT, "Let me look.")
    assert [(c.kind, c.data["call_id"], c.data["name"]) for c in (call1, call2)] == [
        (EntryKind.TOOL_CALL, "c1", "read_file"),
        (EntryKind.TOOL_CALL, "c2", "shell"),
    ]
    assert call2.data["arguments"] == {"command": "make"}
    assert (result1.text, result1.data.get("is_error", False)) == ("the file's text", False)
    assert result2.data["is_error"] is True
    assert result2.text.startswith("Interrupted: the Gateway stopped while this call ran")
    assert result2.text.endswith("compiling a\ncompiling b\n")
    assert notice.kind == EntryKind.NOTICE
    assert store.leftover_tools() == []
    messages = context_to_messages(store.context(session_id))  # every call has its result: a valid context
    assert isinstance(messages[-3], AssistantMessage)
    assert [call.call_id for call in messages[-3].tool_calls] == ["c1", "c2"]


def test_d3_a_recorded_pass_drops_its_tool_calls(store: SessionStore) -> None:
    _session_id, execution_id = _running(store)
    store.record_tool_call(execution_id, "c1", name="shell", arguments={}, pid=4242, started=99)
    store.record_pass(execution_id, [assistant("done")])
    assert store.leftover_tools() == []
    (recovered,) = store.recover_interrupted(NOTE)
    assert "Tool calls" not in (recovered.note or "")


# -- D4: the thinking streamed before (or beside) the answer ---------------------------------------------
def test_d4_kept_thinking_is_recovered_as_thinking_beside_the_answer(store: SessionStore, reopen: Reopen) -> None:
    session_id, execution_id = _running(store)
    store.save_stream_text(execution_id, "", provider="p", model="m", first=True, thinking="Let me see: ")
    store.save_stream_text(execution_id, "Once ", provider="p", model="m", thinking="two and two.")
    store.save_stream_text(execution_id, "upon", provider="p", model="m2")
    store = reopen(store)  # killed
    (recovered,) = store.recover_interrupted(NOTE)
    assert recovered.note == (
        f"{NOTE} Kept: the first 24 characters of its thinking and the first 9 characters of its answer, as "
        "saved while it streamed (marked interrupted); anything streamed after the last save was lost."
    )
    *_, asked, answer, notice = store.path(session_id)
    assert asked.text == "tell me"
    assert (answer.kind, answer.text) == (EntryKind.ASSISTANT, "Once upon")
    assert answer.data["thinking"] == "Let me see: two and two."
    assert (answer.data["interrupted"], answer.data["model"]) == (True, "m2")
    assert (notice.kind, notice.text) == (EntryKind.NOTICE, recovered.note)
    last = context_to_messages(store.context(session_id))[-1]  # the thinking is not sent back as answer text
    assert isinstance(last, AssistantMessage)
    assert last.text == "Once upon" + INTERRUPTED_NOTE


def test_d4_thinking_alone_is_kept_and_said_so(store: SessionStore) -> None:
    session_id, execution_id = _running(store)
    store.save_stream_text(execution_id, "", provider="p", model="m", first=True, thinking="Hmm, a first try.")
    store.save_stream_text(execution_id, "", provider="p", model="m", first=True, thinking="Hmm.")  # a retry
    (recovered,) = store.recover_interrupted(NOTE)
    assert "Kept: the first 4 characters of its thinking and no text of its answer yet" in (recovered.note or "")
    answer = store.path(session_id)[-2]
    assert (answer.kind, answer.text, answer.data["thinking"]) == (EntryKind.ASSISTANT, "", "Hmm.")
    assert answer.data["interrupted"] is True
    last = context_to_messages(store.context(session_id))[-1]
    assert isinstance(last, AssistantMessage)
    assert last.text == INTERRUPTED_NOTE  # the model is told it was cut short, with no answer yet


def test_d4_a_recorded_pass_drops_kept_thinking_too(store: SessionStore) -> None:
    _session_id, execution_id = _running(store)
    store.save_stream_text(execution_id, "all", provider="p", model="m", first=True, thinking="thought")
    store.record_pass(execution_id, [assistant("all")])
    (recovered,) = store.recover_interrupted(NOTE)
    assert "No text of its answer had been saved yet." in (recovered.note or "")


def test_d3_a_scripts_inner_calls_are_recorded_and_recovered_inside_its_result(
    store: SessionStore, reopen: Reopen
) -> None:
    session_id, execution_id = _running(store)
    store.record_tool_call(execution_id, "c1", name="run_script", arguments={"script": "s"}, pid=4242, started=99)
    store.save_tool_output(execution_id, "c1", "reading\n")
    store.record_tool_call(execution_id, "c1.1", name="read_file", arguments={"path": "a.txt"}, parent="c1")
    store.save_tool_output(execution_id, "c1.1", "the file's text", result=True)
    store.record_tool_call(execution_id, "c1.2", name="shell", arguments={"command": "make"}, parent="c1")
    store.record_tool_call(execution_id, "c1.2", name="shell", arguments={}, pid=4343, started=77, parent="c1")
    store.save_tool_output(execution_id, "c1.2", "compiling\n")
    store = reopen(store)
    assert [(t.call_id, t.pid) for t in store.leftover_tools()] == [("c1", 4242), ("c1.2", 4343)]
    (recovered,) = store.recover_interrupted(NOTE)
    said = "Tool calls stopped and recorded as interrupted, with what they printed: run_script, shell (in run_script)."
    assert said in (recovered.note or "")
    asked, call, result, notice = store.path(session_id)[-4:]  # one call of the model's: the script
    assert (asked.text, call.kind, call.data["call_id"]) == ("tell me", EntryKind.TOOL_CALL, "c1")
    assert notice.kind == EntryKind.NOTICE
    assert (result.kind, result.data["call_id"], result.data["is_error"]) == (EntryKind.TOOL_RESULT, "c1", True)
    assert result.text.endswith("reading\n")
    read, shell = result.data["inner_calls"]
    assert read == {"name": "read_file", "arguments": {"path": "a.txt"}, "result": "the file's text"}
    assert (shell["name"], shell["arguments"], shell["is_error"]) == ("shell", {"command": "make"}, True)
    assert shell["result"].startswith(INTERRUPTED_CALL)
    assert shell["result"].endswith("compiling\n")
    messages = context_to_messages(store.context(session_id))  # the model sees only the call it made
    assert isinstance(messages[-2], AssistantMessage)
    assert [c.call_id for c in messages[-2].tool_calls] == ["c1"]
