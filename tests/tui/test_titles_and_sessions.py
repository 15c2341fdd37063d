"""U1 in the TUI: opening it, ``/new`` or leaving leaves no empty session behind; ``/sessions`` shows each
session's title and last message; search hits keep the words searched for."""

from __future__ import annotations

import pytest
from textual.widgets import OptionList

from anyy.api.entries import Attachment
from anyy.tui.screens import SessionPicker
from tests.cli.live import StartGateway
from tests.tui.pilot import TIMEOUT, make_app, notices, opened, type_text, until

pytestmark = pytest.mark.anyio


def session_ids(live) -> list[str]:
    with live.client() as client:
        return [item["id"] for item in client.call("session.list", {})["items"]]


async def test_u1_opening_and_quitting_the_tui_leaves_no_empty_session(start_gateway: StartGateway) -> None:
    live = start_gateway()
    app = make_app(live)
    async with app.run_test(size=(100, 30)) as pilot:
        await opened(app)
        assert app.state.session is not None
        assert app.state.session.role == "default"
        assert app.state.session.provider == "offline"  # the draft shows what the session will use…
        assert "new session" in app.status.describe()
        assert session_ids(live) == []  # …but nothing is created by opening
        await type_text(pilot, "/new")
        await pilot.press("enter")
        await until(app, lambda: "New session" in notices(app))
        assert session_ids(live) == []
        await pilot.press("ctrl+q")
        await until(app, lambda: not app.is_running)
    assert session_ids(live) == []


async def test_u1_the_first_send_creates_exactly_one_session_with_the_choices_made_before(
    start_gateway: StartGateway,
) -> None:
    live = start_gateway()
    app = make_app(live)
    async with app.run_test(size=(100, 30)) as pilot:
        await opened(app)
        await type_text(pilot, "/effort high")
        await pilot.press("enter")
        await until(app, lambda: app.state.session is not None and app.state.session.effort == "high")
        await type_text(pilot, "/model no-such-model")
        await pilot.press("enter")
        await until(app, lambda: "unknown model 'no-such-model'" in notices(app))  # checked as the Gateway does
        assert session_ids(live) == []
        await type_text(pilot, "plan the garden for spring")
        await pilot.press("enter")
        await until(app, lambda: not app.busy and bool(app.conversation.query("Message.assistant")), TIMEOUT)
        created = app.session_id
        assert session_ids(live) == [created]  # exactly one, made by the first message
        await type_text(pilot, "and the roses")
        await pilot.press("enter")
        await until(app, lambda: len(app.conversation.query("Message.assistant")) == 2, TIMEOUT)
        assert session_ids(live) == [created]
        with live.client() as client:
            session = client.call("session.get", {"session_id": created})["session"]
        assert (session["provider"], session["model"], session["effort"]) == ("offline", "offline", "high")
        await pilot.press("ctrl+q")
        await until(app, lambda: not app.is_running)


async def test_u1_a_session_written_in_stays_and_is_titled_from_its_first_message(start_gateway: StartGateway) -> None:
    live = start_gateway()
    app = make_app(live)
    async with app.run_test(size=(100, 30)) as pilot:
        await opened(app)
        await type_text(pilot, "plan the garden for spring")
        await pilot.press("enter")
        await until(app, lambda: not app.busy and bool(app.conversation.query("Message.assistant")), TIMEOUT)
        kept = app.session_id
        # Named from the first message, then by the (offline) model: each announced, the TUI follows.
        await until(
            app,
            lambda: app.state.session is not None and app.state.session.title == "Plan the garden for spring",
            TIMEOUT,
        )
        await pilot.press("ctrl+q")
        await until(app, lambda: not app.is_running)
    with live.client() as client:
        (listed,) = client.call("session.list", {})["items"]
    assert listed["id"] == kept
    assert listed["title"] == "Plan the garden for spring"
    assert listed["preview"].startswith("(offline model) You said: «plan the garden for spring»")


async def test_u1_sessions_picker_shows_titles_previews_and_search_words(start_gateway: StartGateway) -> None:
    live = start_gateway()
    with live.client() as client:
        other = client.call("session.create", {"title": "Tea notes"})
        sub = client.call("session.send", {"session_id": other["id"], "text": "oolong or sencha for the morning"})
        client.call("session.wait", {"submission_id": sub["id"], "timeout": TIMEOUT})
    app = make_app(live, session_id=other["id"])
    async with app.run_test(size=(120, 30)) as pilot:
        await opened(app)
        await type_text(pilot, "/sessions")
        await pilot.press("enter")
        await until(app, lambda: isinstance(app.screen, SessionPicker) and app.screen.options.option_count > 0)
        options = app.screen.query_one(OptionList)
        shown = str(options.get_option_at_index(0).prompt)
        assert shown.startswith("Tea notes")
        assert "\n  (offline model) You said: «oolong or sencha" in shown
        await type_text(pilot, "sencha")
        await until(app, lambda: "sencha" in str(options.get_option_at_index(0).prompt).split("\n", 1)[-1])
        hit = options.get_option_at_index(0).prompt
        assert "sencha" in str(hit).split("\n", 1)[1]  # the matched word itself, not dropped as markup


async def test_u1_a_refused_first_message_leaves_no_session_and_keeps_the_draft(start_gateway: StartGateway) -> None:
    live = start_gateway()
    app = make_app(live)
    async with app.run_test(size=(100, 30)) as pilot:
        await opened(app)
        # A file the Gateway does not hold (as if swept after its upload): the send is refused.
        app.state.attachments = [Attachment(object="0" * 64, name="gone.txt", size=3)]
        await type_text(pilot, "look at this")
        await pilot.press("enter")
        await until(app, lambda: "Not sent" in notices(app), TIMEOUT)
        assert session_ids(live) == []  # the session made for it is not kept
        assert app.drafting
        assert app.editor.text == "look at this"
        app.state.attachments = []
        await pilot.press("enter")
        await until(app, lambda: not app.busy and bool(app.conversation.query("Message.assistant")), TIMEOUT)
        assert session_ids(live) == [app.session_id]
        await pilot.press("ctrl+q")


async def test_b3_an_unknown_role_is_said_at_once_and_creates_nothing(start_gateway: StartGateway) -> None:
    live = start_gateway()
    app = make_app(live, role="nobody")
    async with app.run_test(size=(100, 30)):
        await until(app, lambda: app.failure is not None)
    assert app.failure is not None
    assert "no role 'nobody'" in app.failure
    assert "the roles are: default" in app.failure
    assert session_ids(live) == []
