"""``anyy`` in a real terminal: tmux on a private server socket, its screen read with ``capture-pane``
until a deadline. Without tmux the tests skip, or fail in CI (tests/fakes/prerequisites.py)."""

from __future__ import annotations

import shlex
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.fakes.gateways import ANYY
from tests.fakes.prerequisites import missing

TMUX = shutil.which("tmux")
DEADLINE = 60.0
POLL = 0.1

Tmux = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture
def tmux(tmp_path: Path) -> Iterator[Tmux]:
    """tmux on a private server socket (never the user's server); the server is killed in teardown."""
    if TMUX is None:
        missing("terminal", "tmux is not installed: the real-terminal runs need it")
    socket = str(tmp_path / "tmux.sock")

    def command(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [TMUX, "-S", socket, *args], capture_output=True, text=True, timeout=DEADLINE, check=False
        )

    yield command
    command("kill-server")


def launch(tmux: Tmux, home: Path, *args: str) -> None:
    """``anyy ARGS`` as typed, in a 100x30 tmux window named ``anyy``."""
    words = " ".join(shlex.quote(a) for a in (ANYY, *args))
    program = f"env ANYY_HOME={shlex.quote(str(home))} TERM=xterm-256color {words}"
    started = tmux("new-session", "-d", "-s", "anyy", "-x", "100", "-y", "30", program)
    assert started.returncode == 0, started.stderr


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


def quit_app(tmux: Tmux) -> None:
    """Ctrl+Q, then wait for the tmux session to end with the app."""
    assert tmux("send-keys", "-t", "anyy", "C-q").returncode == 0
    wait_ended(tmux, "anyy did not quit on Ctrl+Q")


def wait_ended(tmux: Tmux, failure: str = "anyy's tmux session did not end") -> None:
    """Wait for the tmux session to end with its program (it quit, or was killed)."""
    deadline = time.monotonic() + DEADLINE
    while tmux("has-session", "-t", "anyy").returncode == 0:
        assert time.monotonic() < deadline, failure
        time.sleep(POLL)
