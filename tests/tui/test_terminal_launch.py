"""``anyy --resume ID`` and ``anyy --role NAME`` exactly as a user types them, in a real terminal (tmux),
against a real Gateway process (B2, B3)."""

from __future__ import annotations

import os
import signal
from pathlib import Path

from tests.fakes.gateways import StartGateway
from tests.fakes.terminal import Tmux, launch, quit_app, tmux, wait_ended, wait_screen

__all__ = ["tmux"]


def test_b2_anyy_resume_id_opens_that_session_with_its_history(
    start_gateway: StartGateway, tmux: Tmux, home: Path
) -> None:
    live = start_gateway()
    with live.client() as client:
        session_id = client.call("session.create", {"title": "resumed"})["id"]
        sent = client.call("session.send", {"session_id": session_id, "text": "remember PINEAPPLE"})
        assert client.call("session.wait", {"submission_id": sent["id"], "timeout": 60})["state"] == "completed"
        client.call("session.create", {"title": "a newer one"})  # the newest is not the one asked for
    launch(tmux, home, "--resume", session_id)
    screen = wait_screen(tmux, lambda s: "remember PINEAPPLE" in s and "idle" in s, "the resumed history")
    assert "(offline model)" in screen  # its answer too
    quit_app(tmux)


def test_b3_anyy_role_name_starts_a_new_session_with_that_role(
    start_gateway: StartGateway, tmux: Tmux, home: Path
) -> None:
    live = start_gateway()
    roles = home / "profiles" / live.profile / "roles"
    (roles / "scribe.toml").write_text('identity = "You are Scribe."\nsoul = "Write tersely."\n', encoding="utf-8")
    launch(tmux, home, "--role", "scribe")
    wait_screen(tmux, lambda s: "role scribe" in s and "idle" in s, "the status line with the role")
    with live.client() as client:  # made by its first message, not by opening (U1)
        assert client.call("session.list", {"limit": 10})["items"] == []
    assert tmux("send-keys", "-t", "anyy", "-l", "hello scribe").returncode == 0
    assert tmux("send-keys", "-t", "anyy", "Enter").returncode == 0
    wait_screen(tmux, lambda s: "You said: «hello scribe»" in s and "idle" in s, "the answer")
    with live.client() as client:
        sessions = client.call("session.list", {"limit": 10})["items"]
    assert [s["role"] for s in sessions] == ["scribe"]
    quit_app(tmux)


def test_u1_a_tui_killed_before_its_first_message_leaves_no_session(
    start_gateway: StartGateway, tmux: Tmux, home: Path
) -> None:
    live = start_gateway()
    launch(tmux, home)
    wait_screen(tmux, lambda s: "new session" in s and "idle" in s, "the new session's status line")
    shown = tmux("display-message", "-p", "-t", "anyy", "#{pane_pid}")  # env execs anyy: the app's own pid
    assert shown.returncode == 0, shown.stderr
    os.kill(int(shown.stdout.strip()), signal.SIGKILL)  # no chance to clean anything up
    wait_ended(tmux)
    with live.client() as client:
        assert client.call("session.list", {"limit": 10})["items"] == []
