"""Q3, Q6, C5, G3: submissions are durable queue items with their own outcome; executions take them."""

from __future__ import annotations

import pytest

from anyy.domain.entries import Attachment, EntryKind, NewEntry
from anyy.domain.errors import Conflict, InvalidInput, NotFound
from anyy.domain.queue import NewSubmission, SubmissionKind
from anyy.domain.sessions import NewSession, Origin
from anyy.storage.protocol import SessionStore
from tests.conformance.conftest import Reopen
from tests.conformance.support import assistant, chat, new_session, submit, texts, tool_call, tool_result, user

ALL_STATES = (
    "pending",
    "taken",
    "suspended",
    "completed",
    "failed",
    "interrupted",
    "timed_out",
    "cancelled",
    "cleared",
)


def _attachment(store: SessionStore, data: bytes = b"file bytes") -> Attachment:
    ref = store.put_object(data, media_type="text/plain")
    return Attachment(object=ref.hash, name="notes.txt", media_type="text/plain", size=ref.size)


# -- adding and listing ------------------------------------------------------------------------------


def test_g3_added_submission_is_durable(store: SessionStore, reopen: Reopen) -> None:
    session = new_session(store)
    att = _attachment(store)
    sub = store.add_submission(session.id, NewSubmission(kind="follow_up", text="later, please", attachments=[att]))
    assert (sub.state, sub.kind, sub.text, sub.attachments) == ("pending", "follow_up", "later, please", [att])
    assert sub.session_id == session.id
    assert sub.execution_id is None
    store = reopen(store)
    assert store.get_submission(sub.id) == sub
    assert store.list_submissions(session.id) == [sub]


def test_q4_positions_follow_the_order_of_arrival(store: SessionStore) -> None:
    session = new_session(store)
    subs = [store.add_submission(session.id, NewSubmission(text=f"t{i}")) for i in range(4)]
    positions = [s.position for s in subs]
    assert positions == sorted(positions)
    assert len(set(positions)) == 4
    other = new_session(store)
    submit(store, other.id, "another session's queue is separate")
    assert [s.id for s in store.list_submissions(session.id)] == [s.id for s in subs]


def test_q4_list_shows_steering_first_then_the_rest_in_queue_order(store: SessionStore) -> None:
    session = new_session(store)
    order: list[SubmissionKind] = ["follow_up", "steering", "prompt", "steering", "follow_up"]
    made = [submit(store, session.id, f"{kind} {i}", kind) for i, kind in enumerate(order)]
    listed = [s.id for s in store.list_submissions(session.id)]
    assert listed == [made[1], made[3], made[0], made[2], made[4]]


def test_q6_list_filters_by_state(store: SessionStore) -> None:
    session = new_session(store)
    taken = submit(store, session.id, "taken")
    cancelled = submit(store, session.id, "cancelled")
    pending = submit(store, session.id, "pending")
    store.start_execution(session.id, [taken])
    store.cancel_submission(cancelled)
    assert [s.id for s in store.list_submissions(session.id)] == [pending]
    assert [s.id for s in store.list_submissions(session.id, states=("taken",))] == [taken]
    assert {s.id for s in store.list_submissions(session.id, states=ALL_STATES)} == {taken, cancelled, pending}


@pytest.mark.parametrize(
    "new",
    [
        pytest.param(NewSubmission(text=""), id="empty"),
        pytest.param(NewSubmission(text="  \n "), id="blank"),
        pytest.param(NewSubmission(kind="urgent", text="x"), id="unknown-kind"),  # type: ignore[arg-type]
    ],
)
def test_q6_invalid_submission_is_invalid_input(store: SessionStore, new: NewSubmission) -> None:
    session = new_session(store)
    with pytest.raises(InvalidInput):
        store.add_submission(session.id, new)
    assert store.list_submissions(session.id, states=ALL_STATES) == []


def test_q6_attachment_only_submission_is_accepted(store: SessionStore) -> None:
    session = new_session(store)
    sub = store.add_submission(session.id, NewSubmission(attachments=[_attachment(store)]))
    assert sub.text == ""
    assert len(sub.attachments) == 1


