"""The two queues over RPC (Q3, Q6, Q7) and missing ids (X1, A1), on a real Gateway over WebSocket."""

from __future__ import annotations

from pathlib import Path

import pytest

from commons import jsonrpc
from commons.jsonrpc import RpcError
from tests.gateway.live import LiveGateway, busy_session, error_code, is_state, put_object


def test_q6_peek_and_list_show_steering_first_then_follow_ups(gateway: LiveGateway) -> None:
    with gateway.ws() as client:
        busy = busy_session(gateway, client)
        a = client.call("session.send", {"session_id": busy.id, "text": "follow a", "kind": "follow_up"})
        s = client.call("session.send", {"session_id": busy.id, "text": "steer s", "kind": "steering"})
        b = client.call("session.send", {"session_id": busy.id, "text": "follow b", "kind": "follow_up"})
        listed = client.call("session.queue.list", {"session_id": busy.id})
        assert [x["id"] for x in listed] == [s["id"], a["id"], b["id"]]
        assert all(x["state"] == "pending" for x in listed)
        assert client.call("session.queue.peek", {"session_id": busy.id})["id"] == s["id"]
        client.call("session.queue.clear", {"session_id": busy.id})
        assert client.call("session.queue.peek", {"session_id": busy.id}) is None
        busy.gate.open()
        client.event(is_state("completed", busy.execution_id))


def test_q6_clear_returns_the_removed_items_and_keeps_their_bodies(gateway: LiveGateway) -> None:
    with gateway.ws() as client:
        busy = busy_session(gateway, client)
        steer = client.call("session.send", {"session_id": busy.id, "text": "steer me", "kind": "steering"})
        f1 = client.call("session.send", {"session_id": busy.id, "text": "one", "kind": "follow_up"})
        f2 = client.call("session.send", {"session_id": busy.id, "text": "two", "kind": "follow_up"})
        removed = client.call("session.queue.clear", {"session_id": busy.id, "kind": "follow_up"})
        assert [(x["id"], x["text"], x["state"]) for x in removed] == [
            (f1["id"], "one", "cleared"),
            (f2["id"], "two", "cleared"),
        ]
        assert [x["id"] for x in client.call("session.queue.list", {"session_id": busy.id})] == [steer["id"]]
        removed = client.call("session.queue.clear", {"session_id": busy.id})
        assert [x["id"] for x in removed] == [steer["id"]]
        assert client.call("session.queue.clear", {"session_id": busy.id}) == []
        # Leaving the queue keeps the recorded body: the submission still answers with its text.
        kept = client.call("session.wait", {"submission_id": f2["id"], "timeout": 0})
        assert (kept["state"], kept["text"]) == ("cleared", "two")
        busy.gate.open()
        client.event(is_state("completed", busy.execution_id))
        # Nothing of the transcript went: the response that was running is recorded whole.
        history = client.call("session.history", {"session_id": busy.id})["items"]
        assert [(e["kind"], e["text"]) for e in reversed(history)] == [("user", "start"), ("assistant", "done")]


def test_q6_steer_moves_a_follow_up_to_the_steering_queue(gateway: LiveGateway) -> None:
    with gateway.ws() as client:
        busy = busy_session(gateway, client)
        f = client.call("session.send", {"session_id": busy.id, "text": "go left", "kind": "follow_up"})
        moved = client.call("session.queue.steer", {"submission_id": f["id"], "version": f["version"]})
        assert (moved["kind"], moved["state"], moved["version"]) == ("steering", "pending", f["version"] + 1)
        gateway.model.enqueue("turning left")
        busy.gate.open()
        client.event(is_state("completed", busy.execution_id))
        history = client.call("session.history", {"session_id": busy.id})["items"]
        # Read at the next checkpoint of the same execution, not as a new response.
        assert [e["text"] for e in reversed(history)] == ["start", "done", "go left", "turning left"]


