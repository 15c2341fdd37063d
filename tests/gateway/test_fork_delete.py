"""Fork and delete over RPC (F1, F2, F3, F4): a real Gateway, a scripted model, a WebSocket client."""

from __future__ import annotations

from typing import Any

import pytest

from commons import jsonrpc
from commons.jsonrpc import RpcError
from tests.gateway.live import LiveGateway, WsClient, busy_session, error_code, is_state


def turns(live: LiveGateway, client: WsClient, *pairs: tuple[str, str]) -> dict[str, Any]:
    """A session with finished turns (question, scripted answer); subscribed on ``client``."""
    session = client.call("session.create", {"title": "original"})
    client.call("events.subscribe", {"session_id": session["id"]})
    for question, answer in pairs:
        live.model.enqueue(answer)
        client.call("session.send", {"session_id": session["id"], "text": question})
        client.event(is_state("completed"))
    assert isinstance(session, dict)
    return session


def path(client: WsClient, session_id: str) -> list[tuple[str, str]]:
    items = client.call("session.history", {"session_id": session_id, "limit": 100})["items"]
    return [(e["kind"], e["text"]) for e in reversed(items)]


def ids(client: WsClient, session_id: str) -> list[int]:
    items = client.call("session.history", {"session_id": session_id, "limit": 100})["items"]
    return [e["id"] for e in reversed(items)]


def test_f1_fork_at_an_entry_keeps_that_path_and_leaves_the_original_alone(gateway: LiveGateway) -> None:
    with gateway.ws() as client:
        original = turns(gateway, client, ("q1", "a1"), ("q2", "a2"))
        e1, e2, _, _ = ids(client, original["id"])
        forked = client.call("session.fork", {"session_id": original["id"], "entry_id": e2, "title": "branch"})
        assert forked["draft"] is None
        assert forked["interrupted"] is None
        fork = forked["session"]
        assert (fork["title"], fork["forked_from"], fork["head"]) == ("branch", original["id"], e2)
        assert fork["id"] != original["id"]
        assert path(client, fork["id"]) == [("user", "q1"), ("assistant", "a1")]
        assert path(client, original["id"])[-1] == ("assistant", "a2")
        # The fork is a conversation of its own: it goes on without touching the original.
        gateway.model.enqueue("a3 on the branch")
        client.call("events.subscribe", {"session_id": fork["id"]})
        client.call("session.send", {"session_id": fork["id"], "text": "q3"})
        client.event(is_state("completed"))
        assert path(client, fork["id"])[2:] == [("user", "q3"), ("assistant", "a3 on the branch")]
        assert len(path(client, original["id"])) == 4
        # The default point is the head.
        whole = client.call("session.fork", {"session_id": original["id"]})["session"]
        assert path(client, whole["id"]) == path(client, original["id"])
        assert whole["title"] == "original (fork)"
        assert error_code(lambda: client.call("session.fork", {"session_id": original["id"], "entry_id": 999})) == (
            jsonrpc.NOT_FOUND
        )
        assert e1 < e2


def test_f1_fork_before_a_user_message_returns_its_text_as_a_draft_and_sends_nothing(gateway: LiveGateway) -> None:
    with gateway.ws() as client:
        original = turns(gateway, client, ("q1", "a1"), ("q2", "a2"))
        e1, e2, e3, _ = ids(client, original["id"])
        calls = len(gateway.model.requests)
        forked = client.call("session.fork", {"session_id": original["id"], "entry_id": e3, "before": True})
        assert forked["draft"] == "q2"
        assert forked["session"]["head"] == e2
        assert path(client, forked["session"]["id"]) == [("user", "q1"), ("assistant", "a1")]
        assert client.call("session.queue.list", {"session_id": forked["session"]["id"]}) == []
        # Before the very first message: an empty conversation, and its text back.
        root = client.call("session.fork", {"session_id": original["id"], "entry_id": e1, "before": True})
        assert root["draft"] == "q1"
        assert root["session"]["head"] is None
        assert path(client, root["session"]["id"]) == []
        assert len(gateway.model.requests) == calls  # nothing was sent to the model
        with pytest.raises(RpcError) as caught:
            client.call("session.fork", {"session_id": original["id"], "entry_id": e2, "before": True})
        assert caught.value.code == jsonrpc.INVALID_PARAMS
        assert "user message" in caught.value.message
        assert error_code(lambda: client.call("session.fork", {"session_id": original["id"], "before": True})) == (
            jsonrpc.INVALID_PARAMS
        )