def test_g5_an_attachment_claiming_another_size_than_its_object_is_refused(store: SessionStore) -> None:
    session = new_session(store)
    obj = store.put_object(b"twelve bytes", media_type="text/plain")
    lying = Attachment(object=obj.hash, name="notes.txt", media_type="text/plain", size=1)
    with pytest.raises(InvalidInput, match="is 12 bytes, not the 1 the attachment claims"):
        store.add_submission(session.id, NewSubmission(text="see", attachments=[lying]))
    assert store.list_submissions(session.id, states=ALL_STATES) == []
    honest = Attachment(object=obj.hash, name="notes.txt", media_type="text/plain", size=12)
    unsized = Attachment(object=obj.hash, name="again.txt", media_type="text/plain")
    sent = store.add_submission(session.id, NewSubmission(text="see", attachments=[honest, unsized]))
    assert [a.size for a in sent.attachments] == [12, 0]
    with pytest.raises(InvalidInput):
        store.update_submission(sent.id, attachments=[lying])
    assert store.get_submission(sent.id).attachments == sent.attachments


def test_q6_unknown_submission_is_not_found(store: SessionStore) -> None:
    with pytest.raises(NotFound):
        store.get_submission("sub_doesnotexist")
    with pytest.raises(NotFound):
        store.update_submission("sub_doesnotexist", text="x")
    with pytest.raises(NotFound):
        store.cancel_submission("sub_doesnotexist")


# -- editing, steering, cancelling, clearing (Q2, Q3, Q6) ------------------------------------------------


def test_q2_update_changes_that_item_only_and_keeps_attachments(store: SessionStore, reopen: Reopen) -> None:
    session = new_session(store)
    att = _attachment(store)
    sub = store.add_submission(session.id, NewSubmission(kind="follow_up", text="draft", attachments=[att]))
    neighbour = store.add_submission(session.id, NewSubmission(kind="follow_up", text="neighbour"))
    edited = store.update_submission(sub.id, version=sub.version, text="revised")
    assert (edited.text, edited.attachments, edited.kind, edited.position) == (
        "revised",
        [att],
        "follow_up",
        sub.position,
    )
    assert edited.version != sub.version
    store = reopen(store)
    assert store.get_submission(sub.id) == edited
    assert store.get_submission(neighbour.id) == neighbour
    removed = store.update_submission(sub.id, version=edited.version, attachments=[])
    assert removed.attachments == []
    assert removed.text == "revised"


def test_q2_steer_moves_an_item_to_the_steering_queue(store: SessionStore) -> None:
    session = new_session(store)
    first = submit(store, session.id, "first", "follow_up")
    second = submit(store, session.id, "second", "follow_up")
    steered = store.update_submission(second, kind="steering")
    assert steered.kind == "steering"
    assert steered.text == "second"
    assert [s.id for s in store.list_submissions(session.id)] == [second, first]


def test_q3_stale_version_is_a_conflict(store: SessionStore) -> None:
    session = new_session(store)
    sub = store.add_submission(session.id, NewSubmission(text="v1"))
    store.update_submission(sub.id, version=sub.version, text="v2 from another client")
    with pytest.raises(Conflict):
        store.update_submission(sub.id, version=sub.version, text="v2 from me")
    with pytest.raises(Conflict):
        store.cancel_submission(sub.id, version=sub.version)
    with pytest.raises(Conflict):
        store.update_submission(sub.id, version=sub.version, kind="steering")
    got = store.get_submission(sub.id)
    assert (got.text, got.state, got.kind) == ("v2 from another client", "pending", "prompt")


def test_q3_update_to_nothing_is_invalid_input(store: SessionStore) -> None:
    session = new_session(store)
    sub = store.add_submission(session.id, NewSubmission(text="keep me"))
    with pytest.raises(InvalidInput):
        store.update_submission(sub.id, text="   ")
    with pytest.raises(InvalidInput):
        store.update_submission(sub.id, kind="urgent")  # type: ignore[arg-type]
    assert store.get_submission(sub.id) == sub


