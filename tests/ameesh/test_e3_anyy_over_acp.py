"""E3: ameesh drives anyy through ACP as it drives any ACP agent: its ACP adapter runs ``anyy acp`` (the real
command, as a process: ameesh never imports anyy) against a real Gateway on the offline model."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.ameesh.conftest import Ameesh
from tests.fakes.gateways import ANYY, GatewayProcess, StartGateway


@pytest.fixture
def anyy_agent(ameesh: Ameesh, start_gateway: StartGateway) -> GatewayProcess:
    live = start_gateway(config_extra='\n[tools.approval]\nshell = "ask"\n')
    ameesh.monkeypatch.setenv("AMEESH_ACP_AGENT", f"{ANYY} acp --profile default")
    ameesh("add", "bob", "--harness", "acp", "--dir", str(ameesh.work))
    return live


def test_e3_ameesh_turns_run_on_one_anyy_session_over_acp(ameesh: Ameesh, anyy_agent: GatewayProcess) -> None:
    ameesh("set", "bob", "model=offline/offline", "effort=high")
    ameesh("send", "bob", "turn 1")
    ameesh("send", "bob", "turn 2")
    ameesh("run")
    (session,) = ameesh.json("sessions", "bob")
    answers = ameesh.answers("bob")
    assert len(answers) == 2
    assert "You said: «turn 1»" in answers[0]
    assert "You said: «turn 2»" in answers[1]
    with anyy_agent.client() as client:  # the session ameesh holds is an anyy session, loaded for turn 2
        view = client.call("session.get", {"session_id": session["session_id"]})
        history = client.call("session.history", {"session_id": session["session_id"]})["items"]
    assert view["session"]["workspace"] == str(Path(ameesh.work).resolve())
    assert view["session"]["effort"] == "high"
    assert [e["text"] for e in reversed(history) if e["kind"] == "user"] == ["turn 1", "turn 2"]


def test_e3_ameesh_grants_anyys_permission_request_once(ameesh: Ameesh, anyy_agent: GatewayProcess) -> None:
    ameesh("send", "bob", "run: echo granted-by-ameesh")
    ameesh("run")
    [answer] = ameesh.answers("bob")
    assert "granted-by-ameesh" in answer
    (session,) = ameesh.json("sessions", "bob")
    with anyy_agent.client() as client:
        history = client.call("session.history", {"session_id": session["session_id"]})["items"]
    [result] = [e for e in history if e["kind"] == "tool_result"]
    assert not result["data"].get("is_error")
    assert "granted-by-ameesh" in result["text"]
