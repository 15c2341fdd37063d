"""H14: the ACP adapter through ``ameesh``, against an ACP agent written with the same SDK's agent side
(tests/fakes/acp_agent.py) for what the real agent (opencode, tests/ameesh/real/test_real_acp.py) does
not offer: a session opened again by ``session/resume`` or by ``session/load`` with its history
replayed, effort levels, permission requests, the context the agent reports, an agent that can do
neither.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from ameesh.harnesses import CONTINUE_CUE
from tests.ameesh.conftest import Ameesh

AGENT = Path(__file__).resolve().parents[1] / "fakes" / "acp_agent.py"


@pytest.fixture
def acp_agent(ameesh: Ameesh, tmp_path: Path) -> Path:
    home = tmp_path / "acp-agent"
    ameesh.monkeypatch.setenv("AMEESH_ACP_AGENT", f"{sys.executable} {AGENT}")
    ameesh.monkeypatch.setenv("ACP_TEST_AGENT_HOME", str(home))
    ameesh("add", "bob", "--harness", "acp", "--dir", str(ameesh.work))
    return home


def test_h14_acp_resumes_the_session_the_agent_opened_with_model_and_effort_each_turn(
    ameesh: Ameesh, acp_agent: Path
) -> None:
    ameesh.monkeypatch.setenv("ACP_TEST_AGENT_OPEN", "resume")
    ameesh("set", "bob", "model=large", "effort=xhigh")
    ameesh("send", "bob", "turn 1")
    ameesh("send", "bob", "turn 2")
    ameesh("run")
    (session,) = ameesh.json("sessions", "bob")
    assert session["session_id"].startswith("test-")  # the agent's id
    assert (acp_agent / f"{session['session_id']}.json").exists()
    # Resumed (no load offered): the agent's session holds both prompts; model and effort set each turn,
    # the effort at the nearest level the agent offers (xhigh → high).
    assert ameesh.answers("bob") == [
        "ANSWER 1: «turn 1» · model=large · effort=high",
        "ANSWER 2: «turn 2» · model=large · effort=high",
    ]
    assert session["last_context_tokens"] == 2000  # the agent's usage_update


def test_h14_acp_a_prompt_the_agent_kept_unanswered_is_not_sent_twice(ameesh: Ameesh, acp_agent: Path) -> None:
    ameesh.monkeypatch.setenv("ACP_TEST_AGENT_OPEN", "load")
    ameesh.monkeypatch.setenv("AMEESH_SESSION_BACKOFF_BASE", "0")
    ameesh("send", "bob", "turn 1")
    ameesh("send", "bob", "turn 2 FAIL")
    ameesh("run")
    assert [t.outcome for t in ameesh.registry().turns("bob")] == ["ok", "failed", "ok"]
    # session/load replayed "turn 2 FAIL" with no answer: the retry sent a cue, the agent holds one copy.
    assert ameesh.answers("bob")[-1] == f"ANSWER 3: «{CONTINUE_CUE}» · model=small · effort=medium"


def test_h14_acp_a_model_the_agent_does_not_offer_fails_the_turn_naming_what_it_offers(
    ameesh: Ameesh, acp_agent: Path
) -> None:
    ameesh.monkeypatch.setenv("AMEESH_SESSION_MAX_ATTEMPTS", "1")
    ameesh("set", "bob", "model=huge")
    ameesh("send", "bob", "turn 1")
    assert ameesh("run", ok=False).exit_code == 4
    (turn,) = ameesh.registry().turns("bob")
    assert "the agent has no model 'huge' (it offers: small, large)" in (turn.error or "")


def test_h14_acp_a_permission_request_is_granted_once(ameesh: Ameesh, acp_agent: Path) -> None:
    ameesh("send", "bob", "PERMIT a write")
    ameesh("run")
    assert ameesh.answers("bob") == ["ANSWER 1: «PERMIT a write (permission: yes)» · model=small · effort=medium"]


def test_h14_acp_an_agent_that_can_neither_load_nor_resume_says_so(ameesh: Ameesh, acp_agent: Path) -> None:
    ameesh.monkeypatch.setenv("ACP_TEST_AGENT_OPEN", "none")
    ameesh.monkeypatch.setenv("AMEESH_SESSION_MAX_ATTEMPTS", "1")
    ameesh("send", "bob", "turn 1")
    ameesh("send", "bob", "turn 2")
    assert ameesh("run", ok=False).exit_code == 4
    ok, failed = ameesh.registry().turns("bob")
    assert ok.outcome == "ok"
    assert "the agent can neither load nor resume a session" in (failed.error or "")


def test_h14_acp_without_an_agent_command_the_turn_says_what_to_set(ameesh: Ameesh, acp_agent: Path) -> None:
    ameesh.monkeypatch.setenv("AMEESH_ACP_AGENT", "")
    ameesh.monkeypatch.setenv("AMEESH_SESSION_MAX_ATTEMPTS", "1")
    ameesh("send", "bob", "turn 1")
    assert ameesh("run", ok=False).exit_code == 4
    (turn,) = ameesh.registry().turns("bob")
    assert "no ACP agent command: set AMEESH_ACP_AGENT" in (turn.error or "")


def test_h14_acp_an_agent_that_dies_mid_turn_fails_the_turn_at_once(ameesh: Ameesh, acp_agent: Path) -> None:
    ameesh.monkeypatch.setenv("AMEESH_SESSION_MAX_ATTEMPTS", "1")
    ameesh.monkeypatch.setenv("AMEESH_SESSION_TURN_TIMEOUT", "3600")
    ameesh("send", "bob", "CRASH now")
    assert ameesh("run", ok=False).exit_code == 4
    (turn,) = ameesh.registry().turns("bob")
    assert "the agent exited during the turn" in (turn.error or "")
    assert turn.duration < 600  # not the turn's budget
