"""What is particular to DeepSeek Harness, with the real ``dsh`` driven by ameesh's runner plugin against
the fake model server (the six tests every harness passes are in test_real_harnesses.py): model and
effort reach every call (dsh keeps neither in a session) and no extra call is made for a title; a failed
turn's prompt is cut out of dsh's log before the retry, so the model sees it once; a turn ended by
SIGTERM is failed although dsh exits 0 then; a moved worktree moves the session's folder and the
directory its log records.
"""

from __future__ import annotations

import asyncio
import os
import signal
import threading
from pathlib import Path

import pytest

from ameesh.harnesses import TurnRequest, play
from ameesh.harnesses.dsh import DshHarness, project_key
from tests.ameesh.real.conftest import Real, git
from tests.fakes.harness_replies import user_prompts
from tests.fakes.model_server import ErrorReply, Received, Reply

pytestmark = pytest.mark.parametrize("real", ["dsh"], indirect=True)


def test_h12_dsh_model_and_effort_reach_every_call_and_no_title_call_is_made(real: Real) -> None:
    real.add("bob")
    real.ameesh("set", "bob", "effort=medium")
    real.ameesh("send", "bob", "turn 1")
    real.ameesh("send", "bob", "turn 2")
    real.ameesh("run")
    calls = real.server.received
    assert len(calls) == 2  # one model call per turn: the title request is turned off by ameesh's overlay
    assert [user_prompts(c.body) for c in calls] == [["turn 1"], ["turn 1", "turn 2"]]
    assert [c.body.get("model") for c in calls] == ["fake-model", "fake-model"]
    # dsh takes off | low | high | max: medium is played at the nearest level below.
    assert [c.body.get("reasoning_effort") for c in calls] == ["low", "low"]
    (session,) = real.ameesh.json("sessions", "bob")
    assert session["session_id"].startswith("ameesh-")  # the id ameesh chose, as dsh recorded it
    assert session["last_context_tokens"] == 2000


def test_h13_dsh_a_failed_turn_is_cut_out_of_its_log_and_the_retry_sends_the_prompt_once(real: Real) -> None:
    real.ameesh.monkeypatch.setenv("AMEESH_SESSION_BACKOFF_BASE", "0")
    refused: list[str] = []

    def responder(received: Received) -> Reply | ErrorReply:
        last = user_prompts(received.body)[-1]
        if last == "turn 2" and not refused:
            refused.append(last)
            return ErrorReply(400, "fake model server: refused once")
        return real.responder(received)

    real.server.responder = responder
    real.add("bob")
    real.ameesh("send", "bob", "turn 1")
    real.ameesh("send", "bob", "turn 2")
    real.ameesh("run")
    assert refused == ["turn 2"]
    calls = real.turns()
    assert [user_prompts(c.body) for c in calls] == [["turn 1"], ["turn 1", "turn 2"], ["turn 1", "turn 2"]]
    answers = [i["text"] for i in real.ameesh.json("thread", "bob") if i["kind"] == "answer"]
    assert answers[-1] == "ANSWER 2: «turn 2» · first: «turn 1»"
    retries = [i["text"] for i in real.ameesh.json("thread", "bob") if i["kind"] == "retry"]
    assert retries == ["message 2: the dsh session was cut back to before the failed attempt"]
    assert len(real.ameesh.json("sessions", "bob")) == 1


def test_h11_dsh_a_turn_ended_by_sigterm_is_failed_although_dsh_exits_0(real: Real) -> None:
    harness = DshHarness(state_dir=real.workdir.parent / "state")
    request = TurnRequest(
        prompt="turn 1 HOLD", cwd=real.workdir, session_id=harness.new_session_id(), new_session=True, timeout=180
    )
    started: list[int] = []

    def terminate_when_the_model_is_called() -> None:
        real.server.wait_for(lambda r: "HOLD" in "".join(user_prompts(r.body)[-1:]), timeout=120)
        os.killpg(started[0], signal.SIGTERM)

    killer = threading.Thread(target=terminate_when_the_model_is_called)
    killer.start()
    try:
        result = asyncio.run(play(harness, request, on_start=started.append))
    finally:
        killer.join(timeout=150)
    assert result.outcome == "failed"
    # dsh stops with exit status 0; what the runner printed says the turn did not complete (whether dsh
    # had time to record the turn's end as aborted depends on timing).
    assert result.error in {
        "dsh: the turn did not end: dsh was stopped during it (exit 0)",
        "dsh: the turn ended: aborted (exit 0)",
    }


def test_h9_dsh_a_moved_worktree_moves_the_session_and_its_recorded_directory(real: Real) -> None:
    trees = real.workdir.parent
    git(real.workdir, "worktree", "add", "-q", "-b", "feature", str(trees / "wt"))
    real.ameesh.monkeypatch.setenv("AMEESH_WORKTREE_ROOTS", str(trees))
    real.add("bob", workdir=trees / "wt")
    real.ameesh("send", "bob", "turn 1")
    real.ameesh("run")
    sid = real.ameesh.json("show", "bob")["session_id"]
    sessions = Path(os.environ["DSH_HOME"]) / "sessions"
    old = (trees / "wt").resolve()
    assert (sessions / project_key(str(old)) / sid).is_dir()
    (trees / "deeper").mkdir()
    git(real.workdir, "worktree", "move", str(trees / "wt"), str(trees / "deeper" / "wt2"))
    real.ameesh("send", "bob", "turn 2")
    real.ameesh("run")
    new = (trees / "deeper" / "wt2").resolve()
    assert (sessions / project_key(str(new)) / sid).is_dir()  # the folder moved under the new key
    assert not (sessions / project_key(str(old))).exists()
    header = DshHarness().read_log(sid)[0]
    assert (header["type"], header["cwd"]) == ("session", str(new))  # dsh's tools run there now
    (note,) = [i["text"] for i in real.ameesh.json("thread", "bob") if i["kind"] == "relocated"]
    assert "1 dsh session(s) moved there" in note
    assert real.ameesh.json("show", "bob")["session_id"] == sid
