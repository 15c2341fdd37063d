"""W1 through the API, on a real socket with the scripted offline model: a delegated child works in a
subfolder of its parent's workspace (never outside it), a fork inherits the workspace, a change is refused
while work runs and accepted once idle, skills come from the workspace's ``.agents/skills``, and the file
tools' root is the workspace. Held with gates, no sleeps."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from anyy.domain.model_io import TextDelta, ToolCallEvent
from anyy.providers.gates import Gate
from commons.jsonrpc import RpcError
from tests.fakes.gateways import LiveGateway, wait_gate

TIMEOUT = 30


def _folder(path: Path) -> str:
    path.mkdir(parents=True, exist_ok=True)
    return os.path.realpath(path)


def _session(live: LiveGateway, workspace: str, tools: list[str]) -> str:
    session_id: str = live.call("session.create", {"workspace": workspace})["id"]
    live.call("session.tools.configure", {"session_id": session_id, "enabled": tools})
    return session_id


def _turn(live: LiveGateway, session_id: str, text: str = "go") -> str:
    sent = live.call("session.send", {"session_id": session_id, "text": text})
    return str(live.call("session.wait", {"submission_id": sent["id"], "timeout": TIMEOUT})["state"])


def _results(live: LiveGateway, session_id: str) -> list[dict[str, Any]]:
    page = live.call("session.history", {"session_id": session_id, "limit": 50})
    return [entry for entry in reversed(page["items"]) if entry["kind"] == "tool_result"]


def test_w1_a_delegated_child_works_in_a_subfolder_never_outside(gateway: LiveGateway, tmp_path: Path) -> None:
    live = gateway
    project = _folder(tmp_path / "project")
    sub = _folder(tmp_path / "project" / "sub")
    _folder(tmp_path / "elsewhere")
    parent = _session(live, project, ["delegate", "shell"])

    outside = {"tasks": [{"brief": "look around", "folder": "../elsewhere"}]}
    live.model.enqueue([ToolCallEvent(call_id="d0", name="delegate", arguments=outside)], "Refused, then.")
    assert _turn(live, parent) == "completed"
    [refused] = _results(live, parent)
    assert refused["data"]["is_error"]
    assert "inside the parent's workspace" in refused["text"]
    assert f"{tmp_path}/project" in refused["text"]

    child_gate = Gate("child")
    inside = {"tasks": [{"brief": "say where you are", "folder": "sub"}]}
    live.model.enqueue(
        [ToolCallEvent(call_id="d1", name="delegate", arguments=inside)],
        [child_gate, ToolCallEvent(call_id="c1", name="shell", arguments={"command": "pwd"})],
        "I am in sub.",
        "All done.",
    )
    sent = live.call("session.send", {"session_id": parent, "text": "delegate"})
    wait_gate(child_gate)
    [task] = live.call("session.children", {"session_id": parent})
    child = live.call("session.get", {"session_id": task["child_session_id"]})["session"]
    assert child["workspace"] == sub
    child_gate.open()
    assert live.call("session.wait", {"submission_id": sent["id"], "timeout": TIMEOUT})["state"] == "completed"
    [pwd] = _results(live, child["id"])
    assert pwd["text"].startswith(sub + "\n") or pwd["text"].startswith(sub + " "), pwd["text"]


def test_w1_a_fork_inherits_the_workspace(gateway: LiveGateway, tmp_path: Path) -> None:
    live = gateway
    project = _folder(tmp_path / "forked project")
    session_id = _session(live, project, ["read_file"])
    live.model.enqueue("Hello.")
    assert _turn(live, session_id) == "completed"
    fork = live.call("session.fork", {"session_id": session_id})["session"]
    assert fork["workspace"] == project
    assert live.call("session.get", {"session_id": fork["id"]})["session"]["workspace"] == project
    listed = {s["id"]: s["workspace"] for s in live.call("session.list", {})["items"]}
    assert listed[fork["id"]] == listed[session_id] == project


def test_w1_a_workspace_changes_only_while_idle(gateway: LiveGateway, tmp_path: Path) -> None:
    live = gateway
    first = _folder(tmp_path / "first")
    second = _folder(tmp_path / "second")
    session_id = _session(live, first, ["shell"])
    held = Gate("held")
    live.model.enqueue([TextDelta(text="Working"), held])
    sent = live.call("session.send", {"session_id": session_id, "text": "work"})
    wait_gate(held)
    with pytest.raises(RpcError) as refused:
        live.call("session.settings", {"session_id": session_id, "workspace": second})
    assert "changing the workspace needs an idle session" in refused.value.message
    assert live.call("session.get", {"session_id": session_id})["session"]["workspace"] == first
    held.open()
    assert live.call("session.wait", {"submission_id": sent["id"], "timeout": TIMEOUT})["state"] == "completed"

    changed = live.call("session.settings", {"session_id": session_id, "workspace": second})
    assert changed["workspace"] == second
    live.model.enqueue([ToolCallEvent(call_id="p1", name="shell", arguments={"command": "pwd"})], "There.")
    assert _turn(live, session_id) == "completed"
    assert _results(live, session_id)[-1]["text"].startswith(second)
    with pytest.raises(RpcError) as missing:
        live.call("session.settings", {"session_id": session_id, "workspace": str(tmp_path / "nowhere")})
    assert "does not exist" in missing.value.message


def test_w1_skills_and_file_tools_follow_the_workspace(gateway: LiveGateway, tmp_path: Path) -> None:
    live = gateway
    skilled = _folder(tmp_path / "skilled")
    plain = _folder(tmp_path / "plain")
    skill = Path(skilled) / ".agents" / "skills" / "greet"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: greet\ndescription: Greets people.\n---\nSay hello warmly.\n")
    (Path(skilled) / "notes.txt").write_text("notes of the skilled project\n")

    with_skill = _session(live, skilled, ["read_file"])
    live.model.enqueue(
        [
            ToolCallEvent(call_id="s1", name="skill", arguments={"name": "greet"}),
            ToolCallEvent(call_id="r1", name="read_file", arguments={"path": "notes.txt"}),
        ],
        "Greeted.",
    )
    assert _turn(live, with_skill) == "completed"
    loaded, read = _results(live, with_skill)
    assert "Say hello warmly." in loaded["text"]
    assert "notes of the skilled project" in read["text"]

    without = _session(live, plain, ["read_file"])
    live.model.enqueue(
        [
            ToolCallEvent(call_id="s2", name="skill", arguments={"name": "greet"}),
            ToolCallEvent(call_id="r2", name="read_file", arguments={"path": "notes.txt"}),
        ],
        "No skill here.",
    )
    assert _turn(live, without) == "completed"
    missing_skill, missing_file = _results(live, without)
    assert missing_skill["data"]["is_error"]
    assert "no tool named 'skill'" in missing_skill["text"]
    assert missing_file["data"]["is_error"]
