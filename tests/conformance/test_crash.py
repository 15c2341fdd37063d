"""G3: a process killed at any moment loses no committed entry and no accepted submission, and leaves no
half-written pass; on restart, work that was running is marked interrupted and pending items stay pending."""

from __future__ import annotations

import os
import random
import select
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from anyy.domain.entries import EntryKind
from anyy.domain.sessions import NewSession
from tests.conformance.backends import DURABLE, open_backend

CHILD = Path(__file__).with_name("crash_child.py")
ROOT = Path(__file__).resolve().parents[2]
KILLS = 50
SEED = 20240917
MAX_DELAY = 0.06  # seconds of work after the first acknowledgement before the kill
FIRST_ACK_TIMEOUT = 30.0
PASS_KINDS = [EntryKind.ASSISTANT, EntryKind.TOOL_CALL, EntryKind.TOOL_RESULT]


class Lines:
    """Complete lines read from a pipe, with a deadline instead of sleeps."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.buffer = b""
        self.lines: list[str] = []
        self.eof = False

    def _take(self, chunk: bytes) -> None:
        self.buffer += chunk
        *complete, self.buffer = self.buffer.split(b"\n")
        self.lines += [line.decode() for line in complete]

    def read_until(self, deadline: float, *, stop_at: str | None = None) -> None:
        """Read until the deadline (or EOF, or a complete line starting with ``stop_at`` when asked)."""
        while not self.eof:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return
            ready, _, _ = select.select([self.fd], [], [], remaining)
            if not ready:
                return
            chunk = os.read(self.fd, 65536)
            if not chunk:
                self.eof = True
                return
            self._take(chunk)
            if stop_at is not None and any(line.startswith(stop_at) for line in self.lines):
                return

    def read_to_end(self) -> None:
        while not self.eof:
            self.read_until(time.monotonic() + FIRST_ACK_TIMEOUT)


def _run_and_kill(backend: str, directory: Path, session_id: str, run: int, delay: float) -> list[str]:
    """Start the child, wait for its first acknowledged pass, let it work ``delay`` s more, SIGKILL it.

    Waiting for a pass (not a fixed time) makes every run write one whatever a commit costs (an fsync
    on a busy disk takes tens of milliseconds); the random delay then lands the kill anywhere after it."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    errors = directory / f"child-{run}.err"
    with open(errors, "wb") as stderr:
        child = subprocess.Popen(
            [sys.executable, str(CHILD), backend, str(directory), session_id, str(run)],
            stdout=subprocess.PIPE,
            stderr=stderr,
            env=env,
        )
    assert child.stdout is not None
    lines = Lines(child.stdout.fileno())
    try:
        lines.read_until(time.monotonic() + FIRST_ACK_TIMEOUT, stop_at="P ")
        assert any(line.startswith("P ") for line in lines.lines), (
            f"the child acknowledged no pass: {errors.read_text()}"
        )
        lines.read_until(time.monotonic() + delay)
        assert child.poll() is None, f"the child stopped by itself: {errors.read_text()}"
        child.send_signal(signal.SIGKILL)
        child.wait()
        lines.read_to_end()  # what it printed before dying was acknowledged
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        child.stdout.close()
    return lines.lines


@pytest.mark.slow
# Only backends whose data outlives the process: an in-memory store cannot survive a kill by design.
@pytest.mark.parametrize("backend", sorted(DURABLE))
def test_g3_killed_at_any_moment_loses_nothing_acknowledged(backend: str, tmp_path: Path) -> None:
    store = open_backend(backend, tmp_path)
    session_id = store.create_session(NewSession(title="crash")).id
    store.close()

    rng = random.Random(SEED)
    acknowledged: list[str] = []
    passes: list[str] = []
    started = time.monotonic()
    for run in range(KILLS):
        for line in _run_and_kill(backend, tmp_path, session_id, run, rng.uniform(0, MAX_DELAY)):
            tag, value = line.split(" ", 1)
            (acknowledged if tag == "S" else passes).append(value)
    elapsed = time.monotonic() - started
    print(f"{KILLS} kills in {elapsed:.1f} s; {len(acknowledged)} submissions, {len(passes)} passes acknowledged")

    if backend == "sqlite":
        check = sqlite3.connect(tmp_path / "state.db")
        try:
            assert check.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        finally:
            check.close()

    store = open_backend(backend, tmp_path)
    try:
        store.recover_interrupted("restarted after the last kill")
        assert store.list_executions(session_id, active_only=True) == []

        path = store.path(session_id)
        assert len({e.id for e in path}) == len(path)
        # Every pass on the path is whole: its three entries, in order, one after the other.
        found: dict[str, int] = {}
        for index, entry in enumerate(path):
            if entry.kind == EntryKind.ASSISTANT:
                marker = entry.text.split(" ", 1)[0]
                assert [e.kind for e in path[index : index + 3]] == PASS_KINDS, f"half-written {marker}"
                assert [e.text for e in path[index : index + 3]] == [
                    f"{marker} thinking",
                    f"{marker} call",
                    f"{marker} result",
                ]
                assert marker not in found
                found[marker] = index
            elif entry.kind in (EntryKind.TOOL_CALL, EntryKind.TOOL_RESULT):
                marker = entry.text.split(" ", 1)[0]
                assert marker in found, f"half-written {marker}"
            else:
                assert entry.kind == EntryKind.NOTICE
        assert set(passes) <= set(found), "an acknowledged pass was lost"

        # Every acknowledged submission is there with its body, in a state that matches its pass.
        assert len(set(acknowledged)) == len(acknowledged)
        states: dict[str, int] = {}
        for submission_id in acknowledged:
            sub = store.get_submission(submission_id)
            marker = "pass-" + sub.text.removeprefix("prompt ")
            states[sub.state] = states.get(sub.state, 0) + 1
            if sub.state == "pending":
                assert marker not in found  # never started: still waiting, never dropped
            elif sub.state == "completed":
                assert marker in found
            else:
                assert sub.state == "interrupted", sub
        # The queue holds every acknowledged pending item; at most one more per kill (committed, then killed
        # before its acknowledgement was printed).
        pending = {s.id for s in store.list_submissions(session_id)}
        acknowledged_pending = {sid for sid in acknowledged if store.get_submission(sid).state == "pending"}
        assert acknowledged_pending <= pending
        assert len(pending - acknowledged_pending) <= KILLS
        print(f"submission states: {states}; passes on the path: {len(found)}")
    finally:
        store.close()
    assert len(passes) >= KILLS
    # A guard against a loop gone wrong (a child that hangs before its first pass), not a speed figure: 50
    # children each start Python and open the store, which takes seconds each on a busy 2-core machine.
    assert elapsed < 600, "the crash loop is far slower than expected"
