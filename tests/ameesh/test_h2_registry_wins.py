"""H2: when the registry and the agent's state file disagree on the session id, the registry wins; the
file is written again from it."""

from __future__ import annotations

from ameesh import paths
from tests.ameesh.conftest import Ameesh


def test_h2_c_registry_wins_over_a_state_file_that_disagrees(ameesh: Ameesh) -> None:
    ameesh.add("bob")
    ameesh.add("ann")
    ameesh("send", "bob", "one")
    ameesh("send", "ann", "hello")
    ameesh("run")
    [bob] = ameesh.json("sessions", "bob")
    [ann] = ameesh.json("sessions", "ann")
    assert bob["session_id"] != ann["session_id"]
    # Bob's state file now names another real session (ann's): the two records disagree.
    paths.write_session_file(ameesh.root, "bob", ann["session_id"], None)
    ameesh("send", "bob", "two")
    ameesh("run")
    assert ameesh.calls()[-1]["resume"] == bob["session_id"]  # the harness resumed the registry's session
    assert ameesh.answers("bob")[-1] == "RESUMED (1 earlier turns): two"
    assert ameesh.json("show", "bob")["session_id"] == bob["session_id"]
    assert paths.read_session_file(ameesh.root, "bob")[0] == bob["session_id"]  # the file follows the registry
    assert [s["session_id"] for s in ameesh.json("sessions", "bob")] == [bob["session_id"]]
