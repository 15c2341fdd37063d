"""Q4 under tmux: Alt+Enter (ESC CR on the wire) adds a follow-up rather than steering; Ctrl+F does in any
terminal; tmux's settings are read and the first screen says what to change (as pi does)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from anyy.tui.keys import NO_ALT_ENTER, read_alt_enter, tmux_advice
from tests.cli.live import Hold, MakeHold, StartGateway, hold
from tests.fakes.terminal import Tmux, launch, quit_app, tmux, wait_screen
from tests.tui.pilot import TIMEOUT, make_app, notices, opened, type_text, until

__all__ = ["hold", "tmux"]


def keys(tmux: Tmux, *names: str) -> None:
    assert tmux("send-keys", "-t", "anyy", *names).returncode == 0


def typed(tmux: Tmux, text: str) -> None:
    assert tmux("send-keys", "-t", "anyy", "-l", text).returncode == 0


def test_q4_alt_enter_and_ctrl_f_add_follow_ups_under_tmux(
    start_gateway: StartGateway, tmux: Tmux, home: Path, hold: MakeHold
) -> None:
    start_gateway()
    launch(tmux, home)
    wait_screen(tmux, lambda s: "idle" in s and "offline/offline" in s, "the status line")
    held: Hold = hold()
    typed(tmux, held.command)
    keys(tmux, "Enter")
    wait_screen(tmux, lambda s: "working" in s, "the working state")
    typed(tmux, "later by alt")
    keys(tmux, "M-Enter")  # tmux sends ESC CR
    wait_screen(tmux, lambda s: "follow-up: later by alt" in s, "the follow-up from Alt+Enter")
    typed(tmux, "later by ctrl f")
    keys(tmux, "C-f")
    screen = wait_screen(tmux, lambda s: "follow-up: later by ctrl f" in s, "the follow-up from Ctrl+F")
    assert "steering:" not in screen
    held.release()
    wait_screen(tmux, lambda s: "later by ctrl f" in s and "idle" in s, "the follow-ups answered")
    quit_app(tmux)


def test_q4_the_first_screen_under_tmux_says_which_settings_to_change(
    start_gateway: StartGateway, tmux: Tmux, home: Path
) -> None:
    start_gateway()
    # A server of tmux's defaults (no ~/.tmux.conf), kept up by a session of its own, set as a user may have.
    assert tmux("-f", "/dev/null", "new-session", "-d", "-s", "setup", "sleep 600").returncode == 0
    assert tmux("set-option", "-s", "extended-keys", "off").returncode == 0
    assert tmux("set-option", "-s", "escape-time", "500").returncode == 0
    launch(tmux, home)
    screen = wait_screen(tmux, lambda s: "~/.tmux.conf" in s and "idle" in s, "the tmux advice")
    flat = " ".join(screen.split())
    assert "set -s extended-keys on" in flat
    assert "set -s escape-time 10" in flat
    assert "Ctrl+F adds a follow-up" in flat
    quit_app(tmux)


def test_q4_tmux_advice_reads_the_settings() -> None:
    def settings(extended: str, escape: str) -> Callable[[list[str]], str | None]:
        return lambda args: extended if "extended-keys" in args else escape

    assert tmux_advice({}, settings("off", "500")) is None  # not in tmux
    inside = {"TMUX": "/tmp/tmux-0/default,1,0"}
    advice = tmux_advice(inside, settings("off", "500"))
    assert advice is not None
    assert "extended-keys off, escape-time 500 ms" in advice
    assert "set -s extended-keys on; set -s escape-time 10" in advice
    assert tmux_advice(inside, settings("on", "10")) is None
    only_escape = tmux_advice(inside, settings("on", "0"))
    assert only_escape is not None
    assert "extended-keys on;" not in only_escape
    assert "set -s escape-time 10" in only_escape


def test_q4_esc_cr_reads_as_alt_enter() -> None:
    from textual._xterm_parser import XTermParser

    read_alt_enter()
    read_alt_enter()  # once is enough: a second call changes nothing

    def read(data: str) -> list[str]:
        parser = XTermParser()
        events = [*parser.feed(data), *parser.feed("")]  # "": the end of the input ends a pending ESC
        return [key for event in events if (key := getattr(event, "key", None)) is not None]

    assert [read("\x1b\r"), read("\r"), read("\x06"), read("\x1b")] == [
        ["alt+enter"],
        ["enter"],
        ["ctrl+f"],
        ["escape"],
    ]


def test_q4_a_textual_without_the_hook_is_left_alone_and_ctrl_f_still_adds_a_follow_up() -> None:
    from textual._xterm_parser import XTermParser

    class Gone:  # a Textual whose parser lost the private hook
        pass

    class Reshaped:  # one whose hook takes other arguments
        def _sequence_to_key_events(self, sequence: str) -> list[str]:
            return [sequence]

    hook = Reshaped.__dict__["_sequence_to_key_events"]
    assert read_alt_enter(Gone) is False
    assert not hasattr(Gone, "_sequence_to_key_events")
    assert read_alt_enter(Reshaped) is False
    assert Reshaped.__dict__["_sequence_to_key_events"] is hook  # not wrapped: its parsing stays as it was
    assert read_alt_enter(XTermParser) is True
    # The key that always works reads as itself whatever became of the hook (Textual's own mapping).
    parser = XTermParser()
    assert [getattr(e, "key", None) for e in [*parser.feed("\x06"), *parser.feed("")]] == ["ctrl+f"]


@pytest.mark.anyio
async def test_q4_without_the_hook_the_first_screen_names_ctrl_f(
    start_gateway: StartGateway, monkeypatch: pytest.MonkeyPatch, hold: MakeHold
) -> None:
    import anyy.tui.app

    monkeypatch.setattr(anyy.tui.app, "read_alt_enter", lambda: False)  # as with a Textual without the hook
    live = start_gateway()
    app = make_app(live)
    async with app.run_test(size=(100, 30)) as pilot:
        await opened(app)
        assert NO_ALT_ENTER in notices(app)
        held: Hold = hold()
        await type_text(pilot, held.command)
        await pilot.press("enter")
        await until(app, lambda: app.busy)
        await type_text(pilot, "later")
        await pilot.press("ctrl+f")
        await until(app, lambda: [(i.kind, i.text) for i in app.state.queue] == [("follow_up", "later")])
        held.release()
        await until(app, lambda: not app.busy and not app.state.queue, TIMEOUT)
        await pilot.press("ctrl+q")
