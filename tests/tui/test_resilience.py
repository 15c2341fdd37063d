"""Resilience (issue 6): a Gateway restart or a dropped connection reconnects with backoff and redraws
from the Gateway's state, without losing the editor's draft or the queue view."""

from __future__ import annotations

import asyncio

import pytest

from anyy.api.sessions import Submission
from anyy.tui.app import RECONNECTING, AnyyApp
from anyy.tui.conversation import Message
from tests.cli.live import GatewayProcess, StartGateway, run
from tests.tui.pilot import TIMEOUT, make_app, notices, opened, type_text, until

pytestmark = pytest.mark.anyio


def messages(app: AnyyApp, role: str) -> list[str]:
    return [m.text for m in app.query(Message) if m.role == role]


async def gateway(live: GatewayProcess, action: str) -> None:
    """``anyy gateway stop|start`` for the test's profile, off the event loop (the app keeps running)."""
    done = await asyncio.to_thread(run, live.home, "gateway", action, "--profile", live.profile)
    assert done.returncode == 0, done.stderr


async def test_a_gateway_restart_keeps_the_draft_and_the_queue_view_and_reconnects(
    start_gateway: StartGateway,
) -> None:
    live = start_gateway()
    with live.client() as client:
        session = client.call("session.create", {})
        sub = client.call("session.send", {"session_id": session["id"], "text": "before the restart"})
        client.call("session.wait", {"submission_id": sub["id"], "timeout": TIMEOUT})
    first = live.address
    app = make_app(live, session_id=session["id"])
    async with app.run_test(size=(100, 30)) as pilot:
        await opened(app)
        await type_text(pilot, "my draft")
        app.state.queue = [
            Submission(
                id="sub_x",
                session_id=app.session_id,
                kind="steering",
                text="queued line",
                attachments=[],
                state="pending",
                position=1,
                version=1,
                execution_id=None,
                entry_id=None,
                error=None,
                created_at=0.0,
                updated_at=0.0,
            )
        ]

        await gateway(live, "stop")
        await until(app, lambda: app.state.link is not None and app.status.state.startswith(RECONNECTING), TIMEOUT)
        assert app.editor.text == "my draft"
        assert [item.text for item in app.pending.items] == ["queued line"]
        assert "reconnecting" in notices(app)

        await gateway(live, "start")
        await until(app, lambda: app.link.reconnections == 1 and app.status.state == "idle", TIMEOUT)
        assert app.address.port != first.port or app.address.token != first.token
        assert app.editor.text == "my draft"
        assert app.pending.items == []  # redrawn from the Gateway's (empty) queue
        assert messages(app, "user") == ["before the restart"]  # history redrawn

        await pilot.press("enter")
        await until(app, lambda: any("«my draft»" in t for t in messages(app, "assistant")), TIMEOUT)
        await until(app, lambda: not app.busy, TIMEOUT)
        assert messages(app, "user") == ["before the restart", "my draft"]
        assert app.editor.text == ""


async def test_while_disconnected_enter_keeps_the_draft_and_says_why(start_gateway: StartGateway) -> None:
    live = start_gateway()
    app = make_app(live)
    async with app.run_test(size=(100, 30)) as pilot:
        await opened(app)
        await gateway(live, "stop")
        await until(app, lambda: app.state.link is not None, TIMEOUT)
        await type_text(pilot, "not yet")
        await pilot.press("enter")
        await until(app, lambda: "Not sent" in notices(app), TIMEOUT)
        assert app.editor.text == "not yet"
        attempts = app.link.attempts
        await until(app, lambda: app.link.attempts > attempts, TIMEOUT)  # keeps trying, with backoff
        assert app.state.link is not None