@pytest.mark.parametrize("state", ["taken", "suspended", "completed", "failed", "cancelled", "cleared"])
def test_q3_an_item_no_longer_pending_cannot_be_edited_steered_or_removed(store: SessionStore, state: str) -> None:
    session = new_session(store)
    sub = store.add_submission(session.id, NewSubmission(kind="follow_up", text="mine"))
    if state == "cancelled":
        store.cancel_submission(sub.id)
    elif state == "cleared":
        store.clear_queue(session.id)
    else:
        execution = store.start_execution(session.id, [sub.id])
        if state != "taken":
            store.set_execution_state(execution.id, state)  # type: ignore[arg-type]
    before = store.get_submission(sub.id)
    assert before.state == state
    for edit in (
        lambda: store.update_submission(sub.id, text="too late"),
        lambda: store.update_submission(sub.id, version=before.version, text="too late"),
        lambda: store.update_submission(sub.id, kind="steering"),
        lambda: store.update_submission(sub.id, attachments=[]),
        lambda: store.cancel_submission(sub.id),
        lambda: store.cancel_submission(sub.id, version=before.version),
    ):
        with pytest.raises(Conflict):
            edit()
    assert store.get_submission(sub.id) == before
    assert sub.id not in [s.id for s in store.clear_queue(session.id)]
    assert store.get_submission(sub.id) == before


def test_q6_cancel_keeps_the_body(store: SessionStore, reopen: Reopen) -> None:
    session = new_session(store)
    att = _attachment(store)
    sub = store.add_submission(session.id, NewSubmission(text="never mind", attachments=[att]))
    cancelled = store.cancel_submission(sub.id, version=sub.version)
    assert cancelled.state == "cancelled"
    store = reopen(store)
    got = store.get_submission(sub.id)
    assert (got.state, got.text, got.attachments) == ("cancelled", "never mind", [att])
    assert store.read_object(att.object) == b"file bytes"
    assert store.list_submissions(session.id) == []


def test_q6_clear_returns_what_it_removed_and_they_keep_their_bodies(store: SessionStore, reopen: Reopen) -> None:
    session = new_session(store)
    att = _attachment(store)
    running = submit(store, session.id, "running")
    store.start_execution(session.id, [running])
    steer = store.add_submission(session.id, NewSubmission(kind="steering", text="steer", attachments=[att]))
    follow = store.add_submission(session.id, NewSubmission(kind="follow_up", text="follow"))
    cleared = store.clear_queue(session.id)
    assert [(s.id, s.state, s.text) for s in cleared] == [
        (steer.id, "cleared", "steer"),
        (follow.id, "cleared", "follow"),
    ]
    assert cleared[0].attachments == [att]
    assert store.list_submissions(session.id) == []
    assert store.get_submission(running).state == "taken"
    store = reopen(store)
    assert store.get_submission(steer.id) == cleared[0]
    assert store.get_submission(follow.id).text == "follow"
    assert store.clear_queue(session.id) == []


def test_q6_clear_one_queue_leaves_the_other(store: SessionStore) -> None:
    session = new_session(store)
    steer = submit(store, session.id, "steer", "steering")
    follow = submit(store, session.id, "follow", "follow_up")
    assert [s.id for s in store.clear_queue(session.id, kind="steering")] == [steer]
    assert [s.id for s in store.list_submissions(session.id)] == [follow]


# -- executions ------------------------------------------------------------------------------------------


def test_c3_start_execution_takes_the_submissions(store: SessionStore, reopen: Reopen) -> None:
    session = new_session(store)
    a = submit(store, session.id, "a")
    b = submit(store, session.id, "b", "follow_up")
    execution = store.start_execution(session.id, [a])
    assert execution.state == "running"
    assert execution.session_id == session.id
    assert execution.submission_ids == [a]
    assert execution.passes == 0
    store = reopen(store)
    got = store.get_submission(a)
    assert (got.state, got.execution_id) == ("taken", execution.id)
    assert store.get_submission(b).state == "pending"
    assert store.get_execution(execution.id) == execution
    assert store.list_executions(session.id, active_only=True) == [execution]


