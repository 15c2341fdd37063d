"""ameesh end to end with the real Claude Code, Codex CLI and pi, through the ``ameesh`` command, each
harness talking to our fake model server on loopback (which answers from the conversation it receives:
``ANSWER n: «last prompt» · first: «first prompt»``, see tests/fakes/harness_replies.py).

Each test runs once per harness: five turns on one session (H1, with the H7 alert), rotation at a low
token threshold (H5, H8), a lot change under par-lot (H6), a runner killed mid-turn (H2), a moved worktree
(H9), and a refused model call judged by the output (H11).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from ameesh.harnesses import CONTINUE_CUE
from tests.ameesh.real.conftest import Real, git
from tests.fakes.harness_replies import SUMMARY_CUE, user_prompts
from tests.fakes.model_server import ErrorReply, Received

SUMMARY_PREFIX = "Resume summary of your previous session:"


def thread(real: Real, agent: str, kind: str) -> list[str]:
    return [i["text"] for i in real.ameesh.json("thread", agent) if i["kind"] == kind]


def wait_until(condition: Callable[[], bool], timeout: float = 60.0) -> None:
    """Wait for a condition another process makes true (read from its files), up to ``timeout``."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError("the condition did not become true in time")
        time.sleep(0.02)


def test_h1_five_turns_resume_one_session(real: Real) -> None:
    real.ameesh.monkeypatch.setenv("AMEESH_SESSION_ALERT_TOKENS", "4500")
    real.add("bob", policy="jamais")
    for n in range(1, 6):
        real.ameesh("send", "bob", f"turn {n}: remember PINEAPPLE-{n}")
    real.ameesh("run")
    sessions = real.ameesh.json("sessions", "bob")
    assert len(sessions) == 1
    assert sessions[0]["turns"] == 5
    answers = thread(real, "bob", "answer")
    assert answers == [
        f"ANSWER {n}: «turn {n}: remember PINEAPPLE-{n}» · first: «turn 1: remember PINEAPPLE-1»" for n in range(1, 6)
    ]
    calls = real.turns()
    assert len(calls) == 5
    # The fifth request carries the whole conversation, the first turn included; the model every time.
    assert user_prompts(calls[4].body) == [f"turn {n}: remember PINEAPPLE-{n}" for n in range(1, 6)]
    assert all(c.body.get("model") == real.model.split("/")[-1] for c in calls)
    # The context re-read is the last model call's (1000 tokens a prompt), not a sum over the thread.
    assert sessions[0]["last_context_tokens"] == 5000
    # H7: the alert watches what the harness re-reads per turn: only the fifth passed 4500.
    (alert,) = real.ameesh.json("alerts", "bob")
    assert alert["kind"] == "session_too_big"
    assert "5000 tokens" in alert["message"]


def test_h8_rotation_at_a_low_token_threshold_opens_a_session_on_the_summary(real: Real) -> None:
    real.ameesh.monkeypatch.setenv("AMEESH_SESSION_MAX_TOKENS", "2500")
    real.ameesh.monkeypatch.setenv("AMEESH_SESSION_MIN_TURNS", "2")
    real.add("bob", policy="taille")
    for n in range(1, 5):
        real.ameesh("send", "bob", f"turn {n}")
    real.ameesh("run")
    old, new = real.ameesh.json("sessions", "bob")
    assert old["closed_at"] is not None
    assert "context 3000 tokens > 2500" in old["close_reason"]
    assert new["closed_at"] is None
    assert new["session_id"] != old["session_id"]
    # (1) the summary turn was played in the old session, which still carried the three turns;
    calls = real.turns()
    summary_call = calls[3]
    assert user_prompts(summary_call.body)[:3] == ["turn 1", "turn 2", "turn 3"]
    assert SUMMARY_CUE in user_prompts(summary_call.body)[-1]
    # (2) the summary is in the thread and in the old session's history row;
    summary = "SUMMARY: turn 1 | turn 2 | turn 3"
    assert thread(real, "bob", "summary") == [summary]
    assert old["summary"] == summary
    # (3)-(4) the new session starts from nothing but the summary, prefixed to the next prompt.
    first_of_new = user_prompts(calls[4].body)
    assert len(first_of_new) == 1
    assert first_of_new[0].startswith(SUMMARY_PREFIX)
    assert summary in first_of_new[0]
    assert first_of_new[0].endswith("turn 4")
    assert thread(real, "bob", "answer")[-1].startswith(f"ANSWER 1: «{SUMMARY_PREFIX}")
    assert real.ameesh.json("show", "bob")["session_id"] == new["session_id"]


def test_h6_a_lot_change_under_par_lot_opens_a_fresh_session(real: Real) -> None:
    real.add("bob", policy="par-lot")
    real.ameesh("send", "bob", "--lot", "L1", "lot one, first")
    real.ameesh("send", "bob", "--lot", "L1", "lot one, second")
    real.ameesh("send", "bob", "--lot", "L2", "lot two")
    real.ameesh("run")
    one, two = real.ameesh.json("sessions", "bob")
    # L1's session played its two prompts and the summary turn (not counted); L2's opened on the summary.
    assert (one["lot"], one["turns"], two["lot"], two["turns"]) == ("L1", 2, "L2", 1)
    assert one["close_reason"] == "lot L1 → L2"
    calls = real.turns()
    assert user_prompts(calls[1].body) == ["lot one, first", "lot one, second"]  # resumed within the lot
    assert SUMMARY_CUE in user_prompts(calls[2].body)[-1]  # the summary turn, in the lot's session
    (opening,) = user_prompts(calls[3].body)
    assert opening.startswith(SUMMARY_PREFIX)
    assert opening.endswith("lot two")


