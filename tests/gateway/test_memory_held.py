"""D13 (issue 17): what busy sessions used is let go once their work ends. A session's worker (its actor:
a task and a queue) lives only while the session has work, and what it knew is in the store, so a stop
with items still queued, a question waiting for its answer, all go on with a worker made afresh.
``gateway.status`` says what the Gateway holds (``held``); real Gateway on a real socket. Waits are on
events and replies, or state re-read with a deadline."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from anyy.domain.model_io import TextDelta, ToolCallEvent
from anyy.runtime.memory import trim_available
from tests.gateway.live import LiveGateway, WsClient, busy_session, is_state

DEADLINE = 30.0
SESSIONS = 24


def _held(client: WsClient) -> dict[str, int]:
    held: dict[str, int] = client.call("gateway.status")["held"]
    return held


def _until(check: Callable[[], Any], what: str) -> Any:
    """Re-read state until ``check()`` is truthy, with a deadline (no fixed wait)."""
    deadline = time.monotonic() + DEADLINE
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.02)
    raise AssertionError(f"never happened: {what}")


def _idle(client: WsClient) -> dict[str, int]:
    held: dict[str, int] = _until(lambda: (h := _held(client))["actors"] == 0 and h, "every session worker let go")
    return held


def test_d13_session_workers_are_let_go_when_work_ends_and_subscriptions_with_their_clients(
    tmp_path: Path,
) -> None:
    with LiveGateway(tmp_path) as live:
        with live.ws() as watcher:
            before = _held(watcher)
            assert before["actors"] == 0
            assert before["rss"] > 0
        with live.ws() as client:
            ids = [client.call("session.create", {"title": f"busy {i}"})["id"] for i in range(SESSIONS)]
            for session_id in ids:
                client.call("events.subscribe", {"session_id": session_id})
            busy = busy_session(live, client)  # one held mid-answer: its worker is there while it runs
            for _ in ids:
                live.model.enqueue([TextDelta(text="streamed "), TextDelta(text="answer " * 50)])
            sent = [client.call("session.send", {"session_id": s, "text": "talk to me"}) for s in ids]
            during = _held(client)
            assert during["actors"] >= 1
            assert during["subscriptions"] >= before["subscriptions"] + SESSIONS + 1
            for submission in sent:
                waited = client.call("session.wait", {"submission_id": submission["id"], "timeout": DEADLINE})
                assert waited["state"] == "completed"
            assert _until(lambda: _held(client)["actors"] == 1, "only the held session's worker left")
            busy.gate.open()
            client.event(is_state("completed", busy.execution_id), DEADLINE)
            after = _idle(client)
            if trim_available():  # glibc: the heap's free pages go back once the work is over
                assert _until(lambda: _held(client)["trims"] > before["trims"], "the heap trimmed")
            assert live.gateway is not None
            assert 0 < after["contexts"] <= live.gateway.deps.contexts.max_sessions  # bounded, kept for a next turn
        with live.ws() as watcher:
            # The client's subscriptions ended with its connection; the runtime's own are as before.
            assert _until(lambda: _held(watcher)["subscriptions"] == before["subscriptions"], "subscriptions closed")
            assert _held(watcher)["actors"] == 0


def test_d13_a_stopped_queue_and_a_waiting_question_outlive_their_worker(tmp_path: Path) -> None:
    with LiveGateway(tmp_path) as live, live.ws() as client:
        # A stop leaves what was queued behind it pending, and nothing starts it but a request (S7).
        busy = busy_session(live, client)
        queued = client.call("session.send", {"session_id": busy.id, "text": "after that"})
        assert client.call("session.stop", {"session_id": busy.id, "execution_id": busy.execution_id})["stopped"]
        client.event(is_state("interrupted", busy.execution_id), DEADLINE)
        _idle(client)
        pending = client.call("session.queue.list", {"session_id": busy.id})
        assert [item["id"] for item in pending] == [queued["id"]]
        assert client.call("session.get", {"session_id": busy.id})["running_execution"] is None
        live.model.enqueue("the queued one ran")
        client.call("session.continue", {"session_id": busy.id})
        assert client.call("session.wait", {"submission_id": queued["id"], "timeout": DEADLINE})["state"] == "completed"

        # A question: the session's worker goes once it suspends; the answer resumes it with a new one.
        asking = client.call("session.create", {"title": "asks"})["id"]
        client.call("events.subscribe", {"session_id": asking})
        live.model.enqueue(
            [ToolCallEvent(call_id="q1", name="ask_user", arguments={"question": "Which branch?"})], "On main."
        )
        sent = client.call("session.send", {"session_id": asking, "text": "deploy it"})
        assert client.call("session.wait", {"submission_id": sent["id"], "timeout": DEADLINE})["state"] == "suspended"
        _idle(client)
        waiting = client.call("session.get", {"session_id": asking})["waiting_question"]
        assert waiting["question"] == "Which branch?"
        history = client.call("session.history", {"session_id": asking})["items"]
        assert waiting["entry_id"] == next(e["id"] for e in history if e["kind"] == "question")
        client.call("session.answer", {"session_id": asking, "execution_id": waiting["execution_id"], "text": "main"})
        client.event(is_state("completed", waiting["execution_id"]), DEADLINE)
        assert client.call("session.history", {"session_id": asking})["items"][0]["text"] == "On main."
        _idle(client)
