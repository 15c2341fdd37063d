"""Events carry what a client needs so that it does not ask again (G2, C3, A2, Q6): the appended entries
as ``session.history`` shows them, the submissions an execution took, the question a suspension waits
on, and the queue as it is after a change. Every event decodes into the wire contract (``anyy.api``)."""

from __future__ import annotations

from typing import Any

import msgspec

from anyy import api
from anyy.domain.model_io import TextDelta, ToolCallEvent
from tests.fakes.gateways import MakeHold
from tests.gateway.live import LiveGateway, busy_session, is_state


def _until(client: Any, predicate: Any) -> list[dict[str, Any]]:
    """Every event received up to and including the first that matches (all of them kept in order)."""
    seen: list[dict[str, Any]] = []
    while not seen or not predicate(seen[-1]):
        message = client.receive()
        if isinstance(message, dict) and message.get("method") == "event":
            seen.append(client.events.pop())
    return seen


def test_g2_entries_appended_carries_the_entries_as_history_shows_them(gateway: LiveGateway) -> None:
    with gateway.ws() as client:
        session_id = client.call("session.create")["id"]
        client.call("events.subscribe", {"session_id": session_id})
        gateway.model.enqueue([TextDelta(text="Hello "), TextDelta(text="there.")])
        client.call("session.send", {"session_id": session_id, "text": "hi"})
        events = _until(client, is_state("completed"))
        for event in events:  # the wire contract decodes every event
            msgspec.convert(event, api.RuntimeEvent)
        appended = [e for e in events if e["type"] == "entries_appended"]
        entries = [entry for e in appended for entry in e["entries"]]
        assert [entry["id"] for entry in entries] == [i for e in appended for i in e["entry_ids"]]
        history = client.call("session.history", {"session_id": session_id})["items"]
        assert entries == list(reversed(history))  # the same views, oldest first
        assert [(e["kind"], e["text"]) for e in entries] == [("user", "hi"), ("assistant", "Hello there.")]
        assert entries[1]["data"]["kind"] == "assistant"  # the typed payload says its kind
        decoded = msgspec.convert(entries[1], api.EntryView)
        assert isinstance(decoded.data, api.entries.AssistantData)
        assert decoded.data.usage is not None
        assert decoded.data.usage.context_tokens > 0


def test_c3_execution_state_names_the_submissions_each_execution_took(gateway: LiveGateway) -> None:
    """Another client's prompt queued ahead of ours: each execution's events say whose prompt it took, so
    a client follows its own execution without asking which one took its message."""
    with gateway.ws() as client, gateway.ws() as other:
        busy = busy_session(gateway, client)
        gateway.model.enqueue("for the other client", "for us")
        theirs = other.call("session.send", {"session_id": busy.id, "text": "theirs"})
        ours = client.call("session.send", {"session_id": busy.id, "text": "ours"})
        busy.gate.open()
        assert client.event(is_state("running"))["submission_ids"] == [busy.first["id"]]
        running = [client.event(is_state("running")) for _ in range(2)]
        assert [e["submission_ids"] for e in running] == [[theirs["id"]], [ours["id"]]]
        done = client.event(is_state("completed", running[1]["execution_id"]))
        assert done["submission_ids"] == [ours["id"]]
        waited = client.call("session.wait", {"submission_id": ours["id"], "timeout": 30})
        assert waited["execution_id"] == running[1]["execution_id"]
        first = client.call("session.execution", {"session_id": busy.id, "execution_id": busy.execution_id})
        assert first["submission_ids"] == [busy.first["id"]]


def test_c3_steering_taken_at_a_checkpoint_is_named_by_the_executions_next_state(gateway: LiveGateway) -> None:
    with gateway.ws() as client:
        busy = busy_session(gateway, client)
        steer = client.call("session.send", {"session_id": busy.id, "text": "also this", "kind": "steering"})
        gateway.model.enqueue("taken into account")
        busy.gate.open()
        done = client.event(is_state("completed", busy.execution_id))
        assert done["submission_ids"] == [busy.first["id"], steer["id"]]


