"""H14: the ACP adapter driving a real ACP agent from the npm registry, opencode (``opencode acp``, pinned
in scripts/setup-harnesses), over stdio with the agent-client-protocol SDK's client, offline: opencode's
bundled OpenAI-compatible provider points at the fake model server (tests/fakes/harness_env.py).

The agent chooses the session id (``session/new``), ameesh records it and resumes it (``session/load``);
the model is set through the session's configuration option; a refused model call is a failed turn, and
its retry does not put the prompt in the session twice; a turn that must stop is cancelled through the
protocol (``session/cancel``), which ends the model call.
"""

from __future__ import annotations

import asyncio
import os
import signal
import threading

import pytest

from ameesh.harnesses import CONTINUE_CUE, TurnRequest, play
from ameesh.harnesses.acp import AcpHarness
from tests.ameesh.real.conftest import Real
from tests.fakes.harness_replies import user_prompts
from tests.fakes.model_server import ErrorReply, Received, Reply

pytestmark = pytest.mark.parametrize("real", ["acp"], indirect=True)


def answers(real: Real, agent: str) -> list[str]:
    return [i["text"] for i in real.ameesh.json("thread", agent) if i["kind"] == "answer"]


def test_h14_acp_turns_resume_the_session_the_agent_opened(real: Real) -> None:
    real.add("bob")
    real.ameesh("send", "bob", "turn 1: remember PINEAPPLE")
    real.ameesh("send", "bob", "turn 2: which word?")
    real.ameesh("run")
    (session,) = real.ameesh.json("sessions", "bob")
    assert session["session_id"].startswith("ses_")  # opencode's own id, recorded by ameesh
    assert session["turns"] == 2
    assert answers(real, "bob") == [
        "ANSWER 1: «turn 1: remember PINEAPPLE» · first: «turn 1: remember PINEAPPLE»",
        "ANSWER 2: «turn 2: which word?» · first: «turn 1: remember PINEAPPLE»",
    ]
    calls = real.turns()
    assert [c.body.get("model") for c in calls] == ["fake-model", "fake-model"]
    assert session["last_context_tokens"] == 2000


def test_h14_acp_a_refused_call_fails_the_turn_and_its_retry_sends_the_prompt_once(real: Real) -> None:
    real.ameesh.monkeypatch.setenv("AMEESH_SESSION_BACKOFF_BASE", "0")
    refused: list[str] = []

    def responder(received: Received) -> Reply | ErrorReply:
        if user_prompts(received.body)[-1:] == ["turn 1"] and not refused:
            refused.append("turn 1")
            return ErrorReply(400, "fake model server: this request is refused")
        return real.responder(received)

    real.server.responder = responder
    real.add("bob")
    real.ameesh("send", "bob", "turn 1")
    real.ameesh("run")
    failed, good = real.ameesh.registry().turns("bob")
    assert failed.outcome == "failed"
    assert "this request is refused" in (failed.error or "")  # the API's own words reach the thread
    assert good.outcome == "ok"
    # opencode kept the refused prompt in its session (its replay at session/load shows it unanswered):
    # the retry asked for an answer instead of sending a second copy.
    assert user_prompts(real.turns()[-1].body) == ["turn 1", CONTINUE_CUE]
    assert len(real.ameesh.json("sessions", "bob")) == 1


def test_h14_acp_a_stopped_turn_is_cancelled_through_the_protocol(real: Real) -> None:
    harness = AcpHarness()
    request = TurnRequest(prompt="turn 1 HOLD", cwd=real.workdir, session_id=None, new_session=True, timeout=600)
    started: list[int] = []
    announced: list[str] = []
    held: list[Received] = []

    def stop_when_the_model_is_called() -> None:
        held.append(real.server.wait_for(lambda r: "HOLD" in "".join(user_prompts(r.body)[-1:]), timeout=300))
        os.kill(started[0], signal.SIGTERM)  # the turn program only: it cancels, the agent stops the call

    stopper = threading.Thread(target=stop_when_the_model_is_called)
    stopper.start()
    try:
        result = asyncio.run(play(harness, request, on_start=started.append, on_session=announced.append))
    finally:
        stopper.join(timeout=320)
    assert held
    assert held[0].disconnected.wait_blocking(timeout=60)  # opencode dropped the model call on session/cancel
    assert result.outcome == "failed"
    assert "cancelled" in (result.error or "")
    assert len(announced) == 1  # the agent's id was handed over while the turn ran
    assert result.session_id == announced[0]


def test_h9_acp_a_moved_worktree_is_adopted_and_the_session_goes_on(real: Real) -> None:
    # opencode keeps each session's directory and its project (the git repository): loaded from the moved
    # worktree it failed every turn ("OpenCode service failure") until ameesh rebound the session.
    from tests.ameesh.real.test_real_harnesses import test_h9_a_moved_worktree_is_adopted_and_the_conversation_goes_on

    test_h9_a_moved_worktree_is_adopted_and_the_conversation_goes_on(real)
    (relocated,) = [i["text"] for i in real.ameesh.json("thread", "bob") if i["kind"] == "relocated"]
    assert "opencode's sessions rebound to" in relocated


def test_h13_acp_opencode_fails_fast_on_its_first_model_error(real: Real) -> None:
    # opencode retries a failed call for ~90-145 s, silent over ACP: its first logged error ends the turn.
    real.ameesh.monkeypatch.setenv("AMEESH_SESSION_MAX_ATTEMPTS", "1")
    real.add("bob")
    real.server.responder = lambda received: ErrorReply(500, "fake outage: the upstream is down", type="api_error")
    real.ameesh("send", "bob", "turn 1")
    assert real.ameesh("run", ok=False).exit_code == 4
    (turn,) = real.ameesh.registry().turns("bob")
    assert turn.outcome == "failed"
    assert "ended at once on the agent's first error" in (turn.error or "")
    assert "fake outage: the upstream is down" in (turn.error or "")  # the API's words, read from its log


def test_h10_acp_an_effort_the_agent_cannot_take_is_said_never_claimed(real: Real) -> None:
    # opencode offers no effort levels for this model: the thread says the effort was not applied, once.
    real.add("bob")
    real.ameesh("set", "bob", "effort=high")
    real.ameesh("send", "bob", "turn 1")
    real.ameesh("send", "bob", "turn 2")
    real.ameesh("run")
    notes = [i["text"] for i in real.ameesh.json("thread", "bob") if i["kind"] == "unsupported"]
    assert notes == ["acp: effort high not applied: the agent offers no effort levels for this model"]
    assert all("reasoning_effort" not in c.body for c in real.turns())  # and indeed nothing was sent