def test_q6_update_changes_one_item_and_keeps_attachments_unless_given(gateway: LiveGateway) -> None:
    with gateway.ws() as client:
        busy = busy_session(gateway, client)
        note = put_object(gateway, b"the note", "note.txt")
        other = put_object(gateway, b"another", "other.txt")
        f = client.call(
            "session.send",
            {"session_id": busy.id, "text": "first draft", "kind": "follow_up", "attachments": [note]},
        )
        g = client.call("session.send", {"session_id": busy.id, "text": "untouched", "kind": "follow_up"})
        edited = client.call("session.queue.update", {"submission_id": f["id"], "text": "second draft"})
        assert edited["text"] == "second draft"
        assert [a["object"] for a in edited["attachments"]] == [note["object"]]
        assert edited["version"] == f["version"] + 1
        replaced = client.call("session.queue.update", {"submission_id": f["id"], "attachments": [other]})
        assert replaced["text"] == "second draft"
        assert [a["name"] for a in replaced["attachments"]] == ["other.txt"]
        bare = client.call("session.queue.update", {"submission_id": f["id"], "attachments": []})
        assert bare["attachments"] == []
        listed = client.call("session.queue.list", {"session_id": busy.id})
        assert [(x["id"], x["text"]) for x in listed] == [(f["id"], "second draft"), (g["id"], "untouched")]
        # An edit that would leave nothing to send is refused and changes nothing.
        assert error_code(lambda: client.call("session.queue.update", {"submission_id": f["id"], "text": " "})) == (
            jsonrpc.INVALID_PARAMS
        )
        assert client.call("session.queue.peek", {"session_id": busy.id})["text"] == "second draft"
        client.call("session.queue.clear", {"session_id": busy.id})
        busy.gate.open()
        client.event(is_state("completed", busy.execution_id))


def test_q6_cancel_removes_one_item_and_keeps_its_body(gateway: LiveGateway) -> None:
    with gateway.ws() as client:
        busy = busy_session(gateway, client)
        f = client.call("session.send", {"session_id": busy.id, "text": "never mind", "kind": "follow_up"})
        g = client.call("session.send", {"session_id": busy.id, "text": "keep me", "kind": "follow_up"})
        cancelled = client.call("session.queue.cancel", {"submission_id": f["id"]})
        assert (cancelled["state"], cancelled["text"]) == ("cancelled", "never mind")
        assert [x["id"] for x in client.call("session.queue.list", {"session_id": busy.id})] == [g["id"]]
        gateway.model.enqueue("kept it")
        busy.gate.open()
        client.event(is_state("completed", busy.execution_id))
        client.event(is_state("completed"))  # the follow-up that stayed runs next
        assert client.call("session.wait", {"submission_id": g["id"], "timeout": 5})["state"] == "completed"
        assert client.call("session.wait", {"submission_id": f["id"], "timeout": 0})["state"] == "cancelled"


def test_q3_a_taken_item_can_no_longer_be_updated_steered_or_cancelled(gateway: LiveGateway) -> None:
    with gateway.ws() as client:
        busy = busy_session(gateway, client)
        first = client.call("session.wait", {"submission_id": busy.first["id"], "timeout": 0})
        assert first["state"] == "taken"
        for method, extra in [
            ("session.queue.update", {"text": "too late"}),
            ("session.queue.steer", {}),
            ("session.queue.cancel", {}),
        ]:
            with pytest.raises(RpcError) as caught:
                client.call(method, {"submission_id": first["id"], **extra})
            assert caught.value.code == jsonrpc.CONFLICT
            assert "no longer pending" in caught.value.message
            assert "Refresh the queue" in caught.value.message
        busy.gate.open()
        client.event(is_state("completed", busy.execution_id))
        done = client.call("session.wait", {"submission_id": first["id"], "timeout": 0})
        assert (done["state"], done["text"]) == ("completed", "start")
        assert error_code(lambda: client.call("session.queue.cancel", {"submission_id": first["id"]})) == (
            jsonrpc.CONFLICT
        )


def test_q3_a_stale_version_is_a_conflict_and_changes_nothing(gateway: LiveGateway) -> None:
    with gateway.ws() as client:
        busy = busy_session(gateway, client)
        f = client.call("session.send", {"session_id": busy.id, "text": "v1", "kind": "follow_up"})
        client.call("session.queue.update", {"submission_id": f["id"], "text": "v2", "version": f["version"]})
        for method, extra in [
            ("session.queue.update", {"text": "v3"}),
            ("session.queue.steer", {}),
            ("session.queue.cancel", {}),
        ]:
            with pytest.raises(RpcError) as caught:
                client.call(method, {"submission_id": f["id"], "version": f["version"], **extra})
            assert caught.value.code == jsonrpc.CONFLICT
            assert "changed since you read it" in caught.value.message
        item = client.call("session.queue.peek", {"session_id": busy.id})
        assert (item["text"], item["kind"], item["version"]) == ("v2", "follow_up", f["version"] + 1)
        client.call("session.queue.clear", {"session_id": busy.id})
        busy.gate.open()
        client.event(is_state("completed", busy.execution_id))


