"""Clarifications answered inline (SPEC A2, M6, issue 6): a question the agent asked with ``ask_user``
is shown above the editor, and Enter answers it with ``session.answer`` instead of sending a message;
also when the TUI opens a session that already waits for an answer. And retries shown with their
countdown (R3, S4). Against a real Gateway on loopback with the offline model."""

from __future__ import annotations

import re
import time
from typing import Any

import pytest

from anyy.tui.app import AnyyApp
from anyy.tui.conversation import Message
from tests.cli.live import BROKEN_PROVIDER, GatewayProcess, StartGateway
from tests.fakes.model_server import ErrorReply, FakeModelServer
from tests.tui.pilot import (
    TIMEOUT,
    make_app,
    new_session,
    notices,
    opened,
    start_retry_wait,
    type_text,
    until,
)

pytestmark = pytest.mark.anyio

ASK = "please ask me something?"


def messages(app: AnyyApp, role: str) -> list[str]:
    return [m.text for m in app.query(Message) if m.role == role]


def history(live: GatewayProcess, session_id: str) -> list[tuple[str, str]]:
    """The session's path as (kind, text), oldest first."""
    with live.client() as client:
        page = client.call("session.history", {"session_id": session_id, "limit": 100})
    return [(entry["kind"], entry["text"]) for entry in reversed(page["items"])]


def suspended_session(live: GatewayProcess) -> str:
    """A session whose execution asked a question and waits for the answer."""
    with live.client() as client:
        session = client.call("session.create", {})
        sub = client.call("session.send", {"session_id": session["id"], "text": ASK})
        assert client.call("session.wait", {"submission_id": sub["id"], "timeout": TIMEOUT})["state"] == "suspended"
        return str(session["id"])


async def answer_and_see_it_used(app: AnyyApp, pilot: Any, live: GatewayProcess, answer: str) -> None:
    """Type the answer, Enter: the execution resumes with it and the question goes away."""
    await type_text(pilot, answer)
    await pilot.press("enter")
    await until(app, lambda: any(f"you answered: «{answer}»" in t for t in messages(app, "assistant")), TIMEOUT)
    await until(app, lambda: not app.busy and app.question.waiting is None, TIMEOUT)
    assert app.editor.text == ""
    assert not app.question.has_class("asking")
    path = history(live, app.session_id)
    assert ("answer", answer) in path
    assert [text for kind, text in path if kind == "user"] == [ASK]  # an answer, not a new message
    with live.client() as client:
        assert client.call("session.queue.list", {"session_id": app.session_id}) == []
    assert app.status.state == "idle"


async def test_clarification_answered_inline(start_gateway: StartGateway) -> None:
    live = start_gateway()
    app = make_app(live)
    async with app.run_test(size=(100, 30)) as pilot:
        await opened(app)
        await type_text(pilot, ASK)
        await pilot.press("enter")
        await until(app, lambda: app.question.waiting is not None, TIMEOUT)
        waiting = app.question.waiting
        assert waiting is not None
        assert "You asked me to ask you" in waiting.question
        assert app.question.has_class("asking")
        assert "You asked me to ask you" in str(app.question.render())
        assert app.question.border_title == "The agent asks"
        assert any("You asked me to ask you" in t for t in messages(app, "question"))  # in the conversation too
        assert app.status.state.startswith("waiting for your answer")
        assert not app.busy
        await answer_and_see_it_used(app, pilot, live, "blue")
        assert any("blue" in t for t in messages(app, "answer"))


async def test_clarification_of_a_resumed_session_is_answered_inline(start_gateway: StartGateway) -> None:
    live = start_gateway()
    session_id = suspended_session(live)
    app = make_app(live, session_id=session_id)
    async with app.run_test(size=(100, 30)) as pilot:
        await opened(app)
        waiting = app.question.waiting  # at once: from session.get's waiting_question, no event needed
        assert waiting is not None
        assert "You asked me to ask you" in waiting.question
        with live.client() as client:
            view = client.call("session.get", {"session_id": session_id})
        assert waiting.execution_id == view["waiting_question"]["execution_id"]
        assert app.status.state.startswith("waiting for your answer")
        await answer_and_see_it_used(app, pilot, live, "green")


