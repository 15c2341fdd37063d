"""What session.get tells a client that opens a session late: the question an execution waits on (A2),
a retry wait in progress (R3) and the context fill a status line shows."""

from __future__ import annotations

from anyy.domain.model_io import ToolCallEvent
from anyy.providers.base import ProviderError
from tests.gateway.live import LiveGateway, is_state


def test_a2_session_get_reports_the_question_a_suspended_execution_waits_on(gateway: LiveGateway) -> None:
    with gateway.ws() as client:
        session_id = client.call("session.create")["id"]
        assert client.call("session.get", {"session_id": session_id})["waiting_question"] is None
        gateway.model.enqueue(
            [ToolCallEvent(call_id="q1", name="ask_user", arguments={"question": "Which branch?"})], "On main, then."
        )
        sent = client.call("session.send", {"session_id": session_id, "text": "deploy it"})
        waited = client.call("session.wait", {"submission_id": sent["id"], "timeout": 30})
        assert waited["state"] == "suspended"
    # A second client, opening the session afterwards, learns what to answer and to which execution.
    with gateway.ws() as late:
        late.call("events.subscribe", {"session_id": session_id})
        view = late.call("session.get", {"session_id": session_id})
        question = view["waiting_question"]
        assert question is not None
        assert question["question"] == "Which branch?"
        history = late.call("session.history", {"session_id": session_id})["items"]
        assert question["entry_id"] == next(e["id"] for e in history if e["kind"] == "question")
        late.call(
            "session.answer", {"session_id": session_id, "execution_id": question["execution_id"], "text": "main"}
        )
        late.event(is_state("completed", question["execution_id"]))
        assert late.call("session.wait", {"submission_id": sent["id"], "timeout": 0})["state"] == "completed"
        assert late.call("session.get", {"session_id": session_id})["waiting_question"] is None


def test_status_line_session_get_reports_the_context_of_the_last_response_and_the_budget(gateway: LiveGateway) -> None:
    with gateway.ws() as client:
        session_id = client.call("session.create")["id"]
        fresh = client.call("session.get", {"session_id": session_id})
        assert fresh["context_tokens"] is None
        assert fresh["context_budget"] == 100_000
        gateway.model.enqueue("Hello there.")
        sent = client.call("session.send", {"session_id": session_id, "text": "hello"})
        assert client.call("session.wait", {"submission_id": sent["id"], "timeout": 30})["state"] == "completed"
        history = client.call("session.history", {"session_id": session_id})["items"]
        usage = next(e["data"]["usage"] for e in history if e["kind"] == "assistant")
        expected = sum(usage.get(key, 0) for key in ("input", "cache_read", "cache_write"))
        assert expected > 0
        assert client.call("session.get", {"session_id": session_id})["context_tokens"] == expected


def test_r3_session_get_reports_a_retry_wait_in_progress(gateway: LiveGateway) -> None:
    with gateway.ws() as client:
        session_id = client.call("session.create")["id"]
        client.call("events.subscribe", {"session_id": session_id})
        gateway.model.enqueue(ProviderError("transient", "the model is overloaded", retry_after=30))
        client.call("session.send", {"session_id": session_id, "text": "hello"})
        announced = client.event(lambda e: e.get("type") == "retry_wait")
    with gateway.ws() as late:  # a client that opens the session during the wait sees the countdown
        retry = late.call("session.get", {"session_id": session_id})["retry_wait"]
        assert retry is not None
        assert (retry["execution_id"], retry["attempt"], retry["of"]) == (
            announced["execution_id"],
            announced["attempt"],
            announced["of"],
        )
        assert retry["error"] == "the model is overloaded"
        assert 0 < retry["seconds_left"] <= 30
        late.call("events.subscribe", {"session_id": session_id})
        late.call("session.retry.cancel", {"session_id": session_id, "execution_id": retry["execution_id"]})
        late.event(is_state("interrupted", retry["execution_id"]))
        assert late.call("session.get", {"session_id": session_id})["retry_wait"] is None
