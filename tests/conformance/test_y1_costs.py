"""Y1: the cost of a model call is kept with the entry it produced, so totals are exact sums over the store
by session, tree (a session with its delegated children), model, day, schedule and role; unpriced calls are
counted apart, never as $0."""

from __future__ import annotations

from anyy.domain.entries import AssistantData, EntryKind, NewEntry, Usage
from anyy.domain.sessions import NewSession, Origin
from anyy.storage.costs_sql import utc_day
from anyy.storage.protocol import SessionStore
from tests.conformance.conftest import Reopen
from tests.conformance.support import user


def _call(model: str, cost: int | None, *, cache: int = 0, reasoning: int = 0) -> NewEntry:
    usage = Usage(input=100, output=50, cache_read=cache, cache_write=7, reasoning=reasoning)
    data = AssistantData(provider="gpt", model=model, usage=usage, cost=cost)
    return NewEntry(kind=EntryKind.ASSISTANT, text="answer", data=data)


def test_y1_totals_are_exact_sums_by_session_tree_model_and_schedule(store: SessionStore, reopen: Reopen) -> None:
    parent = store.create_session(NewSession(title="parent"))
    child = store.create_session(
        NewSession(kind="background", origin=Origin(kind="delegate", parent_session_id=parent.id))
    )
    nightly = store.create_session(
        NewSession(kind="background", origin=Origin(kind="schedule", name="nightly", schedule_id="sch_1"))
    )
    store.append_entries(parent.id, [user("hi"), _call("a", 1_000_000_001, cache=3)])
    store.append_entries(parent.id, [_call("a", None)])  # unpriced: counted, not added as 0
    store.append_entries(child.id, [user("task"), _call("b", 2_000_000_003, reasoning=20)])
    store.append_entries(nightly.id, [user("run"), _call("b", 5)])
    store.append_entries(parent.id, [NewEntry(kind=EntryKind.ASSISTANT, text="no usage")])  # not a priced call
    store = reopen(store)

    by_session = {line.key: (line.calls, line.unpriced, line.cost_nano) for line in store.usage_report("session")}
    assert by_session == {
        parent.id: (2, 1, 1_000_000_001),
        child.id: (1, 0, 2_000_000_003),
        nightly.id: (1, 0, 5),
    }
    by_tree = {line.key: (line.calls, line.cost_nano) for line in store.usage_report("tree")}
    assert by_tree == {parent.id: (3, 3_000_000_004), nightly.id: (1, 5)}
    by_model = {line.key: (line.calls, line.unpriced, line.cost_nano) for line in store.usage_report("model")}
    assert by_model == {"gpt/a": (2, 1, 1_000_000_001), "gpt/b": (2, 0, 2_000_000_008)}
    by_schedule = {line.key: line.cost_nano for line in store.usage_report("schedule")}
    assert by_schedule == {"": 3_000_000_004, "sch_1": 5}
    [day] = store.usage_report("day")
    assert day.key == utc_day(store.get_session(parent.id).updated_at)
    assert (day.calls, day.unpriced, day.cost_nano) == (4, 1, 3_000_000_009)
    assert (day.input, day.output, day.cache_read, day.cache_write, day.reasoning) == (400, 200, 3, 28, 20)
    [tree] = store.usage_report("tree", session_id=parent.id)
    assert (tree.key, tree.calls, tree.cost_nano) == (parent.id, 3, 3_000_000_004)
    assert store.usage_report("day", since=day_after(store, parent.id)) == []


def day_after(store: SessionStore, session_id: str) -> float:
    return store.get_session(session_id).updated_at + 86_400
