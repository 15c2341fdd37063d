"""The conversation view (issue 6): older history by pages (PageUp at the top), usage and context fill in
the status line, and tool activity with long results collapsed. Against a real Gateway on loopback with
the offline model."""

from __future__ import annotations

from typing import Any

import pytest
from textual.widget import Widget

from anyy.client.protocol import Method, method_name
from anyy.tui.app import AnyyApp
from anyy.tui.conversation import Message
from anyy.tui.status import tokens
from anyy.tui.tool_activity import ToolActivity
from tests.cli.live import GatewayProcess, StartGateway
from tests.tui.pilot import TIMEOUT, click_on, make_app, opened, type_text, until

pytestmark = pytest.mark.anyio

TURNS = [f"turn {i}" for i in range(6)]


def messages(app: AnyyApp, role: str) -> list[str]:
    return [m.text for m in app.query(Message) if m.role == role]


def focused(app: AnyyApp) -> Widget | None:
    return app.focused


def session_with_turns(live: GatewayProcess, texts: list[str]) -> str:
    with live.client() as client:
        session = client.call("session.create", {})
        for text in texts:
            sub = client.call("session.send", {"session_id": session["id"], "text": text})
            client.call("session.wait", {"submission_id": sub["id"], "timeout": TIMEOUT})
        return str(session["id"])


async def to_the_top(app: AnyyApp, pilot) -> None:
    """PageUp until the conversation is scrolled to its top (each press a page up, not a load)."""
    for _ in range(20):
        if app.conversation.scroll_y <= 0:
            return
        pages = app.conversation.older_pages
        await pilot.press("pageup")
        await pilot.pause()
        assert app.conversation.older_pages == pages
    raise AssertionError("PageUp never reached the top of the conversation")


async def test_pageup_loads_older_history(start_gateway: StartGateway) -> None:
    live = start_gateway()
    session_id = session_with_turns(live, TURNS)  # 12 entries: 3 pages of 4
    app = make_app(live, session_id=session_id, history_page=4)
    async with app.run_test(size=(100, 20)) as pilot:
        await opened(app)
        view = app.conversation
        assert messages(app, "user") == TURNS[-2:]  # the newest page only
        assert view.older is not None  # the line saying older messages exist
        assert view.scroll_y > 0  # opened at the bottom

        await to_the_top(app, pilot)
        oldest = next(m for m in app.query(Message) if m.text == "turn 4")
        top = oldest.region.y
        await pilot.press("pageup")
        await until(app, lambda: view.older_pages == 1, TIMEOUT)
        await pilot.pause()
        assert messages(app, "user") == TURNS[-4:]  # the page before, above, in order
        assert oldest.region.y == top  # what the user looked at has not moved
        assert view.scroll_y > 0  # the older page is above the view, to scroll up to
        assert view.older is not None

        await to_the_top(app, pilot)
        await pilot.press("pageup")
        await until(app, lambda: view.older_pages == 2, TIMEOUT)
        assert messages(app, "user") == TURNS  # the whole path, oldest first
        assert view.older is None  # nothing older: the marker is gone
        assert app.focused is app.editor  # PageUp came from the editor, which keeps the focus

        await type_text(pilot, "one more")  # a message of the user's brings the view back to the bottom
        await pilot.press("enter")
        await until(app, lambda: not app.busy and any("«one more»" in t for t in messages(app, "assistant")), TIMEOUT)
        assert messages(app, "user") == [*TURNS, "one more"]


async def test_status_line_shows_usage_and_context(start_gateway: StartGateway) -> None:
    live = start_gateway()
    app = make_app(live)
    async with app.run_test(size=(100, 30)) as pilot:
        await opened(app)
        assert app.state.context.budget == 100_000  # the profile's, as session.get says it
        status = app.status.describe()
        assert "ctx ?/100k" in status  # no response yet
        assert "role default" in status
        assert "offline/offline" in status
        await type_text(pilot, "hello usage")
        await pilot.press("enter")
        await until(app, lambda: not app.busy and app.state.usage is not None, TIMEOUT)
        with live.client() as client:
            page = client.call("session.history", {"session_id": app.session_id, "limit": 1})
            view = client.call("session.get", {"session_id": app.session_id})
        usage = page["items"][0]["data"]["usage"]
        context = usage["input"] + usage.get("cache_read", 0) + usage.get("cache_write", 0)
        assert view["context_tokens"] == context
        cached = f" ({tokens(usage['cache_read'])} cached)" if usage.get("cache_read") else ""
        fill = f"ctx {tokens(context)}/100k ({round(100 * context / 100_000)}%) · ↑{tokens(context)}{cached} ↓"
        status = app.status.describe()
        assert f"{fill}{tokens(usage['output'])}" in status  # updated when the answer was appended
        assert status.endswith("idle")
        shown = str(app.status.query_one("#status-session").render())
        assert fill in shown
        session_id = app.session_id

    again = make_app(live, session_id=session_id)  # reopened: from session.get and the history page
    async with again.run_test(size=(100, 30)):
        await opened(again)
        assert f"{fill}{tokens(usage['output'])}" in again.status.describe()


