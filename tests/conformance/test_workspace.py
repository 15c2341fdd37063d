"""W1: a session keeps its workspace (an absolute directory) across reopen; lists show it; forks inherit
it; it changes by a settings patch; a relative one is refused; schedules keep theirs."""

from __future__ import annotations

import msgspec
import pytest

from anyy.domain.entries import EntryKind, NewEntry
from anyy.domain.errors import InvalidInput
from anyy.domain.schedule_records import NewSchedule
from anyy.domain.schedules import Timing
from anyy.domain.sessions import NewSession, SessionPatch
from anyy.storage.protocol import SessionStore
from tests.conformance.conftest import Reopen


def test_w1_a_session_keeps_its_workspace(store: SessionStore, reopen: Reopen) -> None:
    made = store.create_session(NewSession(title="work", workspace="/srv/projects/alpha"))
    legacy = store.create_session(NewSession(title="before workspaces"))
    assert made.workspace == "/srv/projects/alpha"
    assert legacy.workspace is None
    store = reopen(store)
    assert store.get_session(made.id).workspace == "/srv/projects/alpha"
    listed = {s.id: s.workspace for s in store.list_sessions().items}
    assert listed == {made.id: "/srv/projects/alpha", legacy.id: None}
    fork = store.fork_session(made.id)
    assert fork.workspace == "/srv/projects/alpha"
    changed = store.update_session(made.id, SessionPatch(workspace="/srv/projects/beta"))
    assert changed.workspace == "/srv/projects/beta"
    store = reopen(store)
    assert store.get_session(made.id).workspace == "/srv/projects/beta"
    assert store.get_session(fork.id).workspace == "/srv/projects/alpha"


def test_w1_a_fork_at_an_entry_inherits_the_workspace(store: SessionStore) -> None:
    made = store.create_session(NewSession(workspace="/srv/w"))
    first = store.append_entries(made.id, [NewEntry(kind=EntryKind.USER, text="hello")])
    store.append_entries(made.id, [NewEntry(kind=EntryKind.USER, text="again")])
    fork = store.fork_session(made.id, first[0].id)
    assert fork.workspace == "/srv/w"
    assert store.get_session(fork.id).workspace == "/srv/w"


@pytest.mark.parametrize("bad", ["relative/dir", "", "~/proj"])
def test_w1_a_relative_workspace_is_refused(store: SessionStore, bad: str) -> None:
    with pytest.raises(InvalidInput, match="absolute"):
        store.create_session(NewSession(workspace=bad))
    made = store.create_session(NewSession(workspace="/srv/w"))
    with pytest.raises(InvalidInput, match="absolute"):
        store.update_session(made.id, SessionPatch(workspace=bad))
    assert store.get_session(made.id).workspace == "/srv/w"


def test_w1_a_schedule_keeps_its_workspace(store: SessionStore, reopen: Reopen) -> None:
    timing = Timing(kind="interval", every=3600.0)
    made = store.create_schedule(NewSchedule(name="nightly", timing=timing, prompt="go", workspace="/srv/nightly"))
    assert made.workspace == "/srv/nightly"
    store = reopen(store)
    assert store.get_schedule("nightly").workspace == "/srv/nightly"
    store.update_schedule(msgspec.structs.replace(store.get_schedule("nightly"), workspace="/srv/other"))
    assert store.get_schedule("nightly").workspace == "/srv/other"