def test_c3_second_active_execution_on_a_session_is_a_conflict(store: SessionStore) -> None:
    session = new_session(store)
    first = store.start_execution(session.id, [submit(store, session.id, "a")])
    b = submit(store, session.id, "b")
    with pytest.raises(Conflict):
        store.start_execution(session.id, [b])
    assert store.get_submission(b).state == "pending"
    assert store.list_executions(session.id) == [first]
    # Another session is independent.
    other = new_session(store)
    store.start_execution(other.id, [submit(store, other.id, "c")])


def test_c3_start_with_a_submission_not_pending_is_a_conflict_and_starts_nothing(store: SessionStore) -> None:
    session = new_session(store)
    done = submit(store, session.id, "a")
    store.cancel_submission(done)
    fresh = submit(store, session.id, "b")
    with pytest.raises(Conflict):
        store.start_execution(session.id, [fresh, done])
    assert store.list_executions(session.id) == []
    assert store.get_submission(fresh).state == "pending"
    store.start_execution(session.id, [fresh])


def test_c3_start_with_another_session_s_submission_fails(store: SessionStore) -> None:
    session = new_session(store)
    other = new_session(store)
    theirs = submit(store, other.id, "theirs")
    with pytest.raises((InvalidInput, NotFound, Conflict)):
        store.start_execution(session.id, [theirs])
    assert store.get_submission(theirs).state == "pending"
    assert store.list_executions(session.id) == []


def test_q1_take_submissions_at_a_checkpoint(store: SessionStore) -> None:
    session = new_session(store)
    execution = store.start_execution(session.id, [submit(store, session.id, "go")])
    steer = submit(store, session.id, "steer", "steering")
    taken = store.take_submissions(execution.id, [steer])
    assert [(s.id, s.state, s.execution_id) for s in taken] == [(steer, "taken", execution.id)]
    assert steer in store.get_execution(execution.id).submission_ids
    with pytest.raises(Conflict):
        store.take_submissions(execution.id, [steer])  # already taken
    with pytest.raises(Conflict):
        store.update_submission(steer, text="too late")
    late = submit(store, session.id, "late")
    store.set_execution_state(execution.id, "completed")
    with pytest.raises(Conflict):
        store.take_submissions(execution.id, [late])  # the execution ended
    assert store.get_submission(late).state == "pending"


def test_g3_record_pass_appends_atomically_and_counts_passes(store: SessionStore, reopen: Reopen) -> None:
    session, before = chat(store, ["earlier"])
    sub = submit(store, session.id, "list the files")
    execution = store.start_execution(session.id, [sub])
    first = store.record_pass(
        execution.id,
        [user("list the files"), assistant("", model="m"), tool_call("c1", "shell", {"cmd": "ls"})],
        link_submissions=[sub],
    )
    assert first[0].parent == before[-1].id
    assert store.get_submission(sub).entry_id == first[0].id
    second = store.record_pass(execution.id, [tool_result("c1", "a.txt"), assistant("There is a.txt.")])
    assert store.get_execution(execution.id).passes == 2
    with pytest.raises(InvalidInput):
        store.record_pass(execution.id, [assistant("half"), NewEntry(kind=EntryKind.TOOL_CALL)])
    store = reopen(store)
    assert store.get_execution(execution.id).passes == 2
    assert store.path(session.id) == [*before, *first, *second]
    assert store.get_session(session.id).head == second[-1].id


def test_g3_record_pass_that_fails_writes_nothing(store: SessionStore) -> None:
    session, before = chat(store, ["earlier"])
    sub = submit(store, session.id, "go")
    execution = store.start_execution(session.id, [sub])
    with pytest.raises(InvalidInput):  # two submissions named, but the pass has no user entry for them
        store.record_pass(execution.id, [assistant("reply")], link_submissions=[sub, sub])
    assert store.path(session.id) == before
    assert store.get_execution(execution.id).passes == 0
    assert store.get_submission(sub).entry_id is None


