"""N2 and N3 through a real Gateway: ``anyy chat`` exits 3 on an approval request and names
``session.approve``; the RPC answers it; ``gateway.status`` says how programs are confined."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.live import StartGateway, run, start_gateway, wait_event

__all__ = ["start_gateway"]

ASK_SHELL = '\n[tools.approval]\nshell = { "echo *" = "ask", "rm *" = "deny" }\n'


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "anyy-home"
    monkeypatch.setenv("ANYY_HOME", str(path))
    monkeypatch.delenv("ANYY_PROFILE", raising=False)
    return path


def test_n2_chat_exits_3_and_session_approve_resumes(start_gateway: StartGateway, home: Path, tmp_path: Path) -> None:
    live = start_gateway(config_extra=ASK_SHELL)
    waiting = run(home, "chat", "--json", "run: echo approved-by-rpc")
    assert waiting.returncode == 3, waiting.stderr
    record = json.loads(waiting.stdout)
    assert record["result"] == "suspended"
    assert record["question"].startswith("Approval needed: shell 'echo approved-by-rpc'")
    plain = run(home, "chat", "run: echo second")
    assert plain.returncode == 3
    assert "session.approve" in plain.stderr
    assert "--answer once" in plain.stderr
    session_id, execution_id = record["session_id"], record["execution"]["id"]
    with live.client() as client:
        client.call("events.subscribe", {"session_id": session_id})
        with pytest.raises(Exception, match=r"invalid parameters for session.approve: .*decision"):
            client.call("session.approve", {"session_id": session_id, "execution_id": execution_id, "decision": "ok"})
        client.call("session.approve", {"session_id": session_id, "execution_id": execution_id, "decision": "once"})
        wait_event(client, lambda e: e["type"] == "execution_state" and e["state"] == "completed")
        path = client.call("session.history", {"session_id": session_id})["items"]
    results = [e["text"] for e in path if e["kind"] == "tool_result"]
    assert "approved-by-rpc\n[exit code 0]" in results

    denied = run(home, "chat", "--json", "run: rm -rf /tmp/nothing-here")
    assert denied.returncode == 0
    with live.client() as client:
        history = client.call("session.history", {"session_id": json.loads(denied.stdout)["session_id"]})
    assert any(e["text"].startswith("Denied: the profile's approval rules deny shell") for e in history["items"])


def test_n3_gateway_status_says_how_programs_are_confined(start_gateway: StartGateway) -> None:
    live = start_gateway()
    with live.client() as client:
        status = client.call("gateway.status")
    assert status["sandbox"].startswith(("bubblewrap: working directory writable", "no sandbox ("))
