"""JSON-RPC 2.0 as the Gateway speaks it (G2): every bad frame gets an error reply with a stable code and a
message for people, harms nothing else, and never carries a traceback. Most cases go straight to the
Dispatcher (fast, no transport); the last ones go over real HTTP and WebSocket on loopback."""

from __future__ import annotations

import json
import logging
from typing import Any

import msgspec
import pytest
from websockets.exceptions import ConnectionClosed

from anyy.api.methods import MethodSpec
from anyy.api.params import NoParams
from anyy.gateway.dispatcher import MAX_BATCH, MAX_FRAME_BYTES, Dispatcher
from anyy.gateway.table import MethodTable
from commons import jsonrpc
from tests.gateway.live import LiveGateway


def req(method: str, params: Any = None, id: Any = 1, **extra: Any) -> bytes:
    frame: dict[str, Any] = {"jsonrpc": "2.0", "method": method, **extra}
    if params is not None:
        frame["params"] = params
    if id is not None:
        frame["id"] = id
    return json.dumps(frame, ensure_ascii=False).encode()


def error_of(reply: Any) -> tuple[int, str]:
    assert isinstance(reply, dict), reply
    assert reply["jsonrpc"] == "2.0"
    assert "result" not in reply
    return reply["error"]["code"], reply["error"]["message"]


def test_g2_a_frame_that_is_not_json_is_a_parse_error(dispatcher_only: LiveGateway) -> None:
    reply = dispatcher_only.dispatch(b'{"jsonrpc": "2.0", "method": ')
    assert reply["id"] is None
    code, message = error_of(reply)
    assert code == jsonrpc.PARSE_ERROR
    assert "not valid JSON" in message


@pytest.mark.parametrize(
    "frame",
    [
        b"42",
        b'"gateway.status"',
        b"null",
        b'{"jsonrpc": "1.0", "method": "gateway.status", "id": 7}',
        b'{"method": "gateway.status", "id": 7}',
        b'{"jsonrpc": "2.0", "method": 5, "id": 7}',
        b'{"jsonrpc": "2.0", "method": "gateway.status", "id": 7, "extra": true}',
        b'{"jsonrpc": "2.0", "method": "gateway.status", "id": {"an": "object"}}',
        b'{"jsonrpc": "2.0", "method": "gateway.status", "params": 3, "id": 7}',
        b"[]",
    ],
)
def test_g2_a_frame_that_is_not_a_request_is_an_invalid_request(dispatcher_only: LiveGateway, frame: bytes) -> None:
    reply = dispatcher_only.dispatch(frame)
    code, message = error_of(reply)
    assert code == jsonrpc.INVALID_REQUEST
    assert message
    if b'"id": 7' in frame:
        assert reply["id"] == 7  # the caller can still match the reply when its id was readable


def test_g2_an_unknown_method_says_which_one_was_meant(dispatcher_only: LiveGateway) -> None:
    code, message = error_of(dispatcher_only.dispatch(req("session.creat")))
    assert code == jsonrpc.METHOD_NOT_FOUND
    assert "'session.creat'" in message
    assert "did you mean session.create?" in message
    assert "docs/api.md" in message
    code, message = error_of(dispatcher_only.dispatch(req("zzzz")))
    assert code == jsonrpc.METHOD_NOT_FOUND
    assert "did you mean" not in message


@pytest.mark.parametrize(
    ("method", "params", "mentions"),
    [
        ("session.get", {"session_id": 5}, "session_id"),  # wrong type
        ("session.get", {}, "session_id"),  # missing
        ("gateway.status", {"bogus": 1}, "bogus"),  # unknown field
        ("session.create", {"kind": "secret"}, "kind"),  # not one of the literals
        ("session.list", {"limit": "ten"}, "limit"),
        ("session.queue.modes", {"session_id": "s", "steering": "some"}, "steering"),
    ],
)
def test_g2_invalid_params_name_the_field(
    dispatcher_only: LiveGateway, method: str, params: dict[str, Any], mentions: str
) -> None:
    code, message = error_of(dispatcher_only.dispatch(req(method, params)))
    assert code == jsonrpc.INVALID_PARAMS
    assert method in message
    assert mentions in message


def test_g2_params_must_be_named(dispatcher_only: LiveGateway) -> None:
    code, message = error_of(dispatcher_only.dispatch(req("session.get", ["ses_x"])))
    assert code == jsonrpc.INVALID_PARAMS
    assert "by name" in message