def test_f1_f2_fork_of_a_running_session_stops_the_captured_work_and_the_fork_stays(gateway: LiveGateway) -> None:
    with gateway.ws() as client:
        busy = busy_session(gateway, client)
        follow = client.call("session.send", {"session_id": busy.id, "text": "later", "kind": "follow_up"})
        forked = client.call("session.fork", {"session_id": busy.id})
        # The answer comes once the captured work has settled (proved on the Gateway's own loop by
        # test_settling_and_guards.py::test_f2_the_fork_is_answered_only_once_the_captured_work_settled).
        assert forked["interrupted"] == busy.execution_id
        assert forked["settle_error"] is None
        client.event(is_state("interrupted", busy.execution_id))
        assert client.call("session.get", {"session_id": busy.id})["running_execution"] is None
        fork = forked["session"]
        assert client.call("session.get", {"session_id": fork["id"]})["session"]["forked_from"] == busy.id
        # Active work and queues are not copied; the original keeps its queue (a stop keeps pending items).
        assert client.call("session.get", {"session_id": fork["id"]})["running_execution"] is None
        assert client.call("session.queue.list", {"session_id": fork["id"]}) == []
        assert [x["id"] for x in client.call("session.queue.list", {"session_id": busy.id})] == [follow["id"]]
        assert path(client, fork["id"]) == [("user", "start")]
        # A late stop of the captured execution reaches nothing.
        stop = {"session_id": busy.id, "execution_id": busy.execution_id}
        assert client.call("session.stop", stop) == {"stopped": False}


def test_f3_delete_with_unfinished_work_is_a_conflict_that_neither_stops_nor_deletes(gateway: LiveGateway) -> None:
    with gateway.ws() as client:
        busy = busy_session(gateway, client)
        with pytest.raises(RpcError) as caught:
            client.call("session.delete", {"session_id": busy.id})
        assert caught.value.code == jsonrpc.CONFLICT
        assert client.call("session.get", {"session_id": busy.id})["running_execution"] == busy.execution_id
        client.call("session.send", {"session_id": busy.id, "text": "queued", "kind": "follow_up"})
        client.call("session.stop", {"session_id": busy.id, "execution_id": busy.execution_id})
        client.event(is_state("interrupted", busy.execution_id))
        # Nothing runs now, but an item is still queued: still a conflict, and the item stays.
        with pytest.raises(RpcError) as caught:
            client.call("session.delete", {"session_id": busy.id})
        assert caught.value.code == jsonrpc.CONFLICT
        assert "pending" in caught.value.message
        assert len(client.call("session.queue.list", {"session_id": busy.id})) == 1
        client.call("session.queue.clear", {"session_id": busy.id})
        assert client.call("session.delete", {"session_id": busy.id}) is None
        with pytest.raises(RpcError) as caught:
            client.call("session.get", {"session_id": busy.id})
        assert caught.value.code == jsonrpc.NOT_FOUND


def test_f3_delete_keeps_the_history_a_fork_still_reaches(gateway: LiveGateway) -> None:
    with gateway.ws() as client:
        original = turns(gateway, client, ("q1", "a1"), ("q2", "a2"))
        _, e2, _, _ = ids(client, original["id"])
        fork = client.call("session.fork", {"session_id": original["id"], "entry_id": e2})["session"]
        fork_of_fork = client.call("session.fork", {"session_id": fork["id"]})["session"]
        client.call("session.delete", {"session_id": original["id"]})
        client.call("session.delete", {"session_id": fork["id"]})
        assert path(client, fork_of_fork["id"]) == [("user", "q1"), ("assistant", "a1")]
        assert [s["id"] for s in client.call("session.list")["items"]] == [fork_of_fork["id"]]
        # What it kept is whole: it still goes on from there, and the model sees the kept history.
        gateway.model.enqueue("a3")
        client.call("events.subscribe", {"session_id": fork_of_fork["id"]})
        client.call("session.send", {"session_id": fork_of_fork["id"], "text": "q3"})
        client.event(is_state("completed"))
        assert [m.text for m in gateway.model.requests[-1].messages] == ["q1", "a1", "q3"]
        hits = client.call("session.search", {"query": "q2"})
        assert hits == []  # the deleted branch's own message is gone from search
