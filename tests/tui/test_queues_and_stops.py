"""Both queues and the stops, key by key, while the offline model holds the session in a slow shell
call (SPEC Q4, Q5, S2-S4, S6). Tests wait on the app's state, which follows the Gateway's events."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from anyy.tui.app import AnyyApp
from anyy.tui.tool_activity import ToolActivity
from tests.cli.live import BROKEN_PROVIDER, GatewayProcess, Hold, StartGateway
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


async def start_slow_turn(app: AnyyApp, pilot: Any, *, follow_up: str | None = None) -> str:
    """Send the slow shell call with Enter; return its execution once its tool has started. With
    ``follow_up``, that text is then queued behind it (Alt+Enter) and shown pending before this returns."""
    before = len(app.query(ToolActivity))
    app.editor.insert(Hold.until_stopped().command)  # ended by the test's stop
    await pilot.press("enter")
    await until(app, lambda: app.busy and len(app.query(ToolActivity)) > before, TIMEOUT)
    running = app.state.running
    assert running is not None
    if follow_up is not None:
        await type_text(pilot, follow_up)
        await pilot.press("alt+enter")
        await until(app, lambda: ("follow_up", follow_up) in pending(app), TIMEOUT)
    return running


async def stop_turn(app: AnyyApp, pilot: Any) -> None:
    """Ctrl+C, then wait until the work has stopped."""
    await pilot.press("ctrl+c")
    await until(app, lambda: not app.busy, TIMEOUT)


def pending(app: AnyyApp) -> list[tuple[str, str]]:
    return [(item.kind, item.text) for item in app.pending.items]


def gateway_queue(live: GatewayProcess, session_id: str) -> list[tuple[str, str]]:
    with live.client() as client:
        return [(i["kind"], i["text"]) for i in client.call("session.queue.list", {"session_id": session_id})]


async def test_q4_busy_enter_adds_steering_and_alt_enter_a_follow_up(start_gateway: StartGateway) -> None:
    live = start_gateway()
    app = make_app(live)
    async with app.run_test(size=(100, 30)) as pilot:
        await opened(app)
        await start_slow_turn(app, pilot, follow_up="later")
        await type_text(pilot, "steer")
        await pilot.press("enter")
        await until(app, lambda: len(pending(app)) == 2, TIMEOUT)
        assert pending(app) == [("steering", "steer"), ("follow_up", "later")]  # steering shown first
        assert str(app.pending.render()).startswith("steering: steer\nfollow-up: later")
        assert app.editor.text == ""
        await stop_turn(app, pilot)


async def test_q5_alt_up_returns_pending_items_before_the_draft(start_gateway: StartGateway) -> None:
    live = start_gateway()
    app = make_app(live)
    async with app.run_test(size=(100, 30)) as pilot:
        await opened(app)
        execution = await start_slow_turn(app, pilot)
        await type_text(pilot, "one")
        await pilot.press("enter")
        await type_text(pilot, "two")
        await pilot.press("alt+enter")
        await until(app, lambda: len(pending(app)) == 2, TIMEOUT)
        await type_text(pilot, "my draft")
        await pilot.press("alt+up")
        await until(app, lambda: not pending(app), TIMEOUT)
        assert app.editor.text == "one\n\ntwo\n\nmy draft"
        assert gateway_queue(live, app.session_id) == []
        assert app.state.running == execution  # Alt+Up never stops the work
        await stop_turn(app, pilot)


async def test_q5_alt_up_brings_back_the_attachments_too(start_gateway: StartGateway, tmp_path: Path) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("milk\n")
    live = start_gateway()
    app = make_app(live)
    async with app.run_test(size=(100, 30)) as pilot:
        await opened(app)
        await start_slow_turn(app, pilot)
        await type_text(pilot, f"/attach {notes}")
        await pilot.press("enter")
        await until(app, lambda: len(app.state.attachments) == 1, TIMEOUT)
        await type_text(pilot, "with the file")
        await pilot.press("enter")
        await until(app, lambda: len(pending(app)) == 1 and not app.state.attachments, TIMEOUT)
        await pilot.press("alt+up")
        await until(app, lambda: not pending(app), TIMEOUT)
        assert app.editor.text == "with the file"
        assert [a.name for a in app.state.attachments] == ["notes.txt"]  # the file is back with its text
        await stop_turn(app, pilot)


async def test_q5_an_item_taken_meanwhile_stays_and_the_user_is_told(start_gateway: StartGateway) -> None:
    live = start_gateway()
    app = make_app(live)
    async with app.run_test(size=(100, 30)) as pilot:
        await opened(app)
        await start_slow_turn(app, pilot, follow_up="gone")
        stale = list(app.pending.items)
        # Another client acts on the item first. Its blocking call holds the TUI's event loop, so the
        # TUI has not read the queue_changed event when the recall starts: its view is really stale.
        with live.client() as client:
            client.call("session.queue.update", {"submission_id": stale[0].id, "text": "changed"})
        assert app.pending.items == stale
        app.editor.insert("draft")
        assert await app.recall_pending() == []
        assert app.editor.text == "draft"
        assert "«gone» was already taken by the agent" in notices(app)
        assert gateway_queue(live, app.session_id) == [("follow_up", "changed")]
        await stop_turn(app, pilot)


async def test_s2_ctrl_c_stops_and_keeps_the_queue(start_gateway: StartGateway) -> None:
    live = start_gateway()
    app = make_app(live)
    async with app.run_test(size=(100, 30)) as pilot:
        await opened(app)
        await start_slow_turn(app, pilot, follow_up="afterwards")
        await stop_turn(app, pilot)
        assert "Stopping the response" in notices(app)
        assert "Stopped; pending items are kept." in notices(app)
        assert gateway_queue(live, app.session_id) == [("follow_up", "afterwards")]
        assert pending(app) == [("follow_up", "afterwards")]


async def test_s3_esc_while_working_returns_pending_items_then_stops(start_gateway: StartGateway) -> None:
    live = start_gateway()
    app = make_app(live)
    async with app.run_test(size=(100, 30)) as pilot:
        await opened(app)
        await start_slow_turn(app, pilot, follow_up="back")
        await pilot.press("escape")
        await until(app, lambda: not app.busy, TIMEOUT)
        assert app.editor.text == "back"
        assert gateway_queue(live, app.session_id) == []
        assert "Stopping the response" in notices(app)


async def test_s4_esc_during_a_retry_wait_cancels_only_the_wait(start_gateway: StartGateway) -> None:
    live = start_gateway(config_extra=BROKEN_PROVIDER)
    app = make_app(live, session_id=new_session(live, provider="broken", model="m"))
    async with app.run_test(size=(100, 30)) as pilot:
        await opened(app)
        execution = await start_retry_wait(app, pilot, live)
        await type_text(pilot, "kept")
        await pilot.press("alt+enter")
        await until(app, lambda: bool(pending(app)), TIMEOUT)
        assert app.retry.execution == execution  # the countdown is shown
        await pilot.press("escape")
        await until(app, lambda: not app.busy, TIMEOUT)
        assert app.retry.execution is None  # and goes with the wait
        assert "Retry wait cancelled" in notices(app)
        assert "Stopping the response" not in notices(app)
        assert app.editor.text == ""
        assert gateway_queue(live, app.session_id) == [("follow_up", "kept")]


async def test_s6_stop_names_the_captured_execution(start_gateway: StartGateway) -> None:
    live = start_gateway()
    app = make_app(live)
    async with app.run_test(size=(100, 30)) as pilot:
        await opened(app)
        first = await start_slow_turn(app, pilot)
        await stop_turn(app, pilot)
        second = await start_slow_turn(app, pilot)
        assert second != first
        await app.stop(first)  # a stop captured during the first turn, arriving late
        assert "The response had already ended: nothing stopped." in notices(app)
        assert app.state.running == second
        await stop_turn(app, pilot)
        assert "Stopping the response" in notices(app)