def test_g3_record_pass_after_the_execution_ended_is_a_conflict(store: SessionStore) -> None:
    session = new_session(store)
    execution = store.start_execution(session.id, [submit(store, session.id, "go")])
    store.set_execution_state(execution.id, "interrupted")
    with pytest.raises(Conflict):
        store.record_pass(execution.id, [assistant("too late")])
    assert store.path(session.id) == []
    assert store.get_execution(execution.id).passes == 0


@pytest.mark.parametrize("final", ["completed", "failed", "interrupted", "timed_out"])
def test_c5_final_state_gives_each_submission_that_outcome(store: SessionStore, reopen: Reopen, final: str) -> None:
    session = new_session(store)
    a = submit(store, session.id, "a")
    execution = store.start_execution(session.id, [a])
    b = submit(store, session.id, "b", "steering")
    store.take_submissions(execution.id, [b])
    waiting = submit(store, session.id, "c", "follow_up")
    error = None if final == "completed" else f"it {final}"
    ended = store.set_execution_state(execution.id, final, error=error)  # type: ignore[arg-type]
    assert ended.state == final
    assert ended.ended_at is not None
    store = reopen(store)
    for sid in (a, b):
        got = store.get_submission(sid)
        assert got.state == final
        assert got.execution_id == execution.id
        if error:
            assert got.error == error
    assert store.get_submission(waiting).state == "pending"
    with pytest.raises(Conflict):
        store.set_execution_state(execution.id, "completed")
    assert store.get_execution(execution.id).state == final


def test_c5_later_success_never_overwrites_an_earlier_failure(store: SessionStore, reopen: Reopen) -> None:
    session = new_session(store)
    first = submit(store, session.id, "first")
    second = submit(store, session.id, "second", "follow_up")
    failing = store.start_execution(session.id, [first])
    store.set_execution_state(failing.id, "failed", error="the provider said 500")
    with pytest.raises(Conflict):
        store.set_execution_state(failing.id, "completed")
    with pytest.raises(Conflict):
        store.start_execution(session.id, [first])  # no longer pending: it can't be taken again
    succeeding = store.start_execution(session.id, [second])
    store.record_pass(succeeding.id, [assistant("fine now")])
    store.set_execution_state(succeeding.id, "completed")
    store = reopen(store)
    got = store.get_submission(first)
    assert (got.state, got.error, got.execution_id) == ("failed", "the provider said 500", failing.id)
    assert store.get_submission(second).state == "completed"
    assert store.get_execution(failing.id).state == "failed"
    assert store.get_execution(failing.id).error == "the provider said 500"


def test_c5_suspended_then_resumed_then_completed(store: SessionStore) -> None:
    session = new_session(store)
    sub = submit(store, session.id, "ask me")
    execution = store.start_execution(session.id, [sub])
    store.record_pass(execution.id, [NewEntry(kind=EntryKind.QUESTION, text="Which file?")])
    assert store.set_execution_state(execution.id, "suspended").state == "suspended"
    assert store.get_submission(sub).state == "suspended"
    with pytest.raises(Conflict):
        store.cancel_submission(sub)
    store.set_execution_state(execution.id, "running")
    assert store.get_submission(sub).state == "taken"
    store.set_execution_state(execution.id, "retry_wait")
    store.set_execution_state(execution.id, "running")
    store.set_execution_state(execution.id, "completed")
    assert store.get_submission(sub).state == "completed"
    assert store.list_executions(session.id, active_only=True) == []


def test_c5_unknown_execution_state_is_invalid_input(store: SessionStore) -> None:
    session = new_session(store)
    execution = store.start_execution(session.id, [submit(store, session.id, "go")])
    with pytest.raises(InvalidInput):
        store.set_execution_state(execution.id, "exploded")  # type: ignore[arg-type]
    assert store.get_execution(execution.id).state == "running"
    with pytest.raises(NotFound):
        store.get_execution("exe_doesnotexist")


