"""U3 in the TUI: a spinner with the time spent while the agent works, the bell when a question or an
approval waits, the approval prompt (once / session / deny), one line per failure, no internal ids in what
it says, and the items left waiting after a stop with what to do about them."""

from __future__ import annotations

import re

import pytest

from anyy.tui.app import AnyyApp
from anyy.tui.status import SPINNER, elapsed
from anyy.tui.tool_activity import RUNNING, ToolActivity
from tests.cli.live import BROKEN_PROVIDER, MakeHold, StartGateway, make_busy
from tests.tui.pilot import TIMEOUT, make_app, new_session, notices, opened, type_text, until
from tests.tui.test_queues_and_stops import gateway_queue, start_slow_turn

pytestmark = pytest.mark.anyio

APPROVALS = """
[tools.approval]
shell = { "echo *" = "ask", "*" = "allow" }
"""


def count_bells(app: AnyyApp) -> list[int]:
    rung: list[int] = []
    app.bell = lambda: rung.append(1)  # type: ignore[method-assign]
    return rung


def test_u3_elapsed_time_reads_like_a_clock() -> None:
    assert [elapsed(s) for s in (0, 7.9, 65, 3725)] == ["0 s", "7 s", "1 min 05 s", "1 h 02 min"]


async def test_u3_working_shows_a_spinner_and_the_time_spent_never_an_id(start_gateway: StartGateway) -> None:
    live = start_gateway()
    app = make_app(live)
    async with app.run_test(size=(120, 30)) as pilot:
        await opened(app)
        execution = await start_slow_turn(app, pilot)
        shown = app.status.state
        assert re.fullmatch(rf"[{SPINNER}] working \d+ s · Ctrl\+C stops", shown), shown
        assert execution not in app.status.describe()
        await pilot.press("ctrl+c")
        await until(app, lambda: not app.busy, TIMEOUT)
        assert app.status.state == "idle"
        assert "exe_" not in notices(app)


async def test_u3_a_session_opened_while_its_tool_runs_shows_that_tool(
    start_gateway: StartGateway, hold: MakeHold
) -> None:
    """The TUI opened on a session whose tool started before it followed the session (another client's
    turn, or the TUI's own first message) shows that call running, once, and its end."""
    live = start_gateway()
    session_id = new_session(live)
    held = hold()
    with live.client() as client:
        client.call("events.subscribe", {"session_id": session_id})
        make_busy(client, session_id, held)
    app = make_app(live, session_id=session_id)
    async with app.run_test(size=(120, 30)):
        await opened(app)
        await until(app, lambda: app.busy and len(app.query(ToolActivity)) == 1, TIMEOUT)
        activity = app.query_one(ToolActivity)
        assert (activity.tool_name, activity.outcome) == ("shell", RUNNING)
        held.release()
        await until(app, lambda: not app.busy, TIMEOUT)
        assert [a.outcome for a in app.query(ToolActivity)] == ["done"]  # the recorded call is the same one


async def test_u3_the_bell_rings_when_the_agent_asks(start_gateway: StartGateway) -> None:
    live = start_gateway()
    app = make_app(live)
    async with app.run_test(size=(100, 30)) as pilot:
        await opened(app)
        rung = count_bells(app)
        await type_text(pilot, "please ask me something?")
        await pilot.press("enter")
        await until(app, lambda: app.question.waiting is not None, TIMEOUT)
        assert rung == [1]


async def test_u3_an_approval_waits_above_the_editor_with_once_session_deny(start_gateway: StartGateway) -> None:
    live = start_gateway(config_extra=APPROVALS)
    app = make_app(live)
    async with app.run_test(size=(120, 30)) as pilot:
        await opened(app)
        rung = count_bells(app)
        await type_text(pilot, "run: echo approved-by-tui")
        await pilot.press("enter")
        await until(app, lambda: app.question.has_class("approval"), TIMEOUT)
        assert rung == [1]
        assert app.question.border_title == "Approval needed"
        assert app.question.describe().startswith("Approval needed: shell 'echo approved-by-tui'")
        await type_text(pilot, "maybe")
        await pilot.press("enter")
        assert "type o (once), s (for this session) or d (deny)" in notices(app)
        app.editor.clear()
        await type_text(pilot, "o")
        await pilot.press("enter")
        await until(app, lambda: app.question.waiting is None and not app.busy, TIMEOUT)
        with live.client() as client:
            items = client.call("session.history", {"session_id": app.session_id})["items"]
        results = [item["text"] for item in items if item["kind"] == "tool_result"]
        assert any("approved-by-tui" in text for text in results)


async def test_u3_a_failed_response_is_said_once(start_gateway: StartGateway) -> None:
    live = start_gateway(config_extra=BROKEN_PROVIDER, max_retries=1)
    app = make_app(live, session_id=new_session(live, provider="broken", model="m"))
    async with app.run_test(size=(120, 30)) as pilot:
        await opened(app)
        await type_text(pilot, "hello")
        await pilot.press("enter")
        await until(app, lambda: "failed: " in notices(app), TIMEOUT * 2)
        await until(app, lambda: not app.busy, TIMEOUT)
        said = notices(app).splitlines()
        failures = [line for line in said if "fail" in line.lower() or "error" in line.lower()]
        assert len(failures) == 1, said


async def test_u3_items_left_after_a_stop_offer_continue_and_clear(start_gateway: StartGateway) -> None:
    live = start_gateway()
    app = make_app(live)
    async with app.run_test(size=(120, 30)) as pilot:
        await opened(app)
        await start_slow_turn(app, pilot, follow_up="first later")
        assert "/continue" not in str(app.pending.render())  # while working, the items are simply queued
        await pilot.press("ctrl+c")
        await until(app, lambda: not app.busy, TIMEOUT)
        await until(app, lambda: "/continue runs them · /clear removes them" in str(app.pending.render()), TIMEOUT)
        await type_text(pilot, "/continue")
        await pilot.press("enter")
        await until(app, lambda: not app.pending.items and not app.busy, TIMEOUT)
        assert gateway_queue(live, app.session_id) == []
        await start_slow_turn(app, pilot, follow_up="second later")
        await pilot.press("ctrl+c")
        await until(app, lambda: not app.busy and app.pending.stale, TIMEOUT)
        await type_text(pilot, "/clear")
        await pilot.press("enter")
        await until(app, lambda: not app.pending.items, TIMEOUT)
        assert "/clear: 1 pending item removed." in notices(app)
        assert gateway_queue(live, app.session_id) == []
