"""W4: a Gateway killed (SIGKILL) in the middle of a capture leaves no half capture offered as a restore
point: the capture is held between its objects and its commit by a ``git`` on PATH that waits on a pipe
(no sleeps), the Gateway is killed there, and after a restart every capture joined to an entry is whole,
the doctor finds nothing wrong, and a rewind works."""

from __future__ import annotations

import os
import select
import shutil
import signal
from pathlib import Path

import pytest

from anyy.profiles import create_profile, get_profile
from anyy.profiles.doctor import doctor
from anyy.profiles.store import open_store
from anyy.workspaces.captures import CAPTURES_DIR, CaptureStore
from tests.killtest.gateway_process import GatewayProcess

TIMEOUT = 60.0

WRAPPER = """#!/bin/sh
case " $* " in
  *" commit-tree "*)
    if [ -e "$ANYY_TEST_GIT_MARK" ]; then
      echo $$ > "$ANYY_TEST_GIT_REACHED"
      read line < "$ANYY_TEST_GIT_HOLD"
    fi;;
esac
exec {git} "$@"
"""


def _read_pipe(path: Path) -> str:
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        got = b""
        while not got.endswith(b"\n"):
            ready, _, _ = select.select([fd], [], [], TIMEOUT)
            assert ready, "the capture never reached its commit"
            got += os.read(fd, 64)
        return got.decode().strip()
    finally:
        os.close(fd)


def test_w4_a_kill_during_a_capture_leaves_no_half_capture(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real_git = shutil.which("git")
    assert real_git is not None
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "git").write_text(WRAPPER.format(git=real_git))
    (bin_dir / "git").chmod(0o755)
    mark, reached, held = tmp_path / "mark", tmp_path / "reached", tmp_path / "hold"
    os.mkfifo(reached)
    os.mkfifo(held)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("ANYY_TEST_GIT_MARK", str(mark))
    monkeypatch.setenv("ANYY_TEST_GIT_REACHED", str(reached))
    monkeypatch.setenv("ANYY_TEST_GIT_HOLD", str(held))
    home = tmp_path / "home"
    create_profile(home, "w4")
    work = tmp_path / "work"
    work.mkdir()
    gateway = GatewayProcess(home, "w4", cwd=work, log=tmp_path / "stderr.log")
    gateway.start()
    try:
        rpc = gateway.client()
        session_id = rpc.call("session.create")["id"]
        rpc.call("session.tools.configure", session_id=session_id, enabled=["write_file"])
        sent = rpc.call("session.send", session_id=session_id, text="write a.txt: one")
        assert rpc.call("session.wait", submission_id=sent["id"], timeout=TIMEOUT)["state"] == "completed"
        mark.write_text("hold the next commit")
        rpc.call("session.send", session_id=session_id, text="write b.txt: two")
        holder = int(_read_pipe(reached))  # b.txt's blob and tree are written; its commit is not
        gateway.kill()
        os.kill(holder, signal.SIGKILL)  # the held git, orphaned by the kill: it never writes the commit
        mark.unlink()
        assert (work / "b.txt").read_text() == "two"
        gateway.start()
        rpc = gateway.client()
        users = [
            e for e in rpc.call("session.history", session_id=session_id, limit=50)["items"] if e["kind"] == "user"
        ]
        # The state before the killed pass is offered (it was captured whole); its "after" never was.
        whole = rpc.call("session.files.diff", session_id=session_id)
        assert whole["added"] == ["a.txt"]
        first_user = users[-1]["id"]
        restored = rpc.call("session.navigate", session_id=session_id, entry_id=first_user, files="restore")
        assert restored["files"]["removed"] == ["a.txt"]
        # b.txt was written after the last whole capture: like a hand edit, it is kept and said so.
        assert restored["files"]["kept"] == ["b.txt"]
    finally:
        gateway.stop()
    profile = get_profile(home, "w4")
    captures = CaptureStore(profile.path / CAPTURES_DIR)
    store = open_store(profile)
    try:
        joined = store.file_capture_commits()
    finally:
        store.close()
    assert joined
    assert all(captures.exists(commit) for commit in joined)
    finding = next(f for f in doctor(profile, repair=True).findings if f.check == "file_captures")
    assert finding.left == 0
    assert captures.check() == []
