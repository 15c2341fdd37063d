"""anyy.client's synchronous front end against a real Gateway on loopback: results decoded into the
anyy.api types, events into the api's event union, error replies into one exception per stable code
(SPEC G1, G2, X3)."""

from __future__ import annotations

from pathlib import Path

import pytest

from anyy.api import methods as m
from anyy.api.entries import AssistantData, UserData
from anyy.api.events import EntriesAppended, ExecutionStateChanged, TextDeltaEvent
from anyy.api.params import CreateParams, ItemRef, PageParams, SendParams, SessionRef, SubscribeParams, WaitParams
from anyy.api.sessions import Session, Submission
from anyy.client.errors import (
    CallFailed,
    ConflictError,
    GatewayUnavailable,
    InvalidParams,
    MethodNotFound,
    NotFoundError,
    Unauthorized,
)
from anyy.client.protocol import Reply
from anyy.client.sync import Client, connect, profile_client
from anyy.domain.model_io import TextDelta
from anyy.profiles import create_profile
from anyy.providers.gates import Gate
from commons import jsonrpc
from tests.client.conftest import address_of
from tests.gateway.live import LiveGateway

TIMEOUT = 30.0


def events_until_settled(client: Client, execution_states: int = 1) -> list[object]:
    """Events read until the execution says it completed (replies in between are not expected)."""
    seen: list[object] = []
    while True:
        message = client.receive(TIMEOUT)
        assert not isinstance(message, Reply), message
        seen.append(message)
        if isinstance(message, ExecutionStateChanged) and message.state == "completed":
            return seen


def test_g2_results_are_read_into_the_api_types(gateway: LiveGateway) -> None:
    gateway.model.enqueue("typed all the way")
    with connect(address_of(gateway)) as client:
        session = client.call(m.SESSION_CREATE, CreateParams(title="typed"))
        assert isinstance(session, Session)
        assert (session.title, session.role, session.kind) == ("typed", "default", "chat")
        sent = client.call(m.SESSION_SEND, SendParams(session_id=session.id, text="hello"))
        assert isinstance(sent, Submission)
        done = client.call(m.SESSION_WAIT, WaitParams(submission_id=sent.id, timeout=TIMEOUT))
        assert (done.id, done.state) == (sent.id, "completed")
        page = client.call(m.SESSION_HISTORY, PageParams(session_id=session.id))
        newest, oldest = page.items
        assert isinstance(oldest.data, UserData)
        assert oldest.text == "hello"
        assert isinstance(newest.data, AssistantData)
        assert newest.text == "typed all the way"
        usage = newest.data.usage
        assert usage is not None
        assert usage.context_tokens == usage.input + usage.cache_read + usage.cache_write > 0
        view = client.call(m.SESSION_GET, SessionRef(session_id=session.id))
        assert view.context_tokens == usage.context_tokens  # the same number, derived in one place


def test_g2_events_are_the_api_union_with_the_submission_ids_and_the_entries(gateway: LiveGateway) -> None:
    gateway.model.enqueue([TextDelta(text="Hel"), TextDelta(text="lo")])
    with connect(address_of(gateway)) as client:
        session = client.call(m.SESSION_CREATE, CreateParams())
        client.call(m.EVENTS_SUBSCRIBE, SubscribeParams(session_id=session.id))
        sent = client.call(m.SESSION_SEND, SendParams(session_id=session.id, text="hi"))
        seen = events_until_settled(client)
    running = [e for e in seen if isinstance(e, ExecutionStateChanged) and e.state == "running"]
    assert running
    assert sent.id in running[0].submission_ids
    assert "".join(e.text for e in seen if isinstance(e, TextDeltaEvent)) == "Hello"
    appended = [entry for e in seen if isinstance(e, EntriesAppended) for entry in e.entries]
    assert [(entry.kind, entry.text) for entry in appended] == [("user", "hi"), ("assistant", "Hello")]


def test_g2_untyped_calls_read_plain_json(gateway: LiveGateway) -> None:
    with connect(address_of(gateway)) as client:
        created = client.call("session.create", {"title": "plain"})
    assert isinstance(created, dict)
    assert created["title"] == "plain"


def test_g2_error_replies_raise_one_exception_per_stable_code(gateway: LiveGateway) -> None:
    gate = Gate()
    gateway.model.enqueue([gate, TextDelta(text="late")], "second answer")
    with connect(address_of(gateway)) as client:
        with pytest.raises(NotFoundError) as missing:
            client.call(m.SESSION_GET, SessionRef(session_id="ses_nosuch"))
        assert missing.value.code == jsonrpc.NOT_FOUND
        assert isinstance(missing.value, jsonrpc.RpcError)  # what callers of the codes catch
        assert "ses_nosuch" in missing.value.message
        with pytest.raises(InvalidParams):
            client.call("session.get", {"session_id": 12})
        with pytest.raises(MethodNotFound):
            client.call("session.nosuch", {})
        session = client.call(m.SESSION_CREATE, CreateParams())
        first = client.call(m.SESSION_SEND, SendParams(session_id=session.id, text="first"))
        assert gate.reached.wait_blocking(TIMEOUT)  # the first turn holds the session
        queued = client.call(m.SESSION_SEND, SendParams(session_id=session.id, text="second", kind="follow_up"))
        with pytest.raises(ConflictError) as stale:
            client.call(m.QUEUE_CANCEL, ItemRef(submission_id=queued.id, version=queued.version + 1))
        assert stale.value.code == jsonrpc.CONFLICT
        gate.open()
        done = client.call(m.SESSION_WAIT, WaitParams(submission_id=first.id, timeout=TIMEOUT))
        assert done.state == "completed"


def test_g1_a_wrong_token_is_unauthorized(gateway: LiveGateway) -> None:
    wrong = address_of(gateway, token="not-the-token-" + "y" * 20)
    with connect(wrong) as client, pytest.raises((Unauthorized, GatewayUnavailable)) as refused:
        client.call(m.SESSION_CREATE, CreateParams())
    if isinstance(refused.value, CallFailed):
        assert refused.value.code == jsonrpc.UNAUTHORIZED


def test_x3_no_gateway_says_how_to_start_one(tmp_path: Path, gateway: LiveGateway) -> None:
    profile = create_profile(tmp_path / "other-home", "idle")
    with pytest.raises(GatewayUnavailable) as none, profile_client(profile):
        pass
    assert str(none.value) == (
        "no Gateway is running for profile idle: start one with `anyy gateway start --profile idle`"
    )
    gone = address_of(gateway)
    gateway.close()  # its address outlives it, as a gateway.json left by a killed Gateway does
    with pytest.raises(GatewayUnavailable, match="start one with"), connect(gone):
        pass