def test_a2_a_suspension_event_carries_its_question(gateway: LiveGateway) -> None:
    with gateway.ws() as client:
        session_id = client.call("session.create")["id"]
        client.call("events.subscribe", {"session_id": session_id})
        gateway.model.enqueue(
            [ToolCallEvent(call_id="q1", name="ask_user", arguments={"question": "Which branch?"})], "On main."
        )
        sent = client.call("session.send", {"session_id": session_id, "text": "deploy it"})
        suspended = client.event(is_state("suspended"))
        question = suspended["question"]
        assert question["text"] == "Which branch?"
        history = client.call("session.history", {"session_id": session_id})["items"]
        assert question["entry_id"] == next(e["id"] for e in history if e["kind"] == "question")
        assert suspended["submission_ids"] == [sent["id"]]
        # The view a late client reads says the same, from what the runtime suspended on.
        waiting = client.call("session.get", {"session_id": session_id})["waiting_question"]
        assert waiting == {
            "execution_id": suspended["execution_id"],
            "entry_id": question["entry_id"],
            "question": "Which branch?",
        }
        answer = {"session_id": session_id, "execution_id": suspended["execution_id"], "text": "main"}
        client.call("session.answer", answer)
        resumed = client.event(is_state("completed", suspended["execution_id"]))
        assert resumed["question"] is None


def test_q6_queue_changed_carries_the_queue_after_each_edit(gateway: LiveGateway) -> None:
    with gateway.ws() as client:
        busy = busy_session(gateway, client)
        client.events.clear()
        a = client.call("session.send", {"session_id": busy.id, "text": "a", "kind": "follow_up"})
        assert [x["id"] for x in client.event(lambda e: e["type"] == "queue_changed")["pending"]] == [a["id"]]
        b = client.call("session.send", {"session_id": busy.id, "text": "b", "kind": "follow_up"})
        assert [x["id"] for x in client.event(lambda e: e["type"] == "queue_changed")["pending"]] == [a["id"], b["id"]]
        client.call("session.queue.steer", {"submission_id": b["id"]})
        pending = client.event(lambda e: e["type"] == "queue_changed")["pending"]
        assert [(x["id"], x["kind"]) for x in pending] == [(b["id"], "steering"), (a["id"], "follow_up")]
        client.call("session.queue.update", {"submission_id": a["id"], "text": "a, edited"})
        pending = client.event(lambda e: e["type"] == "queue_changed")["pending"]
        assert [x["text"] for x in pending] == ["b", "a, edited"]
        assert pending == client.call("session.queue.list", {"session_id": busy.id})
        client.call("session.queue.cancel", {"submission_id": b["id"]})
        assert [x["id"] for x in client.event(lambda e: e["type"] == "queue_changed")["pending"]] == [a["id"]]
        client.call("session.queue.clear", {"session_id": busy.id})
        assert client.event(lambda e: e["type"] == "queue_changed")["pending"] == []
        busy.gate.open()
        client.event(is_state("completed", busy.execution_id))


def test_m1_a_model_change_is_announced_with_its_entry(gateway: LiveGateway) -> None:
    """Everything the runtime appends is announced: the model-change entry reaches a subscriber as
    ``session.history`` shows it (a client opened meanwhile need not reload to see it)."""
    with gateway.ws() as client, gateway.ws() as watcher:
        session_id = client.call("session.create")["id"]
        watcher.call("events.subscribe", {"session_id": session_id})
        client.call("session.settings", {"session_id": session_id, "effort": "high"})
        appended = watcher.event(lambda e: e["type"] == "entries_appended")
        history = client.call("session.history", {"session_id": session_id})["items"]
        assert appended["entries"] == history
        assert appended["entries"][0]["kind"] == "model_change"
        assert appended["entries"][0]["data"]["effort"] == "high"


def test_g2_session_get_names_the_tool_calls_running_now(gateway: LiveGateway, hold: MakeHold) -> None:
    """A client that opens a session while a tool runs (its ``tool_started`` came before it followed) reads
    that call in ``session.get``; once it ends, nothing is listed."""
    held = hold()
    arguments = {"command": held.command.removeprefix("run: ")}
    with gateway.ws() as client:
        session_id = client.call("session.create")["id"]
        client.call("events.subscribe", {"session_id": session_id})
        gateway.model.enqueue([ToolCallEvent(call_id="c1", name="shell", arguments=arguments)], "Done.")
        client.call("session.send", {"session_id": session_id, "text": "wait for the line"})
        client.event(lambda e: e["type"] == "tool_started")
        running = client.call("session.get", {"session_id": session_id})["running_tools"]
        assert running == [{"call_id": "c1", "name": "shell", "arguments": arguments, "parent_call_id": ""}]
        held.release()
        client.event(is_state("completed"))
        assert client.call("session.get", {"session_id": session_id})["running_tools"] == []
