"""ameesh driving anyy itself, end to end: a real Gateway (``anyy gateway start``) with the offline model,
ameesh's anyy adapter calling the real ``anyy chat --json``: the session resumed every turn (H1), the
context re-read taken from anyy's record (H5) and a rotation by size opening a new anyy session on the
summary (H8)."""

from __future__ import annotations

import sys
from pathlib import Path

from ameesh.harnesses import CONTINUE_CUE
from tests.ameesh.conftest import Ameesh
from tests.cli.live import BROKEN_PROVIDER, StartGateway, start_gateway

__all__ = ["start_gateway"]


def test_h1_h5_h8_ameesh_drives_anyy_through_anyy_chat(ameesh: Ameesh, start_gateway: StartGateway) -> None:
    live = start_gateway(profile="work")
    ameesh.monkeypatch.setenv("AMEESH_ANYY_BIN", str(Path(sys.executable).parent / "anyy"))
    ameesh("add", "ann", "--harness", "anyy", "--dir", str(ameesh.work))
    ameesh("set", "ann", "model=work", "session_policy=taille")  # the agent's model names the anyy profile
    ameesh("send", "ann", "first: remember PINEAPPLE")
    ameesh("send", "ann", "second: which word?")
    ameesh("run")
    (session,) = ameesh.json("sessions", "ann")
    assert session["turns"] == 2
    first_context = session["last_context_tokens"]
    assert first_context is not None
    assert first_context > 0  # anyy chat --json says what the last model call re-read
    with live.client() as client:
        history = client.call("session.history", {"session_id": session["session_id"]})["items"]
    users = [e["text"] for e in reversed(history) if e["kind"] == "user"]
    assert users == ["first: remember PINEAPPLE", "second: which word?"]  # one anyy session, resumed

    # A size past the threshold rotates: the summary turn in the old anyy session, a new one opened on it.
    ameesh.monkeypatch.setenv("AMEESH_SESSION_MAX_TOKENS", str(first_context - 1))
    ameesh.monkeypatch.setenv("AMEESH_SESSION_MIN_TURNS", "1")
    ameesh("send", "ann", "third")
    ameesh("send", "ann", "fourth")
    ameesh("run")
    old, new = ameesh.json("sessions", "ann")[:2]
    assert old["session_id"] == session["session_id"]
    assert old["closed_at"] is not None
    assert "tokens" in old["close_reason"]
    assert old["summary"]
    with live.client() as client:
        fresh = client.call("session.history", {"session_id": new["session_id"]})["items"]
    opening = next(e["text"] for e in reversed(fresh) if e["kind"] == "user")
    assert opening.startswith("Resume summary of your previous session:")
    assert opening.endswith("fourth")


def test_h13_an_anyy_agent_whose_profile_changed_rotates_by_itself(ameesh: Ameesh, start_gateway: StartGateway) -> None:
    work = start_gateway(profile="work")
    play = start_gateway(profile="play")
    ameesh.monkeypatch.setenv("AMEESH_ANYY_BIN", str(Path(sys.executable).parent / "anyy"))
    ameesh("add", "ann", "--harness", "anyy", "--dir", str(ameesh.work))
    ameesh("set", "ann", "model=work", "session_policy=taille")
    ameesh("send", "ann", "first: remember PINEAPPLE")
    ameesh("run")
    ameesh("set", "ann", "model=play")  # anyy session ids belong to a profile: the old one cannot go on
    ameesh("send", "ann", "second: go on")
    ameesh("run")  # exit 0: no failed turn, no ameesh restart needed
    old, new = ameesh.json("sessions", "ann")
    assert old["close_reason"] == "profile work → play"
    assert old["summary"]  # played in the old session, under the profile it belongs to
    assert new["model"] == "play"
    assert new["turns"] == 1
    with work.client() as client:
        users = [e["text"] for e in client.call("session.history", {"session_id": old["session_id"]})["items"]]
    assert any("resume summary" in text for text in users)
    with play.client() as client:
        fresh = client.call("session.history", {"session_id": new["session_id"]})["items"]
    opening = next(e["text"] for e in reversed(fresh) if e["kind"] == "user")
    assert opening.startswith("Resume summary of your previous session:")
    assert opening.endswith("second: go on")
    assert [t.outcome for t in ameesh.registry().turns("ann")] == ["ok", "ok", "ok"]


def test_h13_a_failed_anyy_execution_is_continued_not_sent_twice(ameesh: Ameesh, start_gateway: StartGateway) -> None:
    live = start_gateway(profile="work", config_extra=BROKEN_PROVIDER, retries=False)
    ameesh.monkeypatch.setenv("AMEESH_ANYY_BIN", str(Path(sys.executable).parent / "anyy"))
    ameesh.monkeypatch.setenv("AMEESH_SESSION_BACKOFF_BASE", "0")
    ameesh.monkeypatch.setenv("AMEESH_SESSION_MAX_ATTEMPTS", "2")
    ameesh("add", "ann", "--harness", "anyy", "--dir", str(ameesh.work))
    ameesh("set", "ann", "model=work", "session_policy=jamais")
    ameesh("send", "ann", "first: remember PINEAPPLE")
    ameesh("run")
    sid = ameesh.json("show", "ann")["session_id"]

    def provider(name: str, model: str) -> None:
        with live.client() as client:
            client.call("session.settings", {"session_id": sid, "provider": name, "model": model})

    provider("broken", "m")  # the model is unreachable: anyy fails the execution (exit 4), the prompt recorded
    ameesh("send", "ann", "second: go on")
    assert ameesh("run", ok=False).exit_code == 4
    provider("offline", "offline")
    ameesh("retry", "ann")
    ameesh("run")
    with live.client() as client:
        history = client.call("session.history", {"session_id": sid})["items"]
    users = [e["text"] for e in reversed(history) if e["kind"] == "user"]
    assert users.count("second: go on") == 1  # never a second copy in anyy's session
    assert users[-1] == CONTINUE_CUE
    assert ameesh.json("show", "ann")["session_id"] == sid
    assert len(ameesh.answers("ann")) == 2


def test_h11_a_turn_whose_gateway_was_lost_keeps_the_new_sessions_id(tmp_path: Path) -> None:
    """``anyy chat --json`` exits 8 when the Gateway goes away mid-turn and still names the session: the
    adapter keeps that id, so the next turn resumes the session rather than starting another."""
    import json

    from ameesh.harnesses import TurnRequest
    from ameesh.harnesses.anyy import AnyyHarness

    record = {"session_id": "ses_kept", "result": "unknown", "exit_code": 8, "error": "the Gateway closed"}
    request = TurnRequest(prompt="hello", cwd=tmp_path, session_id=None, new_session=True)
    result = AnyyHarness("anyy").parse(request, 8, json.dumps(record), "")
    assert result.outcome == "failed"
    assert result.session_id == "ses_kept"
    assert result.error == "anyy: unknown, the Gateway was lost mid-turn: the Gateway closed"
