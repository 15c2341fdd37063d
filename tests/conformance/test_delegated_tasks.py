"""K2: a delegate call's tasks are durable in every backend: recorded together, listed by parent and call
in order, updated one field at a time, and "open" until delivered, across reopen."""

from __future__ import annotations

import pytest

from anyy.domain.delegation import DelegatedTask, TaskUpdate
from anyy.domain.errors import NotFound
from anyy.domain.sessions import NewSession, Origin
from anyy.storage.protocol import SessionStore
from tests.conformance.conftest import Reopen


def _tasks(store: SessionStore, parent: str, call: str, count: int) -> list[DelegatedTask]:
    tasks = []
    for position in range(1, count + 1):
        origin = Origin(kind="delegate", parent_session_id=parent, parent_call_id=call)
        child = store.create_session(NewSession(kind="background", title=f"task {position}", origin=origin))
        tasks.append(
            DelegatedTask(
                child_session_id=child.id,
                parent_session_id=parent,
                parent_execution_id="exe_1",
                parent_call_id=call,
                position=position,
                brief=f"brief {position}",
                depth=1,
            )
        )
    return tasks


def test_k2_delegated_tasks_are_kept_in_order_and_updated(store: SessionStore, reopen: Reopen) -> None:
    parent = store.create_session(NewSession(title="parent")).id
    first_call = store.add_delegated_tasks(_tasks(store, parent, "call_1", 3))
    store.add_delegated_tasks(_tasks(store, parent, "call_2", 1))
    assert [t.state for t in first_call] == ["waiting"] * 3
    store = reopen(store)
    listed = store.list_delegated_tasks(parent_session_id=parent, parent_call_id="call_1")
    assert [(t.position, t.brief) for t in listed] == [(1, "brief 1"), (2, "brief 2"), (3, "brief 3")]
    assert len(store.list_delegated_tasks(parent_session_id=parent)) == 4
    child = listed[1].child_session_id
    store.update_delegated_task(child, TaskUpdate(state="running"))
    done = store.update_delegated_task(child, TaskUpdate(state="finished", result="the answer", is_error=False))
    assert (done.state, done.result, done.restarts, done.delivered) == ("finished", "the answer", 0, False)
    store.update_delegated_task(child, TaskUpdate(delivered=True))
    store = reopen(store)
    again = store.get_delegated_task(child)
    assert (again.state, again.result, again.delivered, again.brief) == ("finished", "the answer", True, "brief 2")
    assert child not in {t.child_session_id for t in store.list_delegated_tasks(open_only=True)}
    assert len(store.list_delegated_tasks(open_only=True)) == 3
    with pytest.raises(NotFound):
        store.get_delegated_task("ses_nope")
    with pytest.raises(NotFound):
        store.update_delegated_task("ses_nope", TaskUpdate(state="running"))