def test_g2_a_notification_gets_no_reply_but_is_carried_out(dispatcher_only: LiveGateway) -> None:
    assert dispatcher_only.dispatch(req("session.create", {"title": "by notification"}, id=None)) is None
    # Even a failing notification is not answered.
    assert dispatcher_only.dispatch(req("session.get", {"session_id": "ses_missing"}, id=None)) is None
    assert dispatcher_only.dispatch(req("no.such.method", id=None)) is None
    titles = [s["title"] for s in dispatcher_only.call("session.list")["items"]]
    assert titles == ["by notification"]


def test_g2_a_batch_answers_each_call_in_order_and_skips_notifications(dispatcher_only: LiveGateway) -> None:
    frame = json.dumps(
        [
            {"jsonrpc": "2.0", "method": "gateway.status", "id": "a"},
            {"jsonrpc": "2.0", "method": "session.create", "params": {"title": "n"}},
            {"jsonrpc": "2.0", "method": "session.get", "params": {"session_id": "ses_nope"}, "id": "b"},
            {"oops": True},
            {"jsonrpc": "2.0", "method": "gateway.stats", "id": 3},
        ]
    )
    replies = dispatcher_only.dispatch(frame)
    assert [r["id"] for r in replies] == ["a", "b", None, 3]
    assert replies[0]["result"]["profile"] == "default"
    assert [r["error"]["code"] for r in replies[1:]] == [
        jsonrpc.NOT_FOUND,
        jsonrpc.INVALID_REQUEST,
        jsonrpc.METHOD_NOT_FOUND,
    ]
    # A batch of notifications only is answered by nothing at all.
    assert dispatcher_only.dispatch(json.dumps([{"jsonrpc": "2.0", "method": "gateway.status"}] * 2)) is None


def test_g2_a_batch_too_large_is_refused_whole(dispatcher_only: LiveGateway) -> None:
    frame = json.dumps([{"jsonrpc": "2.0", "method": "session.create", "id": i} for i in range(MAX_BATCH + 1)])
    code, message = error_of(dispatcher_only.dispatch(frame))
    assert code == jsonrpc.INVALID_REQUEST
    assert str(MAX_BATCH) in message
    assert dispatcher_only.call("session.list")["items"] == []  # nothing of it ran


