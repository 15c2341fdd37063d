"""K4 through the API: ``session.list`` gives each Background session its activity — running, waiting for
an answer, waiting for its delegated tasks, queued after a stop, idle — with how its last execution
ended (and why it failed) and how many tasks it delegated; Chats carry none. Held with gates, no sleeps."""

from __future__ import annotations

from typing import Any

from anyy.domain.model_io import TextDelta, ToolCallEvent
from anyy.providers.base import ProviderError
from anyy.providers.gates import Gate
from tests.fakes.gateways import LiveGateway, wait_gate

TIMEOUT = 30


def _send(live: LiveGateway, session_id: str, text: str) -> Any:
    return live.call("session.send", {"session_id": session_id, "text": text})


def _wait(live: LiveGateway, submission: Any) -> str:
    return str(live.call("session.wait", {"submission_id": submission["id"], "timeout": TIMEOUT})["state"])


def _background(live: LiveGateway, title: str, tools: list[str] | None = None) -> str:
    session_id: str = live.call("session.create", {"kind": "background", "title": title})["id"]
    if tools is not None:
        live.call("session.tools.configure", {"session_id": session_id, "enabled": tools})
    return session_id


def _activities(live: LiveGateway) -> dict[str, Any]:
    page = live.call("session.list", {"limit": 50})
    return {s["title"]: s["activity"] for s in page["items"]}


def _ended_ones(live: LiveGateway) -> None:
    """A Chat and three Background sessions: one completed, one failed, one waiting for an answer."""
    chat = live.call("session.create", {"title": "a chat"})["id"]
    live.model.enqueue("Chatted.")
    assert _wait(live, _send(live, chat, "hi")) == "completed"
    done = _background(live, "done")
    live.model.enqueue("Done.")
    assert _wait(live, _send(live, done, "go")) == "completed"
    failed = _background(live, "failed")
    live.model.enqueue(ProviderError("fatal", "the key was refused"))
    assert _wait(live, _send(live, failed, "go")) == "failed"
    asking = _background(live, "asking", tools=["ask_user"])
    live.model.enqueue([ToolCallEvent(call_id="q1", name="ask_user", arguments={"question": "Which one?"})])
    assert _wait(live, _send(live, asking, "go")) == "suspended"


def test_k4_session_list_gives_each_background_session_its_state_and_last_outcome(gateway: LiveGateway) -> None:
    live = gateway
    _ended_ones(live)
    parent = _background(live, "parent", tools=["delegate"])
    child_gate = Gate("child")
    delegate = ToolCallEvent(call_id="d1", name="delegate", arguments={"tasks": [{"brief": "find A"}]})
    live.model.enqueue([delegate], [child_gate, TextDelta(text="A found.")])  # the parent's last word comes later
    parent_prompt = _send(live, parent, "research")
    wait_gate(child_gate)

    queued = _background(live, "queued")
    held = Gate("held")
    live.model.enqueue([TextDelta(text="Work"), held])
    first = _send(live, queued, "first")
    wait_gate(held)
    waiting = _send(live, queued, "second")
    running = live.call("session.get", {"session_id": queued})["running_execution"]

    seen = _activities(live)
    assert seen["a chat"] is None
    assert seen["done"] == {"state": "idle", "outcome": "completed", "ended_at": seen["done"]["ended_at"]}
    assert (seen["failed"]["state"], seen["failed"]["outcome"]) == ("idle", "failed")
    assert "the key was refused" in seen["failed"]["error"]
    assert seen["asking"] == {"state": "waiting_answer"}
    assert seen["parent"] == {"state": "waiting_tasks", "tasks": 1}
    [child] = [title for title in seen if title not in {"a chat", "done", "failed", "asking", "parent", "queued"}]
    assert seen[child] == {"state": "running"}
    assert seen["queued"] == {"state": "running", "pending": 1}

    assert live.call("session.stop", {"session_id": queued, "execution_id": running})["stopped"]
    held.open()
    assert _wait(live, first) == "interrupted"
    stopped = _activities(live)["queued"]
    assert (stopped["state"], stopped["pending"], stopped["outcome"]) == ("queued", 1, "interrupted")
    assert live.call("session.queue.list", {"session_id": queued})[0]["id"] == waiting["id"]

    live.model.enqueue("All found.")
    child_gate.open()
    assert _wait(live, parent_prompt) == "completed"
    finished = _activities(live)
    assert (finished["parent"]["state"], finished["parent"]["outcome"], finished["parent"]["tasks"]) == (
        "idle",
        "completed",
        1,
    )
    assert finished[child].get("outcome") == "completed", finished[child]
