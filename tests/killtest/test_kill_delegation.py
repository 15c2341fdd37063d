"""K2 across a kill: a real Gateway process with a parent waiting on 3 delegated children (2 at once) is
SIGKILLed mid-way: one child finished, two held in shell calls. After the restart, the children cut short
carry on, and the parent's call gets every child's answer exactly once, then the parent completes.
Children are held with ``Hold`` (a shell call blocked on a named pipe), never with sleeps."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from anyy.profiles import create_profile
from anyy.runtime.delegation import RESTARTED
from tests.fakes.gateways import Hold, MakeHold, WsClient
from tests.killtest.gateway_process import GatewayProcess


def _tools(config: str) -> str:
    return config.replace(
        'enabled = ["read_file", "write_file", "shell", "ask_user", "memory"]',
        'enabled = ["shell", "delegate"]',
        1,
    ).replace("max_children = 3", "max_children = 2", 1)


def _children(client: WsClient, parent: str) -> list[dict[str, Any]]:
    children: list[dict[str, Any]] = client.call("session.children", {"session_id": parent})
    return children


def test_k2_parent_gets_each_child_result_once_after_the_gateway_is_killed(tmp_path: Path, hold: MakeHold) -> None:
    home = tmp_path / "home"
    profile = create_profile(home, "bg")
    profile.config_path.write_text(_tools(profile.config_path.read_text()))
    work = tmp_path / "work"
    work.mkdir()
    holds: list[Hold] = [hold() for _ in range(3)]
    gateway = GatewayProcess(home, "bg", cwd=work, log=tmp_path / "gateway.err")
    try:
        gateway.start()
        url = f"ws://{gateway.host}:{gateway.port}/ws"
        with WsClient(url, gateway.token) as client:
            parent = client.call("session.create")["id"]
            client.call("events.subscribe", {"session_id": parent})
            brief = "delegate: " + "; ".join(h.command for h in holds)
            client.call("session.send", {"session_id": parent, "text": brief})
            suspended = client.event(lambda e: e.get("type") == "execution_state" and e["state"] == "suspended")
            first, second, third = _children(client, parent)
            assert [first["state"], second["state"], third["state"]] == ["running", "running", "waiting"]
            for child in (first, second):
                client.call("events.subscribe", {"session_id": child["child_session_id"]})
            holds[0].release()
            client.event(
                lambda e: (
                    e.get("type") == "execution_state"
                    and e["session_id"] == first["child_session_id"]
                    and e["state"] == "completed"
                )
            )
            client.call("events.subscribe", {"session_id": third["child_session_id"]})
            while _children(client, parent)[2]["state"] != "running":
                client.event(lambda e: e.get("type") == "queue_changed")
            gateway.kill()  # child 1 finished; child 2 is held in its shell call, child 3 started
        holds[1].release()
        holds[2].release()

        gateway.start()
        with WsClient(f"ws://{gateway.host}:{gateway.port}/ws", gateway.token) as client:
            client.call("events.subscribe", {"session_id": parent})
            execution_id = suspended["execution_id"]
            state = client.call("session.execution", {"session_id": parent, "execution_id": execution_id})
            if state["state"] != "completed":
                client.event(
                    lambda e: (
                        e.get("type") == "execution_state"
                        and e["execution_id"] == execution_id
                        and e["state"] == "completed"
                    ),
                    timeout=60,
                )
            tasks = _children(client, parent)
            assert [t["state"] for t in tasks] == ["finished"] * 3
            assert all(t["delivered"] and not t["is_error"] for t in tasks)
            history = client.call("session.history", {"session_id": parent, "limit": 50})["items"]
            results = [e for e in history if e["kind"] == "tool_result"]
            assert len(results) == 1  # the call got its result once
            for task in tasks:
                assert results[0]["text"].count(f"session {task['child_session_id']})") == 1
            assert history[0]["kind"] == "assistant"  # the parent went on after the results
            cut = client.call("session.history", {"session_id": second["child_session_id"], "limit": 50})["items"]
            assert [e["text"] for e in cut if e["kind"] == "user"].count(RESTARTED) == 1  # resumed once
    finally:
        gateway.stop()
