"""D11: ``check`` finds what breaks the store's invariants and ``repair`` fixes what it safely can, in
every backend. The damage comes from ``faults`` (no protocol call can make it)."""

from __future__ import annotations

from anyy.domain.entries import Attachment, EntryKind
from anyy.domain.queue import NewSubmission
from anyy.storage.checks import CHECKS, Finding
from anyy.storage.protocol import SessionStore
from tests.conformance import faults
from tests.conformance.support import BIG, assistant, chat, drain, submit, user


def _by_name(findings: list[Finding]) -> dict[str, Finding]:
    assert [f.check for f in findings] == list(CHECKS)
    return {f.check: f for f in findings}


def _clean(store: SessionStore) -> bool:
    return all(f.problems == 0 and not f.skipped for f in store.check())


def test_d11_a_store_in_use_checks_clean(store: SessionStore) -> None:
    session, entries = chat(store, ["hello", "hi there", "how are you", "fine"])
    fork = store.fork_session(session.id, entries[1].id, title="fork")
    store.append_entries(fork.id, [user("b" * (BIG + 1)), assistant("a big one")])
    ref = store.put_object(b"attached", media_type="text/plain")
    store.add_submission(
        session.id, NewSubmission(text="see", attachments=[Attachment(object=ref.hash, name="a.txt", size=8)])
    )
    done = store.start_execution(session.id, [submit(store, session.id, "answered")], record_inputs=True)
    store.set_execution_state(done.id, "completed")
    drain(store)
    found = _by_name(store.check())
    assert all(f.problems == 0 and f.repaired == 0 for f in found.values()), found
    skipped = _by_name(store.check(skip=["objects"]))
    assert skipped["objects"].skipped
    assert not skipped["queue"].skipped


def test_d11_an_execution_left_running_is_marked_interrupted(store: SessionStore) -> None:
    session, _ = chat(store, ["hello"])
    submission = submit(store, session.id, "never answered")
    execution = store.start_execution(session.id, [submission], record_inputs=True)  # then the Gateway died
    found = _by_name(store.check())
    assert found["executions"].problems == 1
    assert found["executions"].repaired == 0  # a check alone changes nothing
    assert store.get_execution(execution.id).state == "running"

    repaired = _by_name(store.check(repair=True))
    assert repaired["executions"].repaired == 1
    assert store.get_execution(execution.id).state == "interrupted"
    assert store.get_submission(submission).state == "interrupted"
    notice = store.path(session.id)[-1]
    assert notice.kind == EntryKind.NOTICE
    assert "anyy doctor" in notice.text
    assert _clean(store)


def test_d11_a_queue_item_taken_by_an_ended_execution_gets_its_outcome(store: SessionStore, backend: str) -> None:
    session, _ = chat(store, ["hello"])
    submission = submit(store, session.id, "answered")
    execution = store.start_execution(session.id, [submission], record_inputs=True)
    store.set_execution_state(execution.id, "completed")
    faults.retake(backend, store, submission)
    assert store.get_submission(submission).state == "taken"
    found = _by_name(store.check())
    assert found["queue"].problems == 1
    assert found["executions"].problems == 0
    assert _by_name(store.check(repair=True))["queue"].repaired == 1
    assert store.get_submission(submission).state == "completed"
    assert _clean(store)


def test_d11_a_search_index_that_lost_messages_is_rebuilt(store: SessionStore, backend: str) -> None:
    session, _ = chat(store, ["a marmalade question", "an answer", "more"])
    big = store.append_entries(session.id, [user("quince " + "q" * BIG)])[0]
    drain(store)
    assert len(store.search("marmalade")) == 1
    faults.forget_search_index(backend, store)
    found = _by_name(store.check())
    if backend == "memory":  # it searches the messages themselves: there is no index to lose
        assert found["search_index"].problems == 0
        return
    assert found["search_index"].problems == 4
    assert _by_name(store.check(repair=True))["search_index"].repaired == 4
    assert [hit.entry_id for hit in store.search("marmalade")] == [store.path(session.id)[0].id]
    assert [hit.entry_id for hit in store.search("quince")] == [big.id]
    assert _clean(store)


def test_d11_objects_lost_references_are_restored_damaged_bytes_reported(store: SessionStore, backend: str) -> None:
    session, _ = chat(store, ["hello"])
    (big,) = store.append_entries(session.id, [assistant("z" * (BIG + 1))])
    assert big.object is not None
    ref = store.put_object(b"attached bytes", media_type="text/plain")
    store.add_submission(
        session.id, NewSubmission(text="see", attachments=[Attachment(object=ref.hash, name="a.txt", size=14)])
    )
    faults.drop_reference(backend, store, big.id)
    faults.damage_object(backend, store, ref.hash)
    found = _by_name(store.check())["objects"]
    assert found.problems == 2, found
    repaired = _by_name(store.check(repair=True))["objects"]
    assert repaired.repaired == 1  # the reference; the damaged bytes are gone: a backup has them
    assert repaired.left == 1
    drain(store)
    assert store.path(session.id)[-1].text == "z" * (BIG + 1)  # upkeep kept the body: it is referenced again
    assert _by_name(store.check())["objects"].problems == 1


def test_d11_a_broken_tree_is_reported_and_left_alone(store: SessionStore, backend: str) -> None:
    _session, entries = chat(store, ["one", "two", "three"])
    faults.drop_entry(backend, store, entries[1].id)
    found = _by_name(store.check(repair=True))["integrity"]
    assert found.problems >= 1
    assert found.repaired == 0
    assert "parent is missing" in " ".join(found.details)
