"""H1, H2, H11: the registry, the state file, the commands that manage agents."""

from __future__ import annotations

import subprocess

from ameesh import paths
from ameesh.registry import MIGRATIONS
from tests.ameesh.conftest import Ameesh


def test_h11_registry_is_wal_and_migrations_are_recorded_once(ameesh: Ameesh) -> None:
    ameesh("init")
    ameesh("init")
    with ameesh.registry() as reg:
        assert reg.schema_versions() == [number for number, _ in MIGRATIONS]
        assert reg.journal_mode() == "wal"


def test_h11_add_list_show_remove(ameesh: Ameesh) -> None:
    ameesh.add("bob", "--role", "review")
    assert [a["name"] for a in ameesh.json("list")] == ["bob"]
    view = ameesh.json("show", "bob")
    assert view["role"] == "review"
    assert view["workdir"] == str(ameesh.work.resolve())
    assert view["effective"]["session_policy"] == "par-lot"
    again = ameesh("add", "bob", "--harness", "fake", "--dir", str(ameesh.work), ok=False)
    assert "already exists" in again.output
    ameesh("remove", "bob")
    assert ameesh.json("list") == []
    missing = ameesh("show", "bob", ok=False)
    assert missing.exit_code == 1
    assert "no agent named 'bob'" in missing.output


def test_h9_registration_records_the_git_identity(ameesh: Ameesh) -> None:
    subprocess.run(["git", "init", "-q", "-b", "lot-7", str(ameesh.work)], check=True)
    ameesh.add("bob")
    view = ameesh.json("show", "bob")
    assert view["git_branch"] == "lot-7"
    assert view["git_common_dir"] == str((ameesh.work / ".git").resolve())


def test_h1_every_turn_resumes_the_same_session(ameesh: Ameesh) -> None:
    ameesh.add("bob")
    ameesh("set", "bob", "model=m1", "effort=high")
    for text in ("one", "two", "three"):
        ameesh("send", "bob", text)
    assert "3 turns played" in ameesh("run").output
    assert ameesh.answers("bob") == ["FRESH: one", "RESUMED (1 earlier turns): two", "RESUMED (2 earlier turns): three"]
    [session] = ameesh.json("sessions", "bob")
    assert session["turns"] == 3
    assert session["closed_at"] is None
    calls = ameesh.calls()
    assert calls[0]["session_id"] == session["session_id"]
    assert [c["resume"] for c in calls[1:]] == [session["session_id"]] * 2
    assert {(c["model"], c["effort"]) for c in calls} == {("m1", "high")}
    assert paths.read_session_file(ameesh.root, "bob") == (session["session_id"], None)
    status = ameesh.json("status")
    assert {k: status[k] for k in ("home", "agents", "waiting", "alerts", "playing")} == {
        "home": str(ameesh.root),
        "agents": 1,
        "waiting": 0,
        "alerts": 0,
        "playing": 0,
    }
    (bob,) = status["by_agent"]
    assert (bob["name"], bob["session_id"], bob["session_turns"], bob["playing"]) == (
        "bob",
        session["session_id"],
        3,
        None,
    )


def test_h2_registry_first_file_second(ameesh: Ameesh) -> None:
    ameesh.add("bob")
    ameesh("send", "bob", "one")
    ameesh("run")
    [session] = ameesh.json("sessions", "bob")
    sid = session["session_id"]

    # The state file lost: the registry has the id (and writes the file again).
    paths.session_file(ameesh.root, "bob").unlink()
    ameesh("send", "bob", "two")
    ameesh("run")
    assert paths.read_session_file(ameesh.root, "bob")[0] == sid

    # The registry lost it: the state file has it.
    with ameesh.registry() as reg:
        reg.update_agent("bob", session_id=None)
    ameesh("send", "bob", "three")
    ameesh("run")
    assert ameesh.answers("bob")[-1] == "RESUMED (2 earlier turns): three"
    assert ameesh.json("show", "bob")["session_id"] == sid
    assert any(i["kind"] == "recovered" for i in ameesh.json("thread", "bob"))
    assert len(ameesh.json("sessions", "bob")) == 1


def test_h11_many_agents_at_once(ameesh: Ameesh) -> None:
    names = [f"a{i}" for i in range(6)]
    for name in names:
        ameesh.add(name)
        ameesh("send", name, f"{name} first")
        ameesh("send", name, f"{name} second")
    assert "12 turns played" in ameesh("run").output
    for name in names:
        assert ameesh.answers(name) == [f"FRESH: {name} first", f"RESUMED (1 earlier turns): {name} second"]


def test_h11_send_to_an_unknown_agent_is_refused(ameesh: Ameesh) -> None:
    result = ameesh("send", "nobody", "hi", ok=False)
    assert result.exit_code == 1
    assert "no agent named 'nobody'" in result.output
