"""Server-pushed events (G2): after events.subscribe, a session's work arrives on the WebSocket as
``event`` notifications: text deltas, entries appended, queue changes, execution states."""

from __future__ import annotations

from typing import Any

from anyy.domain.model_io import TextDelta
from commons import jsonrpc
from tests.gateway.live import LiveGateway, error_code, is_state


def test_g2_subscribe_then_send_pushes_deltas_entries_and_states(gateway: LiveGateway) -> None:
    with gateway.ws() as client:
        session = client.call("session.create")
        subscribed = client.call("events.subscribe", {"session_id": session["id"]})
        assert subscribed["subscription"].startswith("sub-")
        gateway.model.enqueue([TextDelta(text="Hel"), TextDelta(text="lo")])
        client.call("session.send", {"session_id": session["id"], "text": "hi"})
        raw: list[dict[str, Any]] = []
        while not raw or not is_state("completed")(raw[-1]["params"]):
            message = client.receive()
            assert "id" not in message  # a notification: never answered, never an id
            assert (message["jsonrpc"], message["method"]) == ("2.0", "event")
            raw.append(message)
        events = [m["params"] for m in raw]
        kinds = [e["type"] for e in events]
        assert {"queue_changed", "entries_appended", "execution_state", "text_delta"} <= set(kinds)
        assert all(e["session_id"] == session["id"] for e in events)
        assert "".join(e["text"] for e in events if e["type"] == "text_delta") == "Hello"
        states = [e["state"] for e in events if e["type"] == "execution_state"]
        assert states == ["running", "completed"]
        appended = [i for e in events if e["type"] == "entries_appended" for i in e["entry_ids"]]
        history = client.call("session.history", {"session_id": session["id"]})["items"]
        assert sorted(appended) == sorted(e["id"] for e in history)
        assert kinds.index("text_delta") < kinds.index("execution_state", kinds.index("text_delta"))


def test_g2_a_subscription_to_every_session_and_unsubscribe(gateway: LiveGateway) -> None:
    with gateway.ws() as watcher, gateway.ws() as sender:
        subscription = watcher.call("events.subscribe", {})["subscription"]
        one = sender.call("session.create")
        two = sender.call("session.create")
        gateway.model.enqueue("first", "second")
        sender.call("session.send", {"session_id": one["id"], "text": "a"})
        sender.call("session.send", {"session_id": two["id"], "text": "b"})
        done = {watcher.event(is_state("completed"))["session_id"], watcher.event(is_state("completed"))["session_id"]}
        assert done == {one["id"], two["id"]}
        assert watcher.call("events.unsubscribe", {"subscription": subscription}) is None
        watcher.events.clear()
        gateway.model.enqueue("third")
        sender.call("events.subscribe", {"session_id": one["id"]})
        sender.call("session.send", {"session_id": one["id"], "text": "c"})
        sender.event(is_state("completed"))
        # The watcher's next message is the reply to its own call: no event came after unsubscribing.
        assert watcher.call("gateway.status")["profile"] == "default"
        assert watcher.events == []


def test_g2_subscribing_to_a_missing_session_is_not_found_and_over_http_is_refused(gateway: LiveGateway) -> None:
    with gateway.ws() as client:
        assert error_code(lambda: client.call("events.subscribe", {"session_id": "ses_nope"})) == jsonrpc.NOT_FOUND
    status, reply = gateway.http(jsonrpc.request("events.subscribe", {}, 1))
    assert status == 200
    assert reply["error"]["code"] == jsonrpc.INVALID_REQUEST