# -- recovery after a crash (G3) -------------------------------------------------------------------------


def test_g3_recover_interrupted_marks_work_and_keeps_pending_items(store: SessionStore, reopen: Reopen) -> None:
    busy, earlier = chat(store, ["u1", "a1"])
    taken = submit(store, busy.id, "being answered")
    execution = store.start_execution(busy.id, [taken])
    passed = store.record_pass(execution.id, [assistant("half way"), tool_call("c1")])
    steer = submit(store, busy.id, "steer", "steering")
    follow = submit(store, busy.id, "follow", "follow_up")
    idle, idle_entries = chat(store, ["quiet"])
    done_session = new_session(store)
    done = store.start_execution(done_session.id, [submit(store, done_session.id, "finished")])
    store.set_execution_state(done.id, "completed")

    store = reopen(store)  # the gateway was killed and starts again
    recovered = store.recover_interrupted("The gateway restarted; the running response was interrupted.")
    assert [e.id for e in recovered] == [execution.id]
    got = store.get_execution(execution.id)
    assert got.state == "interrupted"
    assert got.note is not None
    assert got.note.startswith("The gateway restarted; the running response was interrupted. ")
    assert got.ended_at is not None
    assert got.passes == 1
    assert store.get_submission(taken).state == "interrupted"
    assert [s.id for s in store.list_submissions(busy.id)] == [steer, follow]
    path = store.path(busy.id)
    assert path[: len(earlier) + len(passed)] == [*earlier, *passed]
    (notice,) = path[len(earlier) + len(passed) :]
    assert notice.kind == EntryKind.NOTICE
    assert "interrupted" in notice.text
    assert store.path(idle.id) == idle_entries
    assert store.get_execution(done.id).state == "completed"
    assert store.list_executions(busy.id, active_only=True) == []
    assert store.recover_interrupted("again") == []  # nothing left to recover
    store.start_execution(busy.id, [steer])  # the session can work again


def test_g3_recovery_is_durable(store: SessionStore, reopen: Reopen) -> None:
    session = new_session(store)
    execution = store.start_execution(session.id, [submit(store, session.id, "go")])
    store = reopen(store)
    store.recover_interrupted("restarted")
    store = reopen(store)
    assert store.get_execution(execution.id).state == "interrupted"
    assert store.recover_interrupted("restarted") == []
    assert texts(store.path(session.id)) == ["restarted No text of its answer had been saved yet."]


def test_g3_recovery_keeps_an_execution_waiting_for_an_answer(store: SessionStore, reopen: Reopen) -> None:
    session = new_session(store)
    sub = submit(store, session.id, "ask me something first")
    execution = store.start_execution(session.id, [sub])
    store.set_execution_state(execution.id, "suspended")
    store = reopen(store)
    assert store.recover_interrupted("The gateway restarted.") == []
    assert store.get_execution(execution.id).state == "suspended"
    assert store.get_submission(sub).state == "suspended"
    # The answer, after the restart, still resumes it.
    assert store.set_execution_state(execution.id, "running").state == "running"
    assert store.get_submission(sub).state == "taken"


def test_q1_taken_inputs_are_recorded_as_user_entries_in_the_same_transaction(store: SessionStore) -> None:
    session = new_session(store)
    first = submit(store, session.id, "hello")
    execution = store.start_execution(session.id, [first], record_inputs=True)
    (entry,) = store.path(session.id)
    assert (entry.kind, entry.text) == (EntryKind.USER, "hello")
    assert store.get_submission(first).entry_id == entry.id
    steer = submit(store, session.id, "also this", kind="steering")
    store.take_submissions(execution.id, [steer], record_inputs=True)
    assert texts(store.path(session.id)) == ["hello", "also this"]
    assert store.get_submission(steer).entry_id == store.path(session.id)[-1].id


# -- idempotency keys (D8) -------------------------------------------------------------------------------


