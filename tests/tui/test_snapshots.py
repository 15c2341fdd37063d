"""What the main screen shows, compared with stored SVGs (pytest-textual-snapshot; after a deliberate change
of the screen, ``.venv/bin/pytest tests/tui/test_snapshots.py --snapshot-update`` rewrites them), and the
screenshot in the docs (docs/img/tui.svg, written only when ANYY_TUI_SCREENSHOT is set).

The session id and the Gateway's home differ per run: the status line shows a fixed id instead."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import msgspec
import pytest

from anyy.tui.app import AnyyApp
from anyy.tui.conversation import Message
from tests.cli.live import StartGateway
from tests.tui.pilot import TIMEOUT, make_app, opened, type_text, until

SIZE = (100, 30)
SCREENSHOT = Path(__file__).parents[2] / "docs" / "img" / "tui.svg"


def shown_with_a_fixed_id(app: AnyyApp) -> None:
    assert app.state.session is not None
    # and a fixed workspace (W1): the Gateway's folder differs from one checkout to another
    app.state.session = msgspec.structs.replace(app.state.session, id="ses_snapshot", workspace="/home/me/proj")


async def one_exchange(app: AnyyApp, pilot: Any) -> None:
    """Open, send one prompt, wait for the recorded answer; then show a fixed session id."""
    await opened(app)
    await type_text(pilot, "hello tui")
    await pilot.press("enter")
    await until(  # the recorded answer shown, its usage in the status line
        app,
        lambda: (
            not app.busy
            and app.state.usage is not None
            and any(m.role == "assistant" and m.text for m in app.query(Message))
        ),
        TIMEOUT,
    )
    await type_text(pilot, "a draft in the editor")
    shown_with_a_fixed_id(app)
    app.editor.cursor_blink = False  # a still cursor: the picture must not depend on when it is taken
    await pilot.pause()


async def tool_then_question(app: AnyyApp, pilot: Any) -> None:
    """A shell call (its long result collapsed), then a question waiting for its answer, typed in the editor."""
    await opened(app)
    await type_text(pilot, "run: seq 1 30")
    await pilot.press("enter")
    await until(
        app,
        lambda: not app.busy and any(m.role == "assistant" and "shell returned" in m.text for m in app.query(Message)),
        TIMEOUT,
    )
    await type_text(pilot, "please ask me something?")
    await pilot.press("enter")
    await until(  # the question above the editor, and its entry in the conversation
        app,
        lambda: app.question.waiting is not None and any(m.role == "question" for m in app.query(Message)),
        TIMEOUT,
    )
    await type_text(pilot, "blue")
    shown_with_a_fixed_id(app)
    app.editor.cursor_blink = False  # a still cursor: the picture must not depend on when it is taken
    await pilot.pause()


def test_b2_main_screen_snapshot(start_gateway: StartGateway, snap_compare: Any) -> None:
    live = start_gateway()
    app = make_app(live)
    assert snap_compare(app, terminal_size=SIZE, run_before=lambda pilot: one_exchange(app, pilot))


def test_tool_activity_and_question_snapshot(start_gateway: StartGateway, snap_compare: Any) -> None:
    live = start_gateway()
    app = make_app(live)
    assert snap_compare(app, terminal_size=SIZE, run_before=lambda pilot: tool_then_question(app, pilot))


@pytest.mark.anyio
@pytest.mark.skipif(not os.environ.get("ANYY_TUI_SCREENSHOT"), reason="set ANYY_TUI_SCREENSHOT=1 to rewrite it")
async def test_write_the_docs_screenshot(start_gateway: StartGateway) -> None:
    live = start_gateway()
    app = make_app(live)
    async with app.run_test(size=SIZE) as pilot:
        await tool_then_question(app, pilot)
        SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
        app.save_screenshot(filename=SCREENSHOT.name, path=str(SCREENSHOT.parent))
    assert SCREENSHOT.read_text().startswith("<svg")