def test_status_line_token_counts_are_short() -> None:
    assert [tokens(n) for n in (0, 340, 1_000, 1_234, 12_345, 99_999, 100_000, 123_456, 999_999, 1_500_000)] == [
        "0",
        "340",
        "1k",
        "1.2k",
        "12.3k",
        "100k",
        "100k",
        "123k",
        "1M",
        "1.5M",
    ]


async def test_tool_output_collapsible(start_gateway: StartGateway) -> None:
    live = start_gateway()
    app = make_app(live)
    async with app.run_test(size=(100, 30)) as pilot:
        await opened(app)
        await type_text(pilot, "run: seq 1 30")
        await pilot.press("enter")
        await until(app, lambda: not app.busy and any(t.result for t in app.query(ToolActivity)), TIMEOUT)
        await until(app, lambda: any("shell returned" in t for t in messages(app, "assistant")), TIMEOUT)
        activity = app.query_one(ToolActivity)
        shown = str(activity.render())
        assert shown.startswith("⚙ shell(command=seq 1 30) [done]")
        assert "│ 1\n" in shown
        assert "│ 3\n" in shown
        assert "│ 4\n" not in shown
        assert "│ 30" not in shown
        assert "28 more lines" in shown  # 30 numbers and the exit code, 3 shown
        assert activity.collapsed

        await click_on(pilot, activity)  # a click shows the whole result
        await until(app, lambda: activity.expanded, TIMEOUT)
        shown = str(activity.render())
        assert "│ 30\n" in shown
        assert "│ [exit code 0]" in shown
        assert focused(app) is app.editor  # the click gave the focus back to the editor

        await pilot.press("shift+tab")  # from the editor to the tool activity
        assert focused(app) is activity
        await pilot.press("enter")  # folds it again
        await until(app, lambda: not activity.expanded, TIMEOUT)
        assert "│ 30" not in str(activity.render())
        session_id = app.session_id

    again = make_app(live, session_id=session_id)  # from the history: the same, collapsed
    async with again.run_test(size=(100, 30)):
        await opened(again)
        activity = again.query_one(ToolActivity)
        assert activity.collapsed
        assert activity.outcome == "done"
        assert str(activity.render()).startswith("⚙ shell(command=seq 1 30) [done]")
        assert "28 more lines" in str(activity.render())


async def test_tool_arguments_shown_whole_when_expanded(start_gateway: StartGateway) -> None:
    live = start_gateway()
    app = make_app(live)
    words = " ".join(f"word{i}" for i in range(30))  # a command longer than the call's line shows
    async with app.run_test(size=(100, 30)) as pilot:
        await opened(app)
        app.editor.insert(f"run: echo {words}")
        await pilot.press("enter")
        await until(app, lambda: not app.busy and any(t.result for t in app.query(ToolActivity)), TIMEOUT)
        activity = app.query_one(ToolActivity)
        assert activity.collapsed  # the result is short, the argument is not
        shown = str(activity.render())
        assert "…" in shown.splitlines()[0]
        assert "word29" not in shown.splitlines()[0]
        assert "cut short" in shown
        await pilot.press("shift+tab")
        await pilot.press("space")
        await until(app, lambda: activity.expanded, TIMEOUT)
        shown = str(activity.render())
        assert f"  command: echo {words}" in shown
        assert f"  │ {words}" in shown


async def test_g2_a_turn_is_shown_from_its_events_without_asking_the_gateway_again(
    start_gateway: StartGateway,
) -> None:
    """The events carry the appended entries, the queue and the execution's state: while a turn runs, the
    TUI sends nothing but the message itself (it re-read a page of history per pass before)."""
    live = start_gateway()
    with live.client() as client:
        session_id = client.call("session.create", {})["id"]  # made already: its first send only sends
    app = make_app(live, session_id=session_id)
    async with app.run_test(size=(100, 30)) as pilot:
        await opened(app)
        asked: list[str] = []
        call = app.link.call

        async def counted(method: Method, params: Any = None) -> Any:
            asked.append(method_name(method))
            return await call(method, params)

        app.link.call = counted  # type: ignore[method-assign]
        await type_text(pilot, "run: seq 1 3")
        await pilot.press("enter")
        await until(
            app,
            lambda: (
                not app.busy
                and app.state.usage is not None
                and any("shell returned" in text for text in messages(app, "assistant"))
            ),
            TIMEOUT,
        )
        assert asked == ["session.send"]
        assert messages(app, "user") == ["run: seq 1 3"]
        assert len(app.query(ToolActivity)) == 1
