"""H2 (a runner killed mid-turn), H3 (ameesh attach) and H9 (moved worktrees found by their git identity)."""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from ameesh import paths, worktrees
from ameesh.harnesses.claude import ClaudeHarness, transcript_path
from ameesh.runner import lock_agent
from tests.ameesh.conftest import Ameesh


def git(cwd: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.org", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
    )


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    main = tmp_path / "trees" / "main"
    main.mkdir(parents=True)
    git(main, "init", "-q", "-b", "main")
    git(main, "commit", "-q", "--allow-empty", "-m", "start")
    return main


# -- H3 ----------------------------------------------------------------------------------------------


def test_h3_attach_refuses_an_agent_without_a_session(ameesh: Ameesh) -> None:
    ameesh.add("bob")
    result = ameesh("attach", "bob", ok=False)
    assert result.exit_code == 1
    assert "bob has no session yet" in result.output


def test_h3_attach_prints_and_execs_the_command_that_resumes_the_session(ameesh: Ameesh) -> None:
    ameesh.add("bob")
    ameesh("send", "bob", "remember PINEAPPLE-42")
    ameesh("run")
    sid = ameesh.json("show", "bob")["session_id"]
    printed = ameesh("attach", "bob").output.strip()
    assert printed.startswith(f"cd {shlex.quote(str(ameesh.work))} && ")
    assert printed.endswith(f"--resume {sid}")
    done = subprocess.run(
        [sys.executable, "-c", "from ameesh.cli import main; main()", "attach", "bob", "--exec"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    opened = json.loads(done.stdout)
    assert opened["session_id"] == sid
    assert opened["result"].startswith("RESUMED (1 earlier turns)")  # the same conversation, opened again
    assert ameesh.calls()[-1]["cwd"] == str(ameesh.work)


def test_h3_attach_and_the_runner_never_play_one_agent_at_once(ameesh: Ameesh) -> None:
    ameesh.add("bob")
    ameesh("send", "bob", "first")
    ameesh("run")
    # A runner holds bob: attaching is refused, saying why.
    with lock_agent(ameesh.root, "bob") as locked:
        assert locked
        refused = ameesh("attach", "bob", "--exec", ok=False)
    assert refused.exit_code == 1
    assert "being played by a runner" in refused.output
    # A person is in bob's session (the interactive harness hangs here): the runner leaves bob's message waiting.
    fifo = ameesh.root.parent / "attached.fifo"
    os.mkfifo(fifo)
    ameesh.script({"match": "", "times": 1, "notify": str(fifo), "hang": True})
    attached = subprocess.Popen(
        [sys.executable, "-c", "from ameesh.cli import main; main()", "attach", "bob", "--exec"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        with open(fifo, encoding="utf-8") as note:
            assert note.readline() == "started\n"
        ameesh("send", "bob", "second")
        busy = ameesh("run", ok=False)
        assert busy.exit_code == 3
        assert "played elsewhere (another runner or ameesh attach), left waiting: bob" in busy.output
        assert ameesh.json("status")["waiting"] == 1
    finally:
        interactive = _children(attached.pid)
        attached.kill()
        attached.wait(timeout=30)
        for pid in interactive:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


@pytest.mark.parametrize(
    ("harness", "expected"),
    [
        ("claude", ["claude", "--resume", "S1"]),
        ("codex", ["codex", "resume", "S1"]),
        ("anyy", ["anyy", "--resume", "S1"]),
        ("pi", ["pi", "--session", "{state}/pi-sessions/S1.jsonl"]),
    ],
)
def test_h3_attach_command_of_each_harness(ameesh: Ameesh, harness: str, expected: list[str]) -> None:
    for var in ("AMEESH_CLAUDE_BIN", "AMEESH_CODEX_BIN", "AMEESH_PI_BIN", "AMEESH_ANYY_BIN"):
        ameesh.monkeypatch.delenv(var, raising=False)
    ameesh("add", "a", "--harness", harness, "--dir", str(ameesh.work))
    with ameesh.registry() as reg:
        reg.update_agent("a", session_id="S1")
    state = str(paths.agent_dir(ameesh.root, "a"))
    printed = ameesh("attach", "a").output.strip()
    assert printed == f"cd {shlex.quote(str(ameesh.work))} && " + shlex.join([e.format(state=state) for e in expected])


# -- H9 ----------------------------------------------------------------------------------------------


def test_h9_a_moved_worktree_is_adopted_and_the_session_resumed_there(ameesh: Ameesh, repo: Path) -> None:
    trees = repo.parent
    git(repo, "worktree", "add", "-q", "-b", "feature", str(trees / "wt"))
    ameesh.monkeypatch.setenv("AMEESH_WORKTREE_ROOTS", f"{ameesh.root / 'nowhere'}:{trees}")
    ameesh("add", "bob", "--harness", "fake", "--dir", str(trees / "wt"))
    ameesh("send", "bob", "remember PINEAPPLE-42")
    ameesh("run")
    sid = ameesh.json("show", "bob")["session_id"]
    (trees / "deeper").mkdir()
    git(repo, "worktree", "move", str(trees / "wt"), str(trees / "deeper" / "wt2"))
    ameesh("send", "bob", "which word?")
    ameesh("run")
    shown = ameesh.json("show", "bob")
    assert shown["workdir"] == str((trees / "deeper" / "wt2").resolve())
    assert shown["session_id"] == sid
    assert ameesh.answers("bob")[-1].startswith("RESUMED (1 earlier turns)")
    assert ameesh.calls()[-1]["cwd"] == shown["workdir"]
    relocated = [i for i in ameesh.json("thread", "bob") if i["kind"] == "relocated"]
    assert len(relocated) == 1
    assert "wt2" in relocated[0]["text"]
    assert ameesh.json("alerts") == []


def test_h9_nothing_is_adopted_when_absent_ambiguous_or_taken(ameesh: Ameesh, repo: Path) -> None:
    trees = repo.parent
    git(repo, "worktree", "add", "-q", "-b", "feature", str(trees / "wt"))
    ameesh.monkeypatch.setenv("AMEESH_WORKTREE_ROOTS", str(trees))
    ameesh("add", "bob", "--harness", "fake", "--dir", str(trees / "wt"))
    ameesh("add", "ann", "--harness", "fake", "--dir", str(trees / "wt"))

    # Absent: the worktree is removed, nothing with that identity remains.
    git(repo, "worktree", "move", str(trees / "wt"), str(ameesh.root.parent / "elsewhere"))
    ameesh("send", "bob", "hi")
    assert ameesh("run", ok=False).exit_code == 3
    [alert] = ameesh.json("alerts", "bob")
    assert "no worktree of branch feature" in alert["message"]

    # Taken: the one candidate is already ann's working directory.
    git(repo, "worktree", "move", str(ameesh.root.parent / "elsewhere"), str(trees / "wt2"))
    with ameesh.registry() as reg:
        reg.update_agent("ann", workdir=str((trees / "wt2").resolve()))
    ameesh("alerts", "ack", *(str(a["num"]) for a in ameesh.json("alerts")))
    assert ameesh("run", ok=False).exit_code == 3
    [alert] = ameesh.json("alerts", "bob")
    assert "already another agent's" in alert["message"]

    # Ambiguous: two free worktrees on the same branch (a second clone sharing nothing is not a candidate).
    with ameesh.registry() as reg:
        reg.update_agent("ann", workdir=str(ameesh.work))
    ameesh("alerts", "ack", *(str(a["num"]) for a in ameesh.json("alerts")))
    git(repo, "worktree", "add", "-q", "-f", str(trees / "wt3"), "feature")
    assert ameesh("run", ok=False).exit_code == 3
    [alert] = ameesh.json("alerts", "bob")
    assert "ambiguous" in alert["message"]
    assert ameesh.json("show", "bob")["workdir"] == str((trees / "wt").resolve())
    assert not [i for i in ameesh.json("thread", "bob") if i["kind"] == "relocated"]


def test_h9_search_depth_is_bounded(tmp_path: Path, repo: Path) -> None:
    deep = tmp_path / "trees" / "a" / "b" / "c" / "d" / "e"
    deep.mkdir(parents=True)
    git(repo, "worktree", "add", "-q", "-b", "deep", str(deep / "wt"))
    assert worktrees.working_trees(tmp_path / "trees") == [repo]


def test_h9_claude_transcripts_follow_the_adopted_worktree(
    ameesh: Ameesh, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    trees = repo.parent
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(ameesh.root.parent / "claude-config"))
    monkeypatch.setenv("AMEESH_WORKTREE_ROOTS", str(trees))
    git(repo, "worktree", "add", "-q", "-b", "feature", str(trees / "wt"))
    ameesh("add", "cc", "--harness", "claude", "--dir", str(trees / "wt"))
    old = transcript_path("S1", (trees / "wt").resolve())
    old.parent.mkdir(parents=True)
    old.write_text('{"type":"user"}\n', encoding="utf-8")
    git(repo, "worktree", "move", str(trees / "wt"), str(trees / "wt2"))
    with ameesh.registry() as reg:
        reg.update_agent("cc", session_id="S1")
        new = worktrees.relocate(reg, reg.agent("cc"), ClaudeHarness())
    assert new == (trees / "wt2").resolve()
    assert transcript_path("S1", new).read_text(encoding="utf-8") == '{"type":"user"}\n'


# -- H2 ----------------------------------------------------------------------------------------------


def _children(pid: int) -> list[int]:
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        found += [int(c) for c in (task / "children").read_text(encoding="utf-8").split()]
    return found


def _running(pid: int) -> bool:
    """The process exists and is not a zombie (this machine's init may be slow to reap orphans)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii")
    except OSError:
        return False
    return stat[stat.rfind(")") + 2] != "Z"


def test_h2_a_runner_killed_mid_turn_is_restarted_on_the_same_session(ameesh: Ameesh) -> None:
    fifo = ameesh.root.parent / "started.fifo"
    os.mkfifo(fifo)
    ameesh.script({"match": "second", "times": 1, "notify": str(fifo), "hang": True})
    ameesh.add("bob")
    ameesh("send", "bob", "first: remember PINEAPPLE-42")
    ameesh("run")
    sid = ameesh.json("show", "bob")["session_id"]
    ameesh("send", "bob", "second: which word?")
    runner = subprocess.Popen(  # the real command, in its own process
        [sys.executable, "-c", "from ameesh.cli import main; main()", "run"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        with open(fifo, encoding="utf-8") as note:  # returns once the harness has started the turn
            assert note.readline() == "started\n"
        harness_pids = _children(runner.pid)
        status = ameesh.json("status")  # the turn being played shows, with its process
        assert status["playing"] == 1
        assert [a["playing"]["pid"] for a in status["by_agent"]] == harness_pids
    finally:
        runner.kill()
        runner.wait(timeout=30)
    assert harness_pids
    (harness,) = harness_pids  # in its own process group: the runner's death left it running, still hanging
    assert _running(harness)
    assert ameesh.json("status")["waiting"] == 1
    ameesh("run")
    # The restarted runner ended the leftover before resuming the session (it would have gone on writing).
    assert not _running(harness)
    assert ameesh.json("status")["playing"] == 0
    assert "bob (fake, build): idle; session " in ameesh("status").output
    assert any(
        f"process group {harness}" in i["text"] for i in ameesh.json("thread", "bob") if i["kind"] == "recovered"
    )
    assert ameesh.json("show", "bob")["session_id"] == sid
    last = ameesh.calls()[-1]
    assert last["resume"] == sid
    assert ameesh.answers("bob")[-1].startswith("RESUMED (1 earlier turns)")
    assert [s["session_id"] for s in ameesh.json("sessions", "bob")] == [sid]
