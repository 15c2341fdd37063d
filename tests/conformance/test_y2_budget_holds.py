"""Y2: the budget check before a model call is one atomic step in the store: a call goes ahead only with
room for its worst case, counting what was spent and what calls in flight hold; stores opened on the same
data (several Gateways) cannot all pass a limit at once."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from anyy.domain.budgets import BudgetScope, day_period
from anyy.domain.entries import AssistantData, EntryKind, NewEntry, Usage
from anyy.domain.errors import InvalidInput
from anyy.domain.sessions import NewSession
from anyy.storage.protocol import SessionStore
from tests.conformance.conftest import Reopen, _Opened
from tests.conformance.support import user


def day_scope(at: float) -> BudgetScope:
    """The profile's daily budget of 1000 nano-dollars, for the UTC day of ``at``."""
    return BudgetScope(
        key="day",
        label="the profile's daily budget",
        limit_nano=1000,
        since=0.0,
        match="all",
        raise_hint="raise it",
        spend_scope="all",
        period=day_period(at),
    )


DAY = day_scope(0.0)


def _spend(store: SessionStore, session_id: str, cost: int) -> float:
    """A priced call of ``cost``; when it was recorded."""
    data = AssistantData(provider="p", model="m", usage=Usage(input=1, output=1), cost=cost)
    entries = store.append_entries(session_id, [user("q"), NewEntry(kind=EntryKind.ASSISTANT, text="a", data=data)])
    return entries[-1].created_at


def test_y2_a_call_is_held_only_with_room_for_its_worst_case(store: SessionStore) -> None:
    session = store.create_session(NewSession())
    day = day_scope(_spend(store, session.id, 600))
    assert store.budget_spent(day) == 600
    assert store.budget_spent(DAY) == 0  # another day
    assert store.hold_budget("exe_1", [day], 300) is None  # 600 + 300 <= 1000
    refused = store.hold_budget("exe_2", [day], 200)  # 600 spent + 300 held + 200 > 1000
    assert refused is not None
    assert (refused.scope.key, refused.spent_nano) == ("day", 900)
    assert refused.notice().startswith("Budget exhausted: the profile's daily budget")
    assert "To go on, raise it, then continue." in refused.notice()
    store.release_budget("exe_1")
    assert store.hold_budget("exe_2", [day], 200) is None
    key = f"session:{session.id}"
    tree = BudgetScope(key=key, label="s", limit_nano=599, since=0.0, match="tree", value=session.id, spend_scope=key)
    assert store.hold_budget("exe_3", [tree], 0) is not None  # already past: no call at all


def test_y2_budgets_set_per_scope_are_kept_and_checked(store: SessionStore, reopen: Reopen) -> None:
    store.set_budget("session:ses_1", 5_000_000_000)
    store.set_budget("schedule:sch_1", 1)
    store.set_budget("schedule:sch_1", None)
    store = reopen(store)
    assert store.list_budgets() == {"session:ses_1": 5_000_000_000}
    with pytest.raises(InvalidInput, match="session:ID"):
        store.set_budget("day", 1)


def test_y2_concurrent_holds_of_several_stores_never_pass_the_limit(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """Six calls on three stores of the same data (three Gateways), each worst case 300 of a 1000 limit:
    exactly three are held."""
    if backend == "memory":
        pytest.skip("the in-memory store serves one Gateway")
    opened: _Opened = request.getfixturevalue("_opened")
    opened.open(tmp_path)  # the schema, made once
    results: list[bool] = []
    lock = threading.Lock()
    start = threading.Barrier(3)

    def gateway(index: int) -> None:
        with lock:
            mine = opened.open(tmp_path)  # each store is used from the thread that opened it
        start.wait()
        for call in range(2):
            held = mine.hold_budget(f"exe_{index}_{call}", [DAY], 300) is None
            with lock:
                results.append(held)
        mine.close()

    threads = [threading.Thread(target=gateway, args=(i,)) for i in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(results) == [False, False, False, True, True, True]
