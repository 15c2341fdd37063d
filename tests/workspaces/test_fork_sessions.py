"""W3: ``session.fork`` with ``workspace_copy`` gives the fork its own copy of the workspace (a git worktree
or a plain copy), its files as they were at the fork's point, so two branches edit in parallel; deleting the
fork removes its copy, unless another session still works there. Through RPC and ``anyy sessions fork``."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from anyy.profiles import create_profile
from commons.jsonrpc import RpcError
from tests.fakes.gateways import LiveGateway, run
from tests.killtest.gateway_process import GatewayProcess

TIMEOUT = 30


def _turn(call: Any, session_id: str, text: str) -> None:
    sent = call("session.send", {"session_id": session_id, "text": text})
    assert call("session.wait", {"submission_id": sent["id"], "timeout": TIMEOUT})["state"] == "completed"


def _git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True)
    return done.stdout


def _repo(work: Path) -> None:
    (work / ".gitignore").write_text("*.log\n")
    (work / "base.txt").write_text("committed\n")
    _git(work, "init", "-q")
    _git(work, "add", "-A")
    _git(work, "-c", "user.name=u", "-c", "user.email=u@x", "commit", "-qm", "start")


def test_w3_a_worktree_fork_starts_at_its_point_and_edits_apart_then_delete_removes_it(tmp_path: Path) -> None:
    with LiveGateway(tmp_path, scripted_only=False) as live:
        work = live.workdir
        _repo(work)
        session_id = live.call("session.create")["id"]
        live.call("session.tools.configure", {"session_id": session_id, "enabled": ["write_file", "shell"]})
        _turn(live.call, session_id, "write a.txt: first")
        point = live.call("session.get", {"session_id": session_id})["session"]["head"]
        _turn(live.call, session_id, "write a.txt: second")
        (work / "run.log").write_text("ignored, not carried\n")

        forked = live.call("session.fork", {"session_id": session_id, "entry_id": point, "workspace_copy": "worktree"})
        fork_id, copy = forked["session"]["id"], Path(forked["workspace_copy"])
        assert forked["session"]["workspace"] == str(copy.resolve())
        assert copy.parent == work.parent
        assert copy != work
        assert (copy / "a.txt").read_text() == "first"  # as at the fork's point, not the parent's head
        assert (copy / "base.txt").read_text() == "committed\n"
        assert not (copy / "run.log").exists()
        assert str(copy) in _git(work, "worktree", "list")

        live.call("session.tools.configure", {"session_id": fork_id, "enabled": ["write_file", "shell"]})
        _turn(live.call, fork_id, "write b.txt: the fork's own")
        assert (copy / "b.txt").read_text() == "the fork's own"
        assert not (work / "b.txt").exists()
        assert (work / "a.txt").read_text() == "second"  # the parent's files are its own

        live.call("session.delete", {"session_id": fork_id})
        assert not copy.exists()
        assert str(copy) not in _git(work, "worktree", "list")  # the repository forgot it too
        assert (work / "a.txt").read_text() == "second"


def test_w3_a_copy_fork_stays_while_a_fork_of_it_works_there(tmp_path: Path) -> None:
    with LiveGateway(tmp_path, scripted_only=False) as live:
        work = live.workdir
        (work / "notes.txt").write_text("no repository here\n")
        session_id = live.call("session.create")["id"]
        forked = live.call("session.fork", {"session_id": session_id, "workspace_copy": "copy"})
        copy = Path(forked["workspace_copy"])
        assert (copy / "notes.txt").read_text() == "no repository here\n"
        again = live.call("session.fork", {"session_id": forked["session"]["id"]})  # inherits the copy
        assert again["session"]["workspace"] == forked["session"]["workspace"]

        live.call("session.delete", {"session_id": forked["session"]["id"]})
        assert (copy / "notes.txt").exists()  # its fork still works there
        live.call("session.delete", {"session_id": again["session"]["id"]})
        assert not copy.exists()
        assert (work / "notes.txt").exists()


def test_w3_a_worktree_fork_outside_a_repository_is_refused_and_nothing_is_made(tmp_path: Path) -> None:
    with LiveGateway(tmp_path) as live:
        session_id = live.call("session.create")["id"]
        before = sorted(p.name for p in tmp_path.iterdir())
        with pytest.raises(RpcError, match="not in a git repository: fork it with a copy"):
            live.call("session.fork", {"session_id": session_id, "workspace_copy": "worktree"})
        assert sorted(p.name for p in tmp_path.iterdir()) == before
        sessions = live.call("session.list", {})["items"]
        assert [s["id"] for s in sessions] == [session_id]  # no fork recorded


def test_w3_sessions_fork_with_a_workspace_copy_from_the_command_line(tmp_path: Path) -> None:
    home = tmp_path / "home"
    create_profile(home, "cli")
    work = tmp_path / "work"
    work.mkdir()
    (work / "notes.txt").write_text("the parent's\n")
    gateway = GatewayProcess(home, "cli", cwd=work, log=tmp_path / "stderr.log")
    gateway.start()
    try:
        rpc = gateway.client()
        session_id = rpc.call("session.create")["id"]
        done = run(home, "sessions", "fork", session_id, "--workspace-copy", "copy", "--profile", "cli")
        assert done.returncode == 0, done.stderr
        assert f"forked {session_id} as " in done.stdout
        copy = next(p for p in tmp_path.iterdir() if p.name.startswith("work-fork-"))
        assert f"its own copy at {copy}" in done.stdout
        assert f"workspace {copy}" in done.stdout
        assert (copy / "notes.txt").read_text() == "the parent's\n"

        bad = run(home, "sessions", "fork", session_id, "--workspace-copy", "worktree", "--profile", "cli")
        assert bad.returncode != 0
        assert "not in a git repository" in bad.stderr
        assert "Traceback" not in bad.stderr
    finally:
        gateway.stop()


def test_w3_files_only_rewind_keeps_the_conversation_and_needs_files_restore(tmp_path: Path) -> None:
    with LiveGateway(tmp_path, scripted_only=False) as live:
        work = live.workdir
        session_id = live.call("session.create")["id"]
        live.call("session.tools.configure", {"session_id": session_id, "enabled": ["write_file"]})
        _turn(live.call, session_id, "write a.txt: first")
        point = live.call("session.get", {"session_id": session_id})["session"]["head"]
        _turn(live.call, session_id, "write a.txt: second")
        head = live.call("session.get", {"session_id": session_id})["session"]["head"]
        with pytest.raises(RpcError, match='give files: "restore" with it'):
            live.call("session.navigate", {"session_id": session_id, "entry_id": point, "conversation": False})
        assert (work / "a.txt").read_text() == "second"
        done = live.call(
            "session.navigate",
            {"session_id": session_id, "entry_id": point, "files": "restore", "conversation": False},
        )
        assert done["files"]["changed"] == ["a.txt"]
        assert (work / "a.txt").read_text() == "first"
        assert live.call("session.get", {"session_id": session_id})["session"]["head"] == head
        back = {"session_id": session_id, "entry_id": head, "files": "restore", "conversation": False}
        live.call("session.navigate", back)  # the state left was joined to the head: undone
        assert (work / "a.txt").read_text() == "second"
