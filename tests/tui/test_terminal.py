"""One end-to-end run of ``anyy`` in a real terminal (tmux): type a message, see the offline model's
answer on the screen, quit with Ctrl+Q. Reads the screen with ``capture-pane`` until a deadline."""

from __future__ import annotations

import shlex
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.cli.live import ANYY, StartGateway

TMUX = shutil.which("tmux")
DEADLINE = 60.0
POLL = 0.1

pytestmark = pytest.mark.skipif(TMUX is None, reason="tmux is not installed: the real-terminal run needs it")

Tmux = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture
def tmux(tmp_path: Path) -> Iterator[Tmux]:
    """tmux on a private server socket (never the user's server); the server is killed in teardown."""
    assert TMUX is not None
    socket = str(tmp_path / "tmux.sock")

    def command(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [TMUX, "-S", socket, *args], capture_output=True, text=True, timeout=DEADLINE, check=False
        )

    yield command
    command("kill-server")


def wait_screen(tmux: Tmux, wanted: Callable[[str], bool], what: str) -> str:
    """The pane's text once ``wanted`` holds for it; fails with the last screen after the deadline."""
    deadline = time.monotonic() + DEADLINE
    screen = ""
    while time.monotonic() < deadline:
        shown = tmux("capture-pane", "-p", "-t", "anyy")
        if shown.returncode != 0:  # the session ended (the app quit)
            return screen
        screen = shown.stdout
        if wanted(screen):
            return screen
        time.sleep(POLL)  # reading a screen: the poll interval of a bounded loop, not synchronisation
    raise AssertionError(f"{what} did not appear within {DEADLINE:g} s; the screen was:\n{screen}")


def test_anyy_in_a_real_terminal_sends_a_message_and_shows_the_answer(
    start_gateway: StartGateway, tmux: Tmux, home: Path
) -> None:
    start_gateway()
    program = f"env ANYY_HOME={shlex.quote(str(home))} TERM=xterm-256color {shlex.quote(ANYY)}"
    started = tmux("new-session", "-d", "-s", "anyy", "-x", "100", "-y", "30", program)
    assert started.returncode == 0, started.stderr
    wait_screen(tmux, lambda s: "idle" in s and "offline/offline" in s, "the status line")

    assert tmux("send-keys", "-t", "anyy", "-l", "hello from tmux").returncode == 0
    wait_screen(tmux, lambda s: "hello from tmux" in s, "the typed text")
    assert tmux("send-keys", "-t", "anyy", "Enter").returncode == 0
    screen = wait_screen(tmux, lambda s: "(offline model)" in s, "the offline model's answer")
    assert "hello from tmux" in screen

    assert tmux("send-keys", "-t", "anyy", "C-q").returncode == 0
    deadline = time.monotonic() + DEADLINE
    while tmux("has-session", "-t", "anyy").returncode == 0:
        assert time.monotonic() < deadline, "anyy did not quit on Ctrl+Q"
        time.sleep(POLL)
