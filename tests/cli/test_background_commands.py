"""K4 in the CLI: ``anyy sessions list --kind background`` prints each Background session's origin, state
and last outcome, and ``anyy sessions children ID`` lists the tasks a session delegated — the same
through a running Gateway and, without one, from the store."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli.live import StartGateway, run, start_gateway

__all__ = ["start_gateway"]
TIMEOUT = 60


def test_k4_sessions_list_background_shows_state_and_outcome_and_children_lists_the_tasks(
    start_gateway: StartGateway, home: Path
) -> None:
    live = start_gateway()
    with live.client() as client:
        parent = client.call("session.create", {"title": "research"})["id"]
        client.call("session.tools.configure", {"session_id": parent, "enabled": ["delegate"]})
        sent = client.call(
            "session.send", {"session_id": parent, "text": "delegate: find the papers; sum up the notes"}
        )
        assert client.call("session.wait", {"submission_id": sent["id"], "timeout": TIMEOUT})["state"] == "completed"
        asking = client.call("session.create", {"kind": "background", "title": "asking"})["id"]
        client.call("session.tools.configure", {"session_id": asking, "enabled": ["ask_user"]})
        sent = client.call("session.send", {"session_id": asking, "text": "Which branch, ask me?"})
        assert client.call("session.wait", {"submission_id": sent["id"], "timeout": TIMEOUT})["state"] == "suspended"
        children = [task["child_session_id"] for task in client.call("session.children", {"session_id": parent})]

    listed = run(home, "sessions", "list", "--kind", "background")
    assert listed.returncode == 0, listed.stderr
    lines = {line.split()[0]: line for line in listed.stdout.splitlines()}
    assert set(lines) == {asking, *children}  # the parent is a Chat
    assert lines[asking].endswith("<waiting for an answer>")
    for child in children:
        assert f"[delegated by {parent}]  <idle · last: completed>" in lines[child]
    chats = run(home, "sessions", "list", "--kind", "chat")
    assert "<" not in chats.stdout.split(parent)[1].splitlines()[0]  # Chats carry no activity

    tasks = run(home, "sessions", "children", parent)
    assert tasks.returncode == 0, tasks.stderr
    task_lines = tasks.stdout.splitlines()
    assert [line.split()[0] for line in task_lines] == children
    assert task_lines[0].split()[1] == "finished"
    assert "find the papers — " in task_lines[0]
    as_json = json.loads(run(home, "sessions", "children", parent, "--json").stdout)
    assert [(t["child_session_id"], t["state"], t["delivered"]) for t in as_json] == [
        (c, "finished", True) for c in children
    ]
    assert run(home, "sessions", "children", asking).stderr.strip() == f"session {asking} delegated no tasks"

    # Without a Gateway the same commands read the store and say the same.
    assert run(home, "gateway", "stop").returncode == 0
    assert run(home, "sessions", "list", "--kind", "background").stdout == listed.stdout
    assert run(home, "sessions", "children", parent).stdout == tasks.stdout
    missing = run(home, "sessions", "children", "ses_nothere")
    assert missing.returncode != 0
    assert "ses_nothere" in missing.stderr
