"""anyy.client's asynchronous front end (the TUI's) against a real Gateway on loopback: calls matched to
their replies while events stream in, typed; the loss of the connection reported once, and to the
calls still waiting (SPEC G2)."""

from __future__ import annotations

import asyncio

import pytest

from anyy.api import methods as m
from anyy.api.events import ExecutionStateChanged, RuntimeEvent, TextDeltaEvent
from anyy.api.params import CreateParams, SendParams, SessionRef, SubscribeParams
from anyy.client.aio import AsyncClient
from anyy.client.errors import GatewayUnavailable, NotFoundError
from anyy.domain.model_io import TextDelta
from anyy.providers.gates import Gate
from tests.client.conftest import address_of
from tests.gateway.live import LiveGateway

TIMEOUT = 30.0


def test_g2_async_calls_and_typed_events(gateway: LiveGateway) -> None:
    gateway.model.enqueue([TextDelta(text="a"), TextDelta(text="sync")])

    async def scenario() -> None:
        events: list[RuntimeEvent] = []
        settled = asyncio.Event()

        def on_event(event: RuntimeEvent) -> None:
            events.append(event)
            if isinstance(event, ExecutionStateChanged) and event.state == "completed":
                settled.set()

        client = await AsyncClient.connect(address_of(gateway), on_event, lambda why: None)
        try:
            session = await client.call(m.SESSION_CREATE, CreateParams())
            await client.call(m.EVENTS_SUBSCRIBE, SubscribeParams(session_id=session.id))
            sent = await client.call(m.SESSION_SEND, SendParams(session_id=session.id, text="go"))
            await asyncio.wait_for(settled.wait(), TIMEOUT)
            with pytest.raises(NotFoundError):
                await client.call(m.SESSION_GET, SessionRef(session_id="ses_nosuch"))
        finally:
            await client.close()
        assert "".join(e.text for e in events if isinstance(e, TextDeltaEvent)) == "async"
        states = [e for e in events if isinstance(e, ExecutionStateChanged)]
        assert all(sent.id in e.submission_ids for e in states)

    asyncio.run(scenario())


def test_g2_a_lost_connection_is_reported_and_fails_the_waiting_calls(gateway: LiveGateway) -> None:
    gate = Gate()
    gateway.model.enqueue([gate, TextDelta(text="never read")])

    async def scenario() -> None:
        closed: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        client = await AsyncClient.connect(address_of(gateway), lambda event: None, closed.set_result)
        try:
            session = await client.call(m.SESSION_CREATE, CreateParams())
            sent = await client.call(m.SESSION_SEND, SendParams(session_id=session.id, text="hold"))
            await asyncio.to_thread(gate.reached.wait_blocking, TIMEOUT)
            waiting = asyncio.ensure_future(client.call("session.wait", {"submission_id": sent.id, "timeout": 60}))
            await asyncio.to_thread(gateway.close)
            why = await asyncio.wait_for(closed, TIMEOUT)
            assert f"the Gateway of profile {gateway.profile.name} closed the connection" in why
            with pytest.raises(GatewayUnavailable):
                await asyncio.wait_for(waiting, TIMEOUT)
            with pytest.raises(GatewayUnavailable):  # and every later call, at once
                await client.call(m.SESSION_GET, SessionRef(session_id=session.id))
        finally:
            await client.close()

    asyncio.run(scenario())


def test_g1_a_wrong_token_closes_the_connection_saying_why(gateway: LiveGateway) -> None:
    async def scenario() -> str:
        closed: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        wrong = address_of(gateway, token="not-the-token-" + "y" * 20)
        client = await AsyncClient.connect(wrong, lambda event: None, closed.set_result)
        try:
            return await asyncio.wait_for(closed, TIMEOUT)
        finally:
            await client.close()

    assert asyncio.run(scenario()).startswith("unauthorized: this Gateway needs its profile's access token")