def test_g2_an_oversized_frame_is_refused_in_bytes_not_characters(dispatcher_only: LiveGateway) -> None:
    big = req("session.create", {"title": "x" * MAX_FRAME_BYTES})
    code, message = error_of(dispatcher_only.dispatch(big))
    assert code == jsonrpc.INVALID_REQUEST
    assert "too large" in message
    # A text frame (as a WebSocket delivers it) of multi-byte characters: fewer characters than the
    # limit, more bytes.
    wide = req("session.create", {"title": "€" * (MAX_FRAME_BYTES // 3 + 10)}).decode()
    assert len(wide) < MAX_FRAME_BYTES < len(wide.encode())
    code, message = error_of(dispatcher_only.dispatch(wide))
    assert code == jsonrpc.INVALID_REQUEST
    assert "too large" in message
    assert dispatcher_only.call("session.list")["items"] == []


def test_g2_ids_are_echoed_as_given(dispatcher_only: LiveGateway) -> None:
    for id in (0, -1, "abc", "", 2**40):
        reply = dispatcher_only.dispatch(req("gateway.status", id=id))
        assert reply["id"] == id
        assert "result" in reply
    reply = dispatcher_only.dispatch(b'{"jsonrpc": "2.0", "method": "gateway.status", "id": null}')
    assert reply["id"] is None  # an explicit null id is a call (answered), not a notification


def test_g2_domain_errors_map_to_stable_codes_with_human_messages(dispatcher_only: LiveGateway) -> None:
    code, message = error_of(dispatcher_only.dispatch(req("session.get", {"session_id": "ses_gone"})))
    assert code == jsonrpc.NOT_FOUND
    assert "ses_gone" in message
    code, message = error_of(dispatcher_only.dispatch(req("session.create", {"role": "nobody"})))
    assert code in (jsonrpc.NOT_FOUND, jsonrpc.INVALID_PARAMS)
    assert "nobody" in message
    session = dispatcher_only.call("session.create")
    code, message = error_of(dispatcher_only.dispatch(req("session.send", {"session_id": session["id"], "text": " "})))
    assert code == jsonrpc.INVALID_PARAMS
    assert "text" in message


class _Boom(Exception):
    pass


def test_g2_a_fault_in_a_handler_is_an_internal_error_with_an_incident_id_and_no_traceback(
    dispatcher_only: LiveGateway, caplog: pytest.LogCaptureFixture
) -> None:
    table = MethodTable()

    @table.method(MethodSpec[NoParams, None]("test.boom", NoParams, None))
    async def boom(gw: Any, conn: Any, p: NoParams) -> None:
        """Always fails."""
        raise _Boom("secret internals: /etc/passwd line 3")

    @table.method(MethodSpec[NoParams, str]("test.ok", NoParams, str))
    async def ok(gw: Any, conn: Any, p: NoParams) -> str:
        """Works."""
        return "fine"

    assert dispatcher_only.gateway is not None
    dispatcher = Dispatcher(dispatcher_only.gateway, table)
    with caplog.at_level(logging.ERROR, logger="anyy.gateway"):
        raw = dispatcher_only.run(dispatcher.handle(req("test.boom"), None))
    assert raw is not None
    reply = json.loads(raw)
    code, message = error_of(reply)
    assert code == jsonrpc.INTERNAL_ERROR
    assert "incident" in message
    assert "secret" not in raw.decode()
    assert "Traceback" not in raw.decode()
    assert "_Boom" not in raw.decode()
    assert set(reply["error"]) == {"code", "message"}
    incident = message.split("incident ")[1].split(",")[0]
    assert any(incident in r.getMessage() and r.exc_info for r in caplog.records)  # the log has the details
    # The dispatcher goes on as before.
    again = json.loads(dispatcher_only.run(dispatcher.handle(req("test.ok"), None)) or b"")
    assert again["result"] == "fine"


# -- over the transports -----------------------------------------------------------------------------
def test_g2_over_websocket_a_bad_frame_harms_neither_the_connection_nor_its_neighbours(gateway: LiveGateway) -> None:
    with gateway.ws() as client, gateway.ws() as neighbour:
        client.send_raw("{this is not json")
        code, _ = error_of(client.receive())
        assert code == jsonrpc.PARSE_ERROR
        client.send_raw(req("session.create", {"title": "t" * (MAX_FRAME_BYTES + 1)}))
        reply = client.receive()
        assert error_of(reply)[0] == jsonrpc.INVALID_REQUEST
        assert "too large" in error_of(reply)[1]
        assert client.call("gateway.status")["profile"] == "default"
        assert neighbour.call("gateway.status")["profile"] == "default"
        # A frame beyond what the WebSocket takes at all closes that connection only.
        with gateway.ws() as victim:
            victim.send_raw("[" + " " * (17 * 1024 * 1024) + "]")
            with pytest.raises(ConnectionClosed):
                victim.receive()
        assert neighbour.call("gateway.status")["profile"] == "default"
        assert client.call("session.list")["items"] == []


def test_g2_over_http_errors_keep_their_codes_and_notifications_get_204(gateway: LiveGateway) -> None:
    status, reply = gateway.http(b"{nope")
    assert status == 200
    assert error_of(reply)[0] == jsonrpc.PARSE_ERROR
    status, reply = gateway.http(req("session.get", {"session_id": "ses_x"}))
    assert (status, error_of(reply)[0]) == (200, jsonrpc.NOT_FOUND)
    status, reply = gateway.http(req("gateway.status", id=None))
    assert (status, reply) == (204, None)
    status, reply = gateway.http(b" " * (MAX_FRAME_BYTES + 1))
    assert status == 413
    assert error_of(reply)[0] == jsonrpc.INVALID_REQUEST
    status, reply = gateway.http(json.dumps([json.loads(req("gateway.status", id=1)), {"x": 1}]))
    assert status == 200
    assert [r["id"] for r in reply] == [1, None]


def test_g2_events_subscribe_is_refused_over_http(gateway: LiveGateway) -> None:
    status, reply = gateway.http(req("events.subscribe", {}))
    assert status == 200
    code, message = error_of(reply)
    assert code == jsonrpc.INVALID_REQUEST
    assert "WebSocket" in message
    _, reply = gateway.http(req("events.unsubscribe", {"subscription": "sub-1"}))
    assert error_of(reply)[0] == jsonrpc.INVALID_REQUEST


def test_g2_replies_are_well_formed_json_rpc(gateway: LiveGateway) -> None:
    with gateway.ws() as client:
        id = client.request("gateway.status")
        reply = client.reply_to(id)
        msgspec.convert(reply, jsonrpc.Response)
        assert set(reply) == {"jsonrpc", "id", "result"}
