"""One end-to-end run of ``anyy`` in a real terminal (tmux): type a message, see the offline model's
answer on the screen, quit with Ctrl+Q. Reads the screen with ``capture-pane`` until a deadline."""

from __future__ import annotations

from pathlib import Path

from tests.cli.live import StartGateway
from tests.fakes.terminal import Tmux, launch, quit_app, tmux, wait_screen

__all__ = ["tmux"]


def test_anyy_in_a_real_terminal_sends_a_message_and_shows_the_answer(
    start_gateway: StartGateway, tmux: Tmux, home: Path
) -> None:
    start_gateway()
    launch(tmux, home)
    wait_screen(tmux, lambda s: "idle" in s and "offline/offline" in s, "the status line")

    assert tmux("send-keys", "-t", "anyy", "-l", "hello from tmux").returncode == 0
    wait_screen(tmux, lambda s: "hello from tmux" in s, "the typed text")
    assert tmux("send-keys", "-t", "anyy", "Enter").returncode == 0
    screen = wait_screen(tmux, lambda s: "(offline model)" in s, "the offline model's answer")
    assert "hello from tmux" in screen

    quit_app(tmux)
