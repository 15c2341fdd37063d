"""U1 with D8 over RPC: ``session.send`` with ``new`` creates a session and its first message at once, on a
real Gateway over WebSocket. A retry with the same key makes no second session; a refusal makes none."""

from __future__ import annotations

import functools
import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from commons import jsonrpc
from tests.gateway.live import LiveGateway, error_code, is_state, put_object


def _sessions(gateway: LiveGateway) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = gateway.call("session.list")["items"]
    return items


def test_u1_send_with_new_creates_the_session_with_its_choices_and_runs_the_message(gateway: LiveGateway) -> None:
    gateway.model.enqueue("hello back")
    with gateway.ws() as client:
        client.call("events.subscribe")
        new = {"role": "default", "provider": "offline", "model": "offline", "effort": "high", "tools": ["memory"]}
        sub = client.call("session.send", {"new": new, "text": "hello there", "idempotency_key": uuid.uuid4().hex})
        client.event(is_state("completed"))
    [session] = _sessions(gateway)
    assert (sub["session_id"], sub["text"]) == (session["id"], "hello there")
    assert (session["effort"], session["tools"]["enabled"]) == ("high", ["memory"])
    assert session["title"]  # named from its first message (then perhaps by the model)
    history = gateway.call("session.history", {"session_id": session["id"]})["items"]
    assert [(e["kind"], e["text"]) for e in reversed(history) if e["kind"] in ("user", "assistant")] == [
        ("user", "hello there"),
        ("assistant", "hello back"),
    ]


def test_u1_a_first_send_retried_with_its_key_creates_one_session(gateway: LiveGateway) -> None:
    gateway.model.enqueue("only once")
    params = {"new": {}, "text": "make me once", "idempotency_key": uuid.uuid4().hex}
    with ThreadPoolExecutor(4) as pool:  # the retries race the first send: still one session, one submission
        subs = list(pool.map(lambda _: _call_alone(gateway, params), range(4)))
    assert len({(s["id"], s["session_id"]) for s in subs}) == 1
    [session] = _sessions(gateway)
    assert session["id"] == subs[0]["session_id"]
    again = gateway.call("session.send", params)  # later, whatever became of it
    assert (again["id"], again["session_id"]) == (subs[0]["id"], session["id"])
    other = {**params, "text": "another message"}
    assert error_code(lambda: gateway.call("session.send", other)) == jsonrpc.CONFLICT
    assert [s["id"] for s in _sessions(gateway)] == [session["id"]]


def _call_alone(gateway: LiveGateway, params: dict[str, Any]) -> dict[str, Any]:
    with gateway.ws() as client:
        result: dict[str, Any] = client.call("session.send", params)
        return result


def test_u1_a_refused_first_send_creates_nothing(gateway: LiveGateway) -> None:
    lost = {**put_object(gateway, b"abc"), "object": "0" * 64}
    refused: list[dict[str, Any]] = [
        {"new": {}, "text": "x", "attachments": [lost]},  # a file the Gateway does not hold
        {"new": {"model": "no-such-model"}, "text": "x"},
        {"new": {"provider": "nowhere"}, "text": "x"},
        {"new": {"provider": "anthropic"}, "text": "x"},  # lists no models: a model must be named
        {"new": {"role": "no-such-role"}, "text": "x"},
        {"new": {"tools": ["no_such_tool"]}, "text": "x"},
        {"new": {"colour": "red"}, "text": "x"},
        {"new": {}, "text": "x", "idempotency_key": ""},
        {"text": "x"},  # neither a session nor a new one
    ]
    for params in refused:
        code = error_code(functools.partial(gateway.call, "session.send", params))
        assert code in (jsonrpc.INVALID_PARAMS, jsonrpc.NOT_FOUND), params
    session = gateway.call("session.create")
    both = {"session_id": session["id"], "new": {}, "text": "x"}
    assert error_code(lambda: gateway.call("session.send", both)) == jsonrpc.INVALID_PARAMS
    assert [s["id"] for s in _sessions(gateway)] == [session["id"]]
