"""H12: the canon's caps hold at every turn, and a removed agent's state never reaches a new agent."""

from __future__ import annotations

import json
from pathlib import Path

from ameesh import paths
from tests.ameesh.conftest import Ameesh


def _canon(path: Path, models: list[str], max_effort: str) -> None:
    path.write_text(
        f'[roles.build]\nmodel = "{models[0]}"\nmodels = {json.dumps(models)}\nmax_effort = "{max_effort}"\n',
        encoding="utf-8",
    )


def test_h12_a_tightened_canon_lowers_model_and_effort_at_the_next_turn_with_a_note(ameesh: Ameesh) -> None:
    canon = ameesh.work / "canon.toml"
    ameesh.monkeypatch.setenv("AMEESH_CANON", str(canon))
    _canon(canon, ["small", "big"], "high")
    ameesh.add("bob")
    ameesh("set", "bob", "model=big", "effort=high")
    ameesh("send", "bob", "one")
    ameesh("run")
    _canon(canon, ["small"], "low")  # tightened after `ameesh set` accepted big/high
    for text in ("two", "three"):
        ameesh("send", "bob", text)
    ameesh("run")
    calls = ameesh.calls()
    assert [(c["model"], c["effort"]) for c in calls] == [("big", "high"), ("small", "low"), ("small", "low")]
    notes = [i["text"] for i in ameesh.json("thread", "bob") if i["kind"] == "caps"]
    assert len(notes) == 1  # said once, not at every turn
    assert "model big → small" in notes[0]
    assert "effort high → low" in notes[0]
    assert str(canon) in notes[0]
    # Loosened again, the agent's own setting applies again.
    _canon(canon, ["small", "big"], "max")
    ameesh("send", "bob", "four")
    ameesh("run")
    assert (ameesh.calls()[-1]["model"], ameesh.calls()[-1]["effort"]) == ("big", "high")


def test_h12_remove_archives_the_state_and_a_new_agent_of_the_same_name_starts_afresh(
    ameesh: Ameesh, tmp_path: Path
) -> None:
    ameesh.add("bob")
    ameesh("send", "bob", "remember PINEAPPLE")
    ameesh("run")
    old_sid = ameesh.json("show", "bob")["session_id"]
    out = ameesh("remove", "bob").output
    assert "archived" in out
    assert not paths.agent_dir(ameesh.root, "bob").exists()
    (archived,) = (ameesh.root / "removed").iterdir()
    assert json.loads((archived / "session.json").read_text())["session_id"] == old_sid  # kept, out of the way

    other = tmp_path / "elsewhere"
    other.mkdir()
    ameesh("add", "bob", "--harness", "fake", "--dir", str(other))
    ameesh("send", "bob", "hello")
    ameesh("run")
    assert ameesh.answers("bob") == ["FRESH: hello"]
    (session,) = ameesh.json("sessions", "bob")
    assert session["session_id"] != old_sid
    assert ameesh.calls()[-1]["cwd"] == str(other.resolve())


def test_h12_add_refuses_a_name_whose_leftover_state_belongs_to_another_agent(ameesh: Ameesh) -> None:
    # State left by an agent removed before removal archived it: its session would be resumed.
    paths.write_session_file(ameesh.root, "bob", "old-session", None)
    refused = ameesh("add", "bob", "--harness", "fake", "--dir", str(ameesh.work), ok=False)
    assert refused.exit_code == 1
    assert "holds the state of a former agent bob" in refused.output
    assert "ameesh remove bob" in refused.output
    assert ameesh.json("list") == []
    ameesh("remove", "bob")  # archives the leftover
    ameesh.add("bob")
    ameesh("send", "bob", "hello")
    ameesh("run")
    assert ameesh.answers("bob") == ["FRESH: hello"]
    assert ameesh.json("show", "bob")["session_id"] != "old-session"


def test_h12_a_state_file_of_another_agent_is_never_recovered(ameesh: Ameesh) -> None:
    ameesh.add("bob")
    paths.claim(ameesh.root, "bob", "someone-else")  # the directory now says it is another agent's
    paths.write_session_file(ameesh.root, "bob", "their-session", None)
    ameesh("send", "bob", "hello")
    ameesh("run")
    assert ameesh.answers("bob") == ["FRESH: hello"]
    assert not [i for i in ameesh.json("thread", "bob") if i["kind"] == "recovered"]


def test_h10_set_an_empty_effort_prints_the_default_not_none(ameesh: Ameesh) -> None:
    ameesh.add("bob")
    ameesh("set", "bob", "effort=high")
    out = ameesh("set", "bob", "effort=").output
    assert "None" not in out
    assert out.strip() == "effort=(the harness's default)"
    canon = ameesh.work / "canon.toml"
    canon.write_text('[defaults]\neffort = "medium"\n', encoding="utf-8")
    ameesh.monkeypatch.setenv("AMEESH_CANON", str(canon))
    assert ameesh("set", "bob", "effort=").output.strip() == "effort=medium"


def test_h11_help_lists_every_harness_of_the_one_table(ameesh: Ameesh) -> None:
    from ameesh.harnesses import NAMES

    text = ameesh("--help").output
    for name in NAMES:
        assert name in text
    assert "pi" in text
    assert all(name in ameesh("add", "--help").output for name in NAMES)