async def test_clarification_ctrl_c_stops_the_waiting_execution(start_gateway: StartGateway) -> None:
    live = start_gateway()
    session_id = suspended_session(live)
    app = make_app(live, session_id=session_id)
    async with app.run_test(size=(100, 30)) as pilot:
        await opened(app)
        waiting = app.question.waiting
        assert waiting is not None
        await type_text(pilot, "/tree")
        await pilot.press("enter")
        await until(app, lambda: "answer the agent's question first" in notices(app), TIMEOUT)
        await pilot.press("ctrl+c")
        await until(app, lambda: app.question.waiting is None, TIMEOUT)
        assert "Stopping the response" in notices(app)
        await until(app, lambda: "question is left unanswered" in notices(app), TIMEOUT)
        assert app.status.state == "idle"
        with live.client() as client:
            execution = client.call(
                "session.execution", {"session_id": session_id, "execution_id": waiting.execution_id}
            )
        assert execution["state"] == "interrupted"


async def test_retry_countdown_shown(start_gateway: StartGateway) -> None:
    """R3: the wait before a retry counts down each second, then goes when the execution leaves the wait."""
    live = start_gateway(config_extra=BROKEN_PROVIDER, max_retries=1)
    app = make_app(live, session_id=new_session(live, provider="broken", model="m"))
    async with app.run_test(size=(100, 30)) as pilot:
        await opened(app)
        execution = await start_retry_wait(app, pilot, live)
        assert app.retry.execution == execution
        assert app.retry.has_class("waiting")
        assert "retrying in 2 s (attempt 1 of 1) · Esc cancels the wait" in str(app.retry.render())
        await until(app, lambda: "retrying in 1 s (attempt 1 of 1)" in str(app.retry.render()), TIMEOUT)
        # The one retry fails too: the execution leaves the wait (running, then failed) and the countdown goes.
        await until(app, lambda: not app.busy, TIMEOUT)
        assert app.retry.execution is None
        assert not app.retry.has_class("waiting")
        assert str(app.retry.render()) == ""
        assert "failed: " in notices(app)  # the failed turn's recorded notice, said once


async def test_retry_countdown_shown_when_opening_a_session_during_the_wait(start_gateway: StartGateway) -> None:
    """R3, S4: a session opened (``--resume``) while its execution waits for a retry shows the countdown from
    what is left of the wait (``session.get``'s ``retry_wait``), and Esc cancels only the wait."""
    server = FakeModelServer()
    server.start()
    try:
        server.enqueue(ErrorReply(503, "busy, come back later", type="overloaded", headers={"retry-after": "30"}))
        provider = f'\n[providers.flaky]\nkind = "openai"\nbase_url = "{server.openai_url}"\n'
        live = start_gateway(config_extra=provider)
        with live.client() as client:
            session = client.call("session.create", {})
            client.call("session.settings", {"session_id": session["id"], "provider": "flaky", "model": "m"})
            client.call("session.send", {"session_id": session["id"], "text": "hello"})
            retry = wait_for_retry(client, session["id"])
        app = make_app(live, session_id=session["id"])
        async with app.run_test(size=(100, 30)) as pilot:
            await opened(app)
            assert app.state.retrying == retry["execution_id"]
            assert app.retry.has_class("waiting")
            assert re.search(r"retrying in (30|2\d) s", str(app.retry.render()))  # what is left of the 30 s
            assert "(attempt 1 of 3) · Esc cancels the wait" in str(app.retry.render())
            await pilot.press("escape")
            await until(app, lambda: app.retry.execution is None and not app.busy, TIMEOUT)
        with live.client() as client:
            ended = client.call(
                "session.execution", {"session_id": session["id"], "execution_id": retry["execution_id"]}
            )
        assert ended["state"] == "interrupted"
    finally:
        server.stop()


def wait_for_retry(client: Any, session_id: str) -> dict[str, Any]:
    """``session.get``'s retry wait once the execution is in it (the RPC client sees no events: it asks)."""
    deadline = time.monotonic() + TIMEOUT
    while time.monotonic() < deadline:
        retry = client.call("session.get", {"session_id": session_id})["retry_wait"]
        if retry is not None:
            return dict(retry)
        time.sleep(0.02)
    raise AssertionError("the execution never waited for a retry")
