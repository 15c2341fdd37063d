"""H13: outages. Backoff across messages and a circuit (time injected: no test waits), ameesh retry, no
prompt twice in a harness session, fail fast on a harness's own error events, progress lines, alerts
that clear when their cause is gone or are acknowledged."""

from __future__ import annotations

import asyncio
import contextlib
import os
import stat
import time
from pathlib import Path

from ameesh import paths
from ameesh.harnesses import TurnRequest, play
from ameesh.harnesses.codex import CodexHarness
from ameesh.runner import Runner
from tests.ameesh.conftest import Ameesh


class FakeTime:
    """The runner's clock and sleep: a sleep advances the clock at once and is recorded."""

    def __init__(self) -> None:
        self.now = 1_000_000.0
        self.slept: list[float] = []

    def clock(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.slept.append(round(seconds, 3))
        self.now += seconds


def _run(ameesh: Ameesh, fake: FakeTime) -> tuple[list[str], list[str]]:
    """One runner pass with injected time; (blocked agents, progress lines)."""
    lines: list[str] = []
    with ameesh.registry() as reg:
        runner = Runner(reg, ameesh.root, clock=fake.clock, sleep=fake.sleep, progress=lines.append)
        report = asyncio.run(runner.run())
    return report.blocked, lines


def _outage_env(ameesh: Ameesh) -> None:
    for var, value in {"BACKOFF_BASE": "10", "BACKOFF_MAX": "40", "CIRCUIT_AFTER": "5", "MAX_ATTEMPTS": "3"}.items():
        ameesh.monkeypatch.setenv(f"AMEESH_SESSION_{var}", value)


def test_h13_backoff_grows_across_messages_and_the_circuit_opens_naming_cause_and_waiting(ameesh: Ameesh) -> None:
    _outage_env(ameesh)
    ameesh.script({"fail": "503 upstream unavailable"})
    ameesh.add("bob")
    for n in range(1, 6):
        ameesh("send", "bob", f"message {n}")
    fake = FakeTime()
    blocked, lines = _run(ameesh, fake)
    assert blocked == ["bob"]
    # Five failures in a row: waits of 10, 20, 40 (capped), 40 between them; then the circuit opened.
    assert fake.slept == [10, 20, 40, 40]
    assert len(ameesh.calls()) == 5
    with ameesh.registry() as reg:
        states = [(m.num, m.state, m.attempts) for m in reg.messages("bob")]
    assert states == [(1, "failed", 3), (2, "waiting", 2), (3, "waiting", 0), (4, "waiting", 0), (5, "waiting", 0)]
    kinds = {a["kind"]: a["message"] for a in ameesh.json("alerts", "bob")}
    assert set(kinds) == {"harness_failing", "circuit_open"}
    assert "503 upstream unavailable" in kinds["circuit_open"]
    assert "messages waiting: 2, 3, 4, 5" in kinds["circuit_open"]
    assert "ameesh retry bob" in kinds["circuit_open"]
    assert "message(s) 1 failed for good" in kinds["harness_failing"]
    assert any("waiting 40 s before the next attempt" in line for line in lines)

    status = ameesh.json("status")["by_agent"][0]
    assert (status["failed"], status["circuit_open"]) == (1, True)
    assert "1 failed; 2 alert(s); circuit open (ameesh retry)" in ameesh("status").output
    # While the circuit is open, a run leaves the agent alone (exit 3), without calling the harness.
    assert ameesh("run", ok=False).exit_code == 3
    assert len(ameesh.calls()) == 5

    # The outage is over: retry re-queues the failed message and closes the circuit; all five are played.
    ameesh.script()
    out = ameesh("retry", "bob").output
    assert "1 message(s) back in the inbox" in out
    ameesh("run")
    assert ameesh.json("status")["waiting"] == 0
    assert ameesh.json("alerts") == []  # harness_failing and circuit_open cleared by themselves
    with ameesh.registry() as reg:
        assert {m.state for m in reg.messages("bob")} == {"done"}
        assert reg.agent("bob").failures == 0


def test_h13_retry_takes_message_numbers_and_says_which_were_not_failed(ameesh: Ameesh) -> None:
    ameesh.monkeypatch.setenv("AMEESH_SESSION_MAX_ATTEMPTS", "1")
    ameesh.monkeypatch.setenv("AMEESH_SESSION_BACKOFF_BASE", "0")
    ameesh.script({"match": "bad", "fail": "refused"})
    ameesh.add("bob")
    ameesh("send", "bob", "bad one")
    ameesh("send", "bob", "bad two")
    ameesh("send", "bob", "good")
    assert ameesh("run", ok=False).exit_code == 4
    ameesh.script()
    result = ameesh("retry", "bob", "2", "3")
    assert "1 message(s) back in the inbox" in result.output
    assert "left alone: 3" in result.output
    ameesh("run")
    with ameesh.registry() as reg:
        assert [(m.num, m.state) for m in reg.messages("bob")] == [(1, "failed"), (2, "done"), (3, "done")]


def test_h13_a_failed_attempt_never_leaves_its_prompt_twice_in_the_session(ameesh: Ameesh) -> None:
    ameesh.monkeypatch.setenv("AMEESH_SESSION_BACKOFF_BASE", "0")
    ameesh.script({"match": "two", "times": 2, "fail": "overloaded"})
    ameesh.add("bob")
    for text in ("one", "two", "three"):
        ameesh("send", "bob", text)
    ameesh("run")
    # The harness recorded each failed prompt (like Claude Code); each retry resumed before it.
    assert ameesh.answers("bob") == [
        "FRESH: one",
        "RESUMED (1 earlier turns): two",
        "RESUMED (2 earlier turns): three",
    ]
    calls = ameesh.calls()
    assert [c["prompt"] for c in calls] == ["one", "two", "two", "two", "three"]
    good = calls[0]
    assert good["resume_at"] is None
    assert calls[2]["resume_at"] is not None  # rewound to the answer of "one"
    assert calls[2]["resume_at"] == calls[3]["resume_at"]
    retries = [i["text"] for i in ameesh.json("thread", "bob") if i["kind"] == "retry"]
    assert len(retries) == 2
    assert all("before the failed attempt" in text for text in retries)


def test_h13_a_first_prompt_that_failed_is_played_again_in_a_new_session(ameesh: Ameesh) -> None:
    ameesh.monkeypatch.setenv("AMEESH_SESSION_BACKOFF_BASE", "0")
    ameesh.script({"match": "one", "times": 1, "fail": "overloaded"})
    ameesh.add("bob")
    ameesh("send", "bob", "one")
    ameesh("run")
    assert ameesh.answers("bob") == ["FRESH: one"]
    failed, current = ameesh.json("sessions", "bob")
    assert "its first prompt failed" in failed["close_reason"]
    assert current["closed_at"] is None
    assert current["turns"] == 1


def _fake_codex(tmp_path: Path, lines: list[str]) -> Path:
    """A stand-in for `codex` printing these lines and then hanging as Codex does while it reconnects."""
    script = tmp_path / "codex"
    body = "".join(f"printf '%s\\n' '{line}'\n" for line in lines)
    script.write_text(f"#!/bin/sh\n{body}exec sleep 600\n", encoding="utf-8")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return script


def test_h13_a_codex_error_event_ends_the_turn_at_once(ameesh: Ameesh, tmp_path: Path) -> None:
    binary = _fake_codex(
        tmp_path,
        [
            '{"type":"thread.started","thread_id":"t-1"}',
            '{"type":"turn.started"}',
            '{"type":"error","message":"Reconnecting... 1/5 (stream disconnected before completion)"}',
        ],
    )
    request = TurnRequest(prompt="hello", cwd=ameesh.work, session_id=None, new_session=True, timeout=3600)
    result = asyncio.run(play(CodexHarness(str(binary)), request))
    # Not the 3600 s timeout: the error event ended the turn (and the `sleep` was killed with its group).
    assert result.outcome == "failed"
    assert "Reconnecting... 1/5" in (result.error or "")
    assert "ended at once" in (result.error or "")


def test_h13_progress_lines_say_which_agent_which_message_and_how_long(ameesh: Ameesh) -> None:
    ameesh.add("bob")
    ameesh("send", "bob", "one")
    out = ameesh("run").output
    assert "bob: message 1 (attempt 1) playing on fake…" in out
    assert "bob: message 1 done (" in out


def test_h13_alerts_clear_when_their_cause_is_gone_and_can_be_acknowledged(ameesh: Ameesh) -> None:
    ameesh.add("bob")
    ameesh.add("ann")
    work = ameesh.work
    hidden = work.with_name("hidden")
    os.rename(work, hidden)
    ameesh("send", "bob", "one")
    assert ameesh("run", ok=False).exit_code == 3
    (missing,) = ameesh.json("alerts", "bob")
    assert missing["kind"] == "workdir_missing"
    os.rename(hidden, work)  # back: the next turn clears the alert
    ameesh("run")
    assert ameesh.json("alerts", "bob") == []

    with ameesh.registry() as reg:
        reg.alert("ann", "session_too_big", "session x re-reads 999999 tokens per turn", session_id="x")
    (alert,) = ameesh.json("alerts")
    assert f"#{alert['num']} ann: session_too_big" in ameesh("alerts").output
    assert (
        f"alert {alert['num']} (ann: session_too_big) acknowledged" in ameesh("alerts", "ack", str(alert["num"])).output
    )
    assert ameesh.json("alerts") == []
    unknown = ameesh("alerts", "ack", "999", ok=False)
    assert "no alert 999" in unknown.output


def test_h13_a_session_too_big_alert_clears_once_the_session_is_rotated(ameesh: Ameesh) -> None:
    ameesh.monkeypatch.setenv("AMEESH_SESSION_MAX_TOKENS", "10")
    ameesh.monkeypatch.setenv("AMEESH_SESSION_MIN_TURNS", "1")
    ameesh.monkeypatch.setenv("AMEESH_SESSION_ALERT_TOKENS", "1500")
    ameesh.script({"match": "big", "context_tokens": 2000})
    ameesh.add("bob", "--role", "orchestrator")
    ameesh("send", "bob", "big one")
    ameesh("run")
    assert [a["kind"] for a in ameesh.json("alerts", "bob")] == ["session_too_big"]
    ameesh("send", "bob", "small")
    ameesh("run")
    assert ameesh.json("alerts", "bob") == []  # the new session re-reads little: the alert's cause is gone


def test_h13_remove_is_refused_while_the_agent_is_held(ameesh: Ameesh) -> None:
    from ameesh.runner import lock_agent

    ameesh.add("bob")
    with lock_agent(ameesh.root, "bob") as locked:
        assert locked
        refused = ameesh("remove", "bob", ok=False)
    assert "being played" in refused.output
    assert paths.agent_dir(ameesh.root, "bob").exists()


def test_h13_with_watch_an_open_circuit_is_tried_again_once_its_wait_is_over(ameesh: Ameesh) -> None:
    for var, value in {"BACKOFF_BASE": "10", "BACKOFF_MAX": "40", "CIRCUIT_AFTER": "2", "MAX_ATTEMPTS": "5"}.items():
        ameesh.monkeypatch.setenv(f"AMEESH_SESSION_{var}", value)
    ameesh.script({"match": "one", "times": 2, "fail": "down"})
    ameesh.add("bob")
    ameesh("send", "bob", "one")
    fake = FakeTime()
    opened: list[float] = []

    async def watch() -> None:
        with ameesh.registry() as reg:
            task = asyncio.create_task(
                Runner(reg, ameesh.root, clock=fake.clock, sleep=fake.sleep).run(watch=True, poll=0.01)
            )
            deadline = time.monotonic() + 120  # a bound for a loaded machine, not a synchronisation
            while reg.waiting_count("bob"):
                assert time.monotonic() < deadline, "the watching runner never played the message"
                agent = reg.agent("bob")
                if agent.circuit_open and agent.retry_at and agent.retry_at > fake.now:
                    opened.append(agent.retry_at - fake.now)
                    fake.now = agent.retry_at  # the circuit's wait passes (injected time)
                await asyncio.sleep(0.01)
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    asyncio.run(watch())
    assert fake.slept == [10]  # between the two failures; then the circuit opened
    assert opened == [40]  # one trial after backoff_max, which succeeded
    assert ameesh.answers("bob") == ["FRESH: one"]
    assert ameesh.json("alerts") == []
