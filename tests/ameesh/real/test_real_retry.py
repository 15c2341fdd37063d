"""H13 with the real harnesses, all five (Claude Code, Codex CLI, pi, DeepSeek Harness and opencode over
ACP): a message that failed for good, then put back by ``ameesh retry`` after other messages played in the
same session, reaches the model once — never "M1 | M2 | M1".

Claude Code, pi, dsh and Codex drop the failed attempt from the session right after it failed (Codex
through a rollback marker in its rollout, as its own ``thread/rollback`` writes); opencode keeps it and
cannot drop it over ACP, so the retry is a cue that names the earlier message instead of a second copy.
"""

from __future__ import annotations

import pytest

from ameesh.harnesses import earlier_cue
from tests.ameesh.real.conftest import Real
from tests.fakes.harness_env import HARNESSES
from tests.fakes.harness_replies import user_prompts
from tests.fakes.model_server import ErrorReply, Received, Reply

M0, M1, M2 = "turn 0: remember PINEAPPLE", "turn 1: which fruit?", "turn 2: and its colour?"


@pytest.mark.parametrize("real", [*HARNESSES, "acp"], indirect=True)
def test_h13_a_message_retried_after_others_played_reaches_the_model_once(real: Real) -> None:
    real.ameesh.monkeypatch.setenv("AMEESH_SESSION_MAX_ATTEMPTS", "1")
    real.ameesh.monkeypatch.setenv("AMEESH_SESSION_BACKOFF_BASE", "0")
    answer = real.responder
    down = [True]

    def responder(received: Received) -> Reply | ErrorReply:
        if down[0] and user_prompts(received.body)[-1:] == [M1]:
            return ErrorReply(500, "fake outage: the upstream is down", type="api_error")
        return answer(received)

    real.server.responder = responder
    real.add("bob", policy="jamais")
    real.ameesh("send", "bob", M0)
    real.ameesh("run")
    real.ameesh("send", "bob", M1)
    assert real.ameesh("run", ok=False).exit_code == 4  # failed for good after its one attempt
    down[0] = False
    real.ameesh("send", "bob", M2)
    real.ameesh("run")
    real.ameesh("retry", "bob")
    real.ameesh("run")
    (session,) = real.ameesh.json("sessions", "bob")
    assert [t.outcome for t in real.ameesh.registry().turns("bob")] == ["ok", "failed", "ok", "ok"]
    m2_request, last = (user_prompts(r.body) for r in real.turns()[-2:])
    assert last.count(M1) == 1  # never M1 | M2 | M1
    if real.name == "acp":  # opencode keeps the failed prompt: the retry names it instead of sending it
        assert m2_request == [M0, M1, M2]
        assert last == [M0, M1, M2, earlier_cue(M1)]
    else:  # the failed attempt was dropped from the session before M2 played
        assert m2_request == [M0, M2]
        assert last == [M0, M2, M1]
    assert session["turns"] == 3