def test_h2_a_runner_killed_mid_turn_is_restarted_on_the_same_session(real: Real) -> None:
    real.add("bob")
    real.ameesh("send", "bob", "turn 1: remember PINEAPPLE")
    real.ameesh("run")
    sid = real.ameesh.json("show", "bob")["session_id"]
    real.ameesh("send", "bob", "turn 2 HOLD: which word?")
    runner = subprocess.Popen(  # the real command in a process of its own, killed while the model answers
        [sys.executable, "-c", "from ameesh.cli import main; main()", "run"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        real.server.wait_for(lambda r: "HOLD" in "".join(user_prompts(r.body)[-1:]), timeout=120)
    finally:
        runner.kill()
        runner.wait(timeout=30)
    assert real.ameesh.json("status")["waiting"] == 1
    real.ameesh("run")
    assert real.ameesh.json("show", "bob")["session_id"] == sid
    assert [s["session_id"] for s in real.ameesh.json("sessions", "bob")] == [sid]
    answer = thread(real, "bob", "answer")[-1]
    prompts = user_prompts(real.turns()[-1].body)
    assert prompts.count("turn 2 HOLD: which word?") == 1  # H13: the killed turn's prompt is not sent twice
    # Rewound to before it (Codex too: a rollback marker in its rollout drops the killed turn), sent again.
    assert CONTINUE_CUE not in prompts
    assert "«turn 2 HOLD: which word?» · first: «turn 1: remember PINEAPPLE»" in answer
    assert any("was ended" in text for text in thread(real, "bob", "recovered"))
    assert real.ameesh.json("status")["waiting"] == 0


def test_h9_a_moved_worktree_is_adopted_and_the_conversation_goes_on(real: Real) -> None:
    trees = real.workdir.parent
    git(real.workdir, "worktree", "add", "-q", "-b", "feature", str(trees / "wt"))
    real.ameesh.monkeypatch.setenv("AMEESH_WORKTREE_ROOTS", str(trees))
    real.add("bob", workdir=trees / "wt")
    real.ameesh("send", "bob", "turn 1: remember PINEAPPLE")
    real.ameesh("run")
    sid = real.ameesh.json("show", "bob")["session_id"]
    (trees / "deeper").mkdir()
    git(real.workdir, "worktree", "move", str(trees / "wt"), str(trees / "deeper" / "wt2"))
    real.ameesh("send", "bob", "turn 2: which word?")
    real.ameesh("run")
    shown = real.ameesh.json("show", "bob")
    assert shown["workdir"] == str((trees / "deeper" / "wt2").resolve())
    assert shown["session_id"] == sid
    assert len(thread(real, "bob", "relocated")) == 1
    assert thread(real, "bob", "answer")[-1] == "ANSWER 2: «turn 2: which word?» · first: «turn 1: remember PINEAPPLE»"
    assert real.ameesh.json("alerts") == []


@pytest.mark.parametrize("real", ["codex"], indirect=True)
def test_h2_a_thread_id_codex_announced_is_on_record_before_the_first_turn_ends(real: Real) -> None:
    real.add("bob")
    real.ameesh("send", "bob", "turn 1 HOLD: remember PINEAPPLE")
    runner = subprocess.Popen(
        [sys.executable, "-c", "from ameesh.cli import main; main()", "run"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        real.server.wait_for(lambda r: "HOLD" in "".join(user_prompts(r.body)[-1:]), timeout=120)
        # thread.started came before the model call: the runner records it as soon as it reads it.
        wait_until(lambda: real.ameesh.registry().agent("bob").session_id is not None)
    finally:
        runner.send_signal(signal.SIGKILL)
        runner.wait(timeout=30)
    sid = real.ameesh.json("show", "bob")["session_id"]
    real.ameesh("run")
    assert real.ameesh.json("show", "bob")["session_id"] == sid
    assert [s["session_id"] for s in real.ameesh.json("sessions", "bob")] == [sid]
    last: Received = real.turns()[-1]
    # The killed turn is rolled back in Codex's rollout, and its prompt sent again, once (H13).
    assert user_prompts(last.body) == ["turn 1 HOLD: remember PINEAPPLE"]
    assert os.path.basename(real.ameesh.json("show", "bob")["workdir"]) == "main"
    assert Path(real.ameesh.json("show", "bob")["workdir"]).is_dir()


def test_h11_a_refused_model_call_is_a_failed_turn_whatever_the_exit_status(real: Real) -> None:
    real.ameesh.monkeypatch.setenv("AMEESH_SESSION_MAX_ATTEMPTS", "1")
    real.server.responder = lambda received: ErrorReply(400, "fake model server: this request is refused")
    real.add("bob")
    real.ameesh("send", "bob", "turn 1")
    assert real.ameesh("run", ok=False).exit_code == 4  # failed for good (one attempt allowed here)
    (turn,) = real.ameesh.registry().turns("bob")
    assert turn.outcome == "failed"
    assert "this request is refused" in (turn.error or "")  # the API's own words reach the thread
    assert [a["kind"] for a in real.ameesh.json("alerts", "bob")] == ["harness_failing"]
    assert real.ameesh.json("status")["waiting"] == 0
