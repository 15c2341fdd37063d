"""Issue 16, TUI: the first screen says what to do; ``/`` commands complete with Tab; Tab never moves the
focus somewhere invisible, and typing is never lost (SPEC U3 asks for a client without surprises)."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widget import Widget

from anyy.tui.app import AnyyApp
from anyy.tui.completion import CommandHint, FirstHint, complete
from anyy.tui.screens import COMMANDS
from anyy.tui.tool_activity import ToolActivity
from tests.cli.live import StartGateway
from tests.fakes.terminal import Tmux, launch, quit_app, tmux, wait_screen
from tests.tui.pilot import TIMEOUT, make_app, opened, type_text, until

pytestmark = pytest.mark.anyio

__all__ = ["tmux"]


def focused(app: AnyyApp) -> Widget | None:
    return app.focused


def test_u3_completion_rules() -> None:
    assert complete("/se", COMMANDS) == "/sessions "
    assert complete("/c", COMMANDS) is None  # /clear and /continue: nothing longer in common
    assert complete("/co", COMMANDS) == "/continue "
    assert complete("/x", COMMANDS) is None
    assert complete("hello /se", COMMANDS) is None
    assert complete("/new now", COMMANDS) is None


async def test_u3_first_screen_hint_then_gone_with_the_first_message(start_gateway: StartGateway) -> None:
    live = start_gateway()
    app = make_app(live)
    async with app.run_test(size=(120, 30)) as pilot:
        await opened(app)
        (hint,) = app.query(FirstHint)
        assert "Enter to send" in str(hint.content)
        assert "/help" in str(hint.content)
        await type_text(pilot, "hello")
        await pilot.press("enter")
        await until(app, lambda: not app.query(FirstHint), TIMEOUT)


async def test_u3_slash_lists_the_commands_and_tab_completes(start_gateway: StartGateway) -> None:
    live = start_gateway()
    app = make_app(live)
    async with app.run_test(size=(120, 30)) as pilot:
        await opened(app)
        hint = app.query_one(CommandHint)
        await pilot.press("/")
        await until(app, lambda: hint.shown == list(COMMANDS))
        await pilot.press("s", "e")
        await until(app, lambda: hint.shown == ["/sessions"])
        assert "pick a session" in str(hint.content)
        await pilot.press("tab")
        assert app.editor.text == "/sessions "
        assert focused(app) is app.editor
        await until(app, lambda: not hint.has_class("shown"))
        app.editor.clear()
        await type_text(pilot, "/tr")
        await pilot.press("tab", "enter")
        await until(app, lambda: type(app.screen).__name__ == "TreeScreen")


async def test_u3_tab_reaches_tool_activity_visibly_and_typing_is_kept(start_gateway: StartGateway) -> None:
    live = start_gateway()
    app = make_app(live)
    async with app.run_test(size=(120, 30)) as pilot:
        await opened(app)
        await pilot.press("tab")  # nothing else to reach: the editor keeps the focus
        assert focused(app) is app.editor
        await type_text(pilot, "run: echo hi")
        await pilot.press("enter")
        await until(app, lambda: not app.busy and bool(app.query(ToolActivity)), TIMEOUT)
        await pilot.press("tab")
        activity = app.query_one(ToolActivity)
        assert focused(app) is activity
        assert activity.has_pseudo_class("focus")
        await pilot.press("o", "k")  # typed while the activity has the focus
        assert focused(app) is app.editor
        assert app.editor.text == "ok"
        await pilot.press("tab")
        assert focused(app) is activity
        await pilot.press("escape")
        assert focused(app) is app.editor


def test_u3_tab_under_tmux_keeps_what_is_typed(start_gateway: StartGateway, tmux: Tmux, home: Path) -> None:
    start_gateway()
    launch(tmux, home)
    wait_screen(tmux, lambda s: "idle" in s and "Enter to send" in s, "the first screen")
    assert tmux("send-keys", "-t", "anyy", "Tab").returncode == 0
    assert tmux("send-keys", "-t", "anyy", "-l", "typed after tab").returncode == 0
    wait_screen(tmux, lambda s: "typed after tab" in s, "the text typed after Tab, in the editor")
    assert tmux("send-keys", "-t", "anyy", "C-u").returncode == 0
    assert tmux("send-keys", "-t", "anyy", "-l", "/he").returncode == 0
    wait_screen(tmux, lambda s: "Tab completes" in s, "the command list")
    assert tmux("send-keys", "-t", "anyy", "Tab", "Enter").returncode == 0
    wait_screen(tmux, lambda s: "Keys" in s and "Shift+Enter, Ctrl+J" in s, "the help, from the completed /help")
    assert tmux("send-keys", "-t", "anyy", "Escape").returncode == 0
    quit_app(tmux)