def test_q7_modes_are_read_and_set_independently(gateway: LiveGateway) -> None:
    with gateway.ws() as client:
        session = client.call("session.create")
        modes = client.call("session.queue.modes", {"session_id": session["id"]})
        assert modes == {"steering": "one-at-a-time", "follow_up": "one-at-a-time"}
        modes = client.call("session.queue.modes", {"session_id": session["id"], "steering": "all"})
        assert modes == {"steering": "all", "follow_up": "one-at-a-time"}
        modes = client.call("session.queue.modes", {"session_id": session["id"], "follow_up": "all"})
        assert modes == {"steering": "all", "follow_up": "all"}
        modes = client.call("session.queue.modes", {"session_id": session["id"], "steering": "one-at-a-time"})
        assert modes == {"steering": "one-at-a-time", "follow_up": "all"}
        assert error_code(
            lambda: client.call("session.queue.modes", {"session_id": session["id"], "follow_up": "steering"})
        ) == (jsonrpc.INVALID_PARAMS)
        assert client.call("session.get", {"session_id": session["id"]})["session"]["follow_up_mode"] == "all"


def test_q7_follow_up_all_takes_every_pending_follow_up_into_one_response(gateway: LiveGateway) -> None:
    with gateway.ws() as client:
        busy = busy_session(gateway, client)
        client.call("session.queue.modes", {"session_id": busy.id, "follow_up": "all"})
        client.call("session.send", {"session_id": busy.id, "text": "a", "kind": "follow_up"})
        client.call("session.send", {"session_id": busy.id, "text": "b", "kind": "follow_up"})
        gateway.model.enqueue("both")
        busy.gate.open()
        client.event(is_state("completed", busy.execution_id))
        second = client.event(is_state("completed"))
        assert second["execution_id"] != busy.execution_id
        history = client.call("session.history", {"session_id": busy.id})["items"]
        assert [e["text"] for e in reversed(history)] == ["start", "done", "a", "b", "both"]


# -- X1 and A1: missing ids ----------------------------------------------------------------------------
SESSION_METHODS = [
    ("session.get", {}),
    ("session.history", {}),
    ("session.tree", {}),
    ("session.rename", {"title": "t"}),
    ("session.send", {"text": "hello"}),
    ("session.fork", {}),
    ("session.delete", {}),
    ("session.queue.list", {}),
    ("session.queue.peek", {}),
    ("session.queue.clear", {}),
    ("session.queue.modes", {}),
    ("session.goal", {"action": "status"}),
    ("session.export", {}),
    ("events.subscribe", {}),
]


def test_x1_a_missing_session_names_the_profile_and_both_lists(gateway: LiveGateway) -> None:
    with gateway.ws() as client:
        for method, extra in SESSION_METHODS:
            with pytest.raises(RpcError) as caught:
                client.call(method, {"session_id": "ses_doesnotexist", **extra})
            assert caught.value.code == jsonrpc.NOT_FOUND, method
            message = caught.value.message
            assert "ses_doesnotexist" in message
            assert "'default'" in message, (method, message)
            assert "Chats" in message
            assert "Background" in message


def test_a1_x1_an_id_of_another_profile_is_not_found(gateway: LiveGateway, tmp_path: Path) -> None:
    with LiveGateway(tmp_path, profile_name="other", serve=False) as other:
        foreign = other.call("session.create", {"title": "elsewhere"})
        sub = other.call("session.send", {"session_id": foreign["id"], "text": "queued", "kind": "follow_up"})
        with gateway.ws() as client:
            for method, extra in SESSION_METHODS:
                with pytest.raises(RpcError) as caught:
                    client.call(method, {"session_id": foreign["id"], **extra})
                assert caught.value.code == jsonrpc.NOT_FOUND
                assert "'default'" in caught.value.message
            for method in ("session.queue.update", "session.queue.cancel", "session.queue.steer", "session.wait"):
                with pytest.raises(RpcError) as caught:
                    client.call(method, {"submission_id": sub["id"]})
                assert caught.value.code == jsonrpc.NOT_FOUND
                assert "'default'" in caught.value.message
            assert client.call("session.list")["items"] == []
        # The other profile's item was not touched by those calls: it ran (and failed: nothing scripted).
        outcome = other.call("session.wait", {"submission_id": sub["id"], "timeout": 5})
        assert (outcome["state"], outcome["text"]) == ("failed", "queued")