def test_d8_a_send_repeated_with_its_key_gets_the_first_submission_back(store: SessionStore, reopen: Reopen) -> None:
    session = new_session(store)
    other = new_session(store)
    first = store.add_submission(session.id, NewSubmission(text="only once", key="k-1"))
    store = reopen(store)
    again = store.add_submission(session.id, NewSubmission(text="only once", key="k-1"))
    assert again.id == first.id
    assert [s.id for s in store.list_submissions(session.id)] == [first.id]
    execution = store.start_execution(session.id, [first.id])
    store.set_execution_state(execution.id, "completed")
    late = store.add_submission(session.id, NewSubmission(text="only once", key="k-1"))  # whatever became of it
    assert (late.id, late.state) == (first.id, "completed")
    assert store.list_submissions(session.id) == []
    with pytest.raises(Conflict, match="already used for another message"):
        store.add_submission(session.id, NewSubmission(text="something else", key="k-1"))
    elsewhere = store.add_submission(other.id, NewSubmission(text="only once", key="k-1"))  # keys are per session
    assert elsewhere.id != first.id
    unkeyed = [store.add_submission(session.id, NewSubmission(text="twice")).id for _ in range(2)]
    assert len(set(unkeyed)) == 2
    with pytest.raises(InvalidInput, match="idempotency key"):
        store.add_submission(session.id, NewSubmission(text="x", key=""))


def test_k4_last_execution_is_the_newest_whatever_its_state(store: SessionStore, reopen: Reopen) -> None:
    session = new_session(store)
    assert store.last_execution(session.id) is None
    first = store.start_execution(session.id, [submit(store, session.id, "a")])
    store.set_execution_state(first.id, "failed", error="the model refused")
    second = store.start_execution(session.id, [submit(store, session.id, "b")])
    other = new_session(store)
    store.start_execution(other.id, [submit(store, other.id, "elsewhere")])
    assert store.last_execution(session.id) == store.get_execution(second.id)
    store.set_execution_state(second.id, "completed")
    store = reopen(store)
    last = store.last_execution(session.id)
    assert last is not None
    assert (last.id, last.state) == (second.id, "completed")
    with pytest.raises(NotFound):
        store.last_execution("ses_missing")


def test_p7_unattended_work_that_had_not_begun_is_left_to_run_after_a_crash(
    store: SessionStore, reopen: Reopen
) -> None:
    """A schedule's run taken but not yet at its first model or tool call is not interrupted by the recovery
    (nobody would continue it): it stays running, to run from its start. What had begun, and any session a
    person drives, is interrupted as before (G3)."""
    origin = Origin(kind="schedule", name="digest")
    unbegun = store.create_session(NewSession(kind="background", origin=origin))
    fresh = store.start_execution(unbegun.id, [submit(store, unbegun.id, "write the digest")], record_inputs=True)
    streamed = store.create_session(NewSession(kind="background", origin=origin))
    said = store.start_execution(streamed.id, [submit(store, streamed.id, "write it")], record_inputs=True)
    store.save_stream_text(said.id, "Here is", provider="fake", model="m", first=True)
    called = store.create_session(NewSession(kind="background", origin=origin))
    tooled = store.start_execution(called.id, [submit(store, called.id, "look")], record_inputs=True)
    store.record_tool_call(tooled.id, "c1", name="shell", arguments={"command": "ls"})
    person = new_session(store)
    chat_run = store.start_execution(person.id, [submit(store, person.id, "hello")], record_inputs=True)
    assert [store.execution_begun(e.id) for e in (fresh, said, tooled, chat_run)] == [False, True, True, False]

    store = reopen(store)
    found = {e.id: e.state for e in store.recover_interrupted("restarted")}
    assert found == {fresh.id: "running", said.id: "interrupted", tooled.id: "interrupted", chat_run.id: "interrupted"}
    assert store.get_execution(fresh.id).state == "running"
    assert store.get_submission(fresh.submission_ids[0]).state == "taken"
    assert texts(store.path(unbegun.id)) == ["write the digest"]  # no notice: nothing happened to it yet
    store.record_pass(fresh.id, [assistant("the digest")])
    assert store.execution_begun(fresh.id)
