"""U3 / issue 16: what the conversation shows live is what it shows after a reload (one renderer), and text
written before a tool call appears once, not again after it."""

from __future__ import annotations

import pytest
from textual.widget import Widget

from anyy.tui.app import AnyyApp
from anyy.tui.conversation import ConversationView, Message, NoticeLine
from anyy.tui.tool_activity import ToolActivity
from tests.cli.live import StartGateway
from tests.fakes.model_server import Reply, ToolCall
from tests.tui.pilot import TIMEOUT, make_app, opened, type_text, until
from tests.tui.test_codemode import fake_model, fake_provider

pytestmark = pytest.mark.anyio


def described(widget: Widget) -> tuple[str, str]:
    if isinstance(widget, Message):
        return (widget.role, widget.text)
    if isinstance(widget, ToolActivity):
        return ("tool", str(widget.render()))
    if isinstance(widget, NoticeLine):
        return ("notice", str(widget.content))
    return (type(widget).__name__, "")


def shown(app: AnyyApp) -> list[tuple[str, str]]:
    return [described(child) for child in app.query_one(ConversationView).children]


async def test_u3_live_and_reloaded_conversations_look_the_same(start_gateway: StartGateway) -> None:
    with fake_model() as server:
        live = start_gateway(config_extra=fake_provider(server))
        with live.client() as client:
            session = client.call("session.create", {})
            client.call("session.settings", {"session_id": session["id"], "provider": "fake", "model": "m"})
        server.enqueue(
            Reply(text=["Let me look ", "at the folder."], tool_calls=[ToolCall("shell", {"command": "echo hi"})]),
            Reply(text=["It says **hi**."]),
        )
        app = make_app(live, session_id=session["id"])
        async with app.run_test(size=(120, 40)) as pilot:
            await opened(app)
            await type_text(pilot, "what is there?")
            await pilot.press("enter")
            await until(app, lambda: not app.busy and ("assistant", "It says **hi**.") in shown(app), TIMEOUT)
            seen_live = shown(app)
        assert [kind for kind, _ in seen_live] == ["notice", "user", "assistant", "tool", "assistant"]
        assert seen_live[0] == ("notice", "Model: fake/m")
        assert [text for _, text in seen_live].count("Let me look at the folder.") == 1
        again = make_app(live, session_id=session["id"])
        async with again.run_test(size=(120, 40)):
            await opened(again)
            await until(again, lambda: len(shown(again)) >= len(seen_live), TIMEOUT)
            assert shown(again) == seen_live
