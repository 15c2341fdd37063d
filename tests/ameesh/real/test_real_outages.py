"""H13 with the real Claude Code, Codex CLI and pi against the fake model server: an outage in the middle
of a conversation leaves no prompt twice in the harness's session (each harness's own way: Claude Code
rewound with --resume-session-at, pi's session file cut back, Codex's thread rolled back),
and a dead model server ends the turn on the harness's own error event instead of the turn timeout."""

from __future__ import annotations

import pytest

from ameesh.harnesses import CONTINUE_CUE
from tests.ameesh.real.conftest import Real
from tests.fakes.harness_replies import SUMMARY_CUE, user_prompts
from tests.fakes.model_server import ErrorReply, Received, Reply


def _failing(real: Real, prompt: str, times: int) -> None:
    """The model server fails every request of ``prompt``'s turn (HTTP 500) until ameesh has recorded
    ``times`` failed turns: the harnesses' HTTP clients retry on their own first (the OpenAI SDK in pi
    twice, Codex four times), so counting requests would not make a turn fail."""
    answer = real.responder

    def responder(received: Received) -> Reply | ErrorReply:
        prompts = user_prompts(received.body)
        with real.ameesh.registry() as reg:
            failed = sum(t.outcome != "ok" for t in reg.turns("bob"))
        if prompts and prompts[-1] in (prompt, CONTINUE_CUE) and failed < times:
            return ErrorReply(500, "fake outage: the upstream is down", type="api_error")
        return answer(received)

    real.server.responder = responder


def test_h13_an_outage_leaves_no_prompt_twice_in_the_harness_session(real: Real) -> None:
    real.ameesh.monkeypatch.setenv("AMEESH_SESSION_BACKOFF_BASE", "0")
    real.ameesh.monkeypatch.setenv("AMEESH_SESSION_MAX_ATTEMPTS", "5")
    real.add("bob", policy="jamais")
    real.ameesh("send", "bob", "turn 1: remember PINEAPPLE")
    real.ameesh("run")
    sid = real.ameesh.json("show", "bob")["session_id"]
    _failing(real, "turn 2: which word?", times=2)
    real.ameesh("send", "bob", "turn 2: which word?")
    real.ameesh("send", "bob", "turn 3: and now?")
    real.ameesh("run")
    assert real.ameesh.json("show", "bob")["session_id"] == sid  # one session all along
    outcomes = [t.outcome for t in real.ameesh.registry().turns("bob")]
    assert outcomes == ["ok", "failed", "failed", "ok", "ok"]
    last = user_prompts(real.turns()[-1].body)
    # The third turn's request carries the whole conversation: turn 2's prompt once, never three times.
    assert last.count("turn 2: which word?") == 1
    assert last[0] == "turn 1: remember PINEAPPLE"
    assert last[-1] == "turn 3: and now?"
    # rewound before each failed attempt (Codex: a rollback marker in its rollout): as if the outage never happened
    assert last == ["turn 1: remember PINEAPPLE", "turn 2: which word?", "turn 3: and now?"]
    answers = [i["text"] for i in real.ameesh.json("thread", "bob") if i["kind"] == "answer"]
    assert "first: «turn 1: remember PINEAPPLE»" in answers[1]
    assert real.ameesh.json("alerts") == []  # the harness_failing cause is gone


def test_h13_a_dead_model_server_ends_the_turn_on_the_harness_error_event(real: Real) -> None:
    real.ameesh.monkeypatch.setenv("AMEESH_SESSION_MAX_ATTEMPTS", "1")
    real.add("bob")
    real.server.responder = lambda received: ErrorReply(503, "fake outage: overloaded", type="api_error")
    real.ameesh("send", "bob", "turn 1")
    assert real.ameesh("run", ok=False).exit_code == 4
    (turn,) = real.ameesh.registry().turns("bob")
    assert turn.outcome == "failed"
    # Ended on the harness's first error event (Codex "Reconnecting... 1/5", Claude Code's api_retry,
    # pi's error message), not after the harness's own retries, nor at the 180 s turn timeout.
    assert "ended at once" in (turn.error or "")
    if real.name == "codex":
        assert "Reconnecting... 1/5" in (turn.error or "")  # its first one, not after the fifth


def test_h13_a_failed_summary_at_a_lot_change_never_plays_the_new_lot_in_the_old_session(real: Real) -> None:
    real.ameesh.monkeypatch.setenv("AMEESH_SESSION_MAX_ATTEMPTS", "1")
    answer = real.responder

    def responder(received: Received) -> Reply | ErrorReply:
        if SUMMARY_CUE in "".join(user_prompts(received.body)[-1:]):
            return ErrorReply(400, "fake model server: the summary request is refused")
        return answer(received)

    real.server.responder = responder
    real.add("bob", policy="par-lot")
    real.ameesh("send", "bob", "--lot", "L1", "lot one")
    real.ameesh("send", "bob", "--lot", "L2", "lot two")
    real.ameesh("run")
    one, two = real.ameesh.json("sessions", "bob")
    assert one["close_reason"] == "lot L1 → L2; summary failed"
    assert two["lot"] == "L2"
    assert two["session_id"] != one["session_id"]
    assert user_prompts(real.turns()[-1].body) == ["lot two"]  # a fresh session, on its message alone
    (alert,) = real.ameesh.json("alerts", "bob")
    assert alert["kind"] == "summary_failed"


@pytest.mark.parametrize("real", ["claude"], indirect=True)
def test_h13_claude_against_a_dead_server_records_the_cause_it_prints(real: Real) -> None:
    # Its api_retry event says "unknown" (no HTTP answer); the result that follows names the cause.
    real.ameesh.monkeypatch.setenv("AMEESH_SESSION_MAX_ATTEMPTS", "1")
    real.add("bob")
    real.server.stop()
    real.ameesh("send", "bob", "turn 1")
    assert real.ameesh("run", ok=False).exit_code == 4
    (turn,) = real.ameesh.registry().turns("bob")
    assert "Unable to connect to API" in (turn.error or "")
    assert "unknown" not in (turn.error or "")


@pytest.mark.parametrize("real", ["codex"], indirect=True)
def test_h13_codex_outside_a_git_repository_is_a_set_up_error_not_an_outage(real: Real) -> None:
    # Codex refuses to run outside a trusted directory: no retry helps, a person fixes it.
    plain = real.workdir.parent / "not-a-repository"
    plain.mkdir()
    real.add("bob", workdir=plain)
    real.ameesh("send", "bob", "turn 1")
    assert real.ameesh("run", ok=False).exit_code == 3  # stopped, not retried with backoff
    (turn,) = real.ameesh.registry().turns("bob")
    assert "Not inside a trusted directory" in (turn.error or "")
    (alert,) = real.ameesh.json("alerts", "bob")
    assert alert["kind"] == "harness_broken"
    assert real.turns() == []  # the model was never called
