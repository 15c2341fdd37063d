"""What must hold when work is in the way: a fork whose settling of the original's work fails stays
recorded (F2); a summary in progress blocks ``session.tools.configure`` (M4). A real Gateway, a scripted
model held by gates, a WebSocket client."""

from __future__ import annotations

import json
from typing import Any

import pytest

from anyy.domain.model_io import TextDelta
from anyy.providers.gates import Gate
from commons import jsonrpc
from tests.fakes.gateways import LiveGateway, WsClient, busy_session, error_code, is_state, wait_gate


def test_f2_a_fork_whose_settling_fails_stays_recorded(gateway: LiveGateway, monkeypatch: pytest.MonkeyPatch) -> None:
    """Stopping the original's captured work and waiting for it to settle can fail (a fault injected in
    the runtime's wait); the fork is on disk before that, so it is answered and kept, with the error."""
    assert gateway.gateway is not None
    runtime = gateway.gateway.runtime

    async def settling_fails(session_id: str, execution_id: str) -> None:
        raise RuntimeError("settling failed")

    with gateway.ws() as client:
        busy = busy_session(gateway, client)
        monkeypatch.setattr(runtime, "wait_settled", settling_fails)
        forked = client.call("session.fork", {"session_id": busy.id})
        monkeypatch.undo()
        assert forked["settle_error"] is not None
        assert "settling failed" in forked["settle_error"]
        assert forked["interrupted"] == busy.execution_id
        fork_id = forked["session"]["id"]
        got = client.call("session.get", {"session_id": fork_id})["session"]
        assert got["forked_from"] == busy.id
        listed = [s["id"] for s in client.call("session.list", {"limit": 50})["items"]]
        assert fork_id in listed
        client.event(is_state("interrupted", busy.execution_id))  # the stop itself was asked for


def test_f2_the_fork_is_answered_only_once_the_captured_work_settled(gateway: LiveGateway) -> None:
    """The fork's reply and, in the same step of the Gateway's loop (nothing can run in between), the
    runtime's view of the original: its captured execution is over by the time the fork answers."""
    assert gateway.gateway is not None
    assert gateway.dispatcher is not None
    runtime, dispatcher = gateway.gateway.runtime, gateway.dispatcher
    with gateway.ws() as client:
        busy = busy_session(gateway, client)

        async def fork_then_look() -> tuple[Any, str | None]:
            reply = await dispatcher.handle(jsonrpc.request("session.fork", {"session_id": busy.id}, 1), None)
            return reply, runtime.running_execution(busy.id)

        reply, running = gateway.run(fork_then_look())
        assert running is None
        forked = jsonrpc.result_of(json.loads(reply))
        assert forked["interrupted"] == busy.execution_id
        ref = {"session_id": busy.id, "execution_id": busy.execution_id}
        assert client.call("session.execution", ref)["state"] == "interrupted"


def _two_turns(live: LiveGateway, client: WsClient) -> tuple[str, list[dict[str, Any]]]:
    session = client.call("session.create")
    client.call("events.subscribe", {"session_id": session["id"]})
    for question, answer in (("q1", "a1"), ("q2", "a2")):
        live.model.enqueue(answer)
        client.call("session.send", {"session_id": session["id"], "text": question})
        client.event(is_state("completed"))
    items = client.call("session.history", {"session_id": session["id"], "limit": 10})["items"]
    return str(session["id"]), list(reversed(items))


def test_m4_b_a_summary_in_progress_blocks_tools_configure(gateway: LiveGateway) -> None:
    """Navigating with a summary of the branch left: while the model writes that summary (held by a
    gate), configuring the session's tools is a conflict, and nothing changed."""
    with gateway.ws() as client:
        session_id, entries = _two_turns(gateway, client)
        before = client.call("session.get", {"session_id": session_id})["session"]["tools"]
        gate = Gate("summary held")
        gateway.model.enqueue([gate, TextDelta(text="the branch, summarised")])
        navigating = client.request(
            "session.navigate", {"session_id": session_id, "entry_id": entries[1]["id"], "summarize": True}
        )
        wait_gate(gate)
        configure = {"session_id": session_id, "enabled": ["read_file"], "codemode": False}
        # Answered at once (a wrong guard would wait behind the navigation and then succeed).
        assert error_code(lambda: client.call("session.tools.configure", configure)) == jsonrpc.CONFLICT
        gate.open()
        moved = jsonrpc.result_of(client.reply_to(navigating))
        assert moved["summary_applied"] is True
        assert client.call("session.get", {"session_id": session_id})["session"]["tools"] == before
        # Once the navigation is over, the same call is accepted.
        configured = client.call("session.tools.configure", configure)
        assert configured["tools"]["enabled"] == ["read_file"]
