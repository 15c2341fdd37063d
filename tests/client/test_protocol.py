"""The client's core without I/O: what it makes of the frames a Gateway (perhaps a newer one) sends."""

from __future__ import annotations

import pytest

from anyy.api.events import QueueChanged
from anyy.client.errors import BY_CODE, CallFailed, ProtocolError, call_failed
from anyy.client.protocol import Protocol, Reply
from commons import jsonrpc


def test_g2_an_event_type_this_client_does_not_know_is_skipped() -> None:
    protocol = Protocol()
    frame = b'{"jsonrpc":"2.0","method":"event","params":{"type":"from_the_future","session_id":"s"}}'
    assert protocol.read(frame) is None
    known = protocol.read(b'{"jsonrpc":"2.0","method":"event","params":{"type":"queue_changed","session_id":"s"}}')
    assert known == QueueChanged(session_id="s")


def test_g2_what_is_not_json_rpc_is_a_protocol_error() -> None:
    with pytest.raises(ProtocolError, match="not a JSON-RPC message"):
        Protocol().read(b"[1, 2")


def test_g2_a_result_of_the_wrong_shape_is_a_protocol_error() -> None:
    reply = Protocol().read(b'{"jsonrpc":"2.0","id":1,"result":{"subscription":3}}')
    assert isinstance(reply, Reply)
    from anyy.api.gateway import Subscribed

    with pytest.raises(ProtocolError, match="does not match"):
        reply.result(Subscribed)


def test_g2_every_stable_code_has_its_exception() -> None:
    assert set(BY_CODE) == set(jsonrpc.ERROR_NAMES)
    for code, name in jsonrpc.ERROR_NAMES.items():
        error = call_failed(code, "why")
        assert (error.code, error.name, error.message) == (code, name, "why")
    unknown = call_failed(-1, "odd")
    assert type(unknown) is CallFailed
