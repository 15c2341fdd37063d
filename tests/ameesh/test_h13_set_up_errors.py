"""H13: a failure no retry can fix (a set-up error: anyy with no Gateway running) is not an outage — no
backoff, no attempt counted, an alert saying what to fix; and a new ``ameesh run`` never waits out the
backoff an earlier run left."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

from ameesh.runner import Runner
from tests.ameesh.conftest import Ameesh
from tests.ameesh.test_outages import FakeTime
from tests.cli.live import StartGateway, start_gateway

__all__ = ["start_gateway"]


def _run(ameesh: Ameesh, fake: FakeTime) -> list[str]:
    with ameesh.registry() as reg:
        return asyncio.run(Runner(reg, ameesh.root, clock=fake.clock, sleep=fake.sleep).run()).blocked


def test_h13_anyy_with_no_gateway_is_a_set_up_error_not_an_outage(ameesh: Ameesh, start_gateway: StartGateway) -> None:
    anyy = Path(sys.executable).parent / "anyy"
    ameesh.monkeypatch.setenv("AMEESH_ANYY_BIN", str(anyy))
    ameesh.monkeypatch.setenv("AMEESH_SESSION_BACKOFF_BASE", "31")
    ameesh("add", "ann", "--harness", "anyy", "--dir", str(ameesh.work))
    ameesh("set", "ann", "model=work")  # the anyy profile: not created yet
    ameesh("send", "ann", "first")
    fake = FakeTime()
    assert _run(ameesh, fake) == ["ann"]  # stopped at once (exit 3 from the command), not retried
    assert fake.slept == []
    (turn,) = ameesh.registry().turns("ann")
    assert "profile 'work' does not exist" in (turn.error or "")
    with ameesh.registry() as reg:
        ((state, attempts),) = [(m.state, m.attempts) for m in reg.messages("ann")]
    assert (state, attempts) == ("waiting", 0)  # no attempt counted: nothing of the message was played
    (alert,) = ameesh.json("alerts", "ann")
    assert alert["kind"] == "harness_broken"
    assert "anyy profile create work" in alert["message"]  # anyy's own words: what to do

    start_gateway(profile="work")  # the cause is fixed: the next run plays at once, no old backoff
    fake = FakeTime()
    assert _run(ameesh, fake) == []
    assert fake.slept == []
    assert len(ameesh.answers("ann")) == 1
    assert ameesh.json("alerts") == []  # cleared by the turn that worked

    subprocess.run([anyy, "gateway", "stop", "--profile", "work"], check=True, capture_output=True)
    ameesh("send", "ann", "second")
    assert ameesh("run", ok=False).exit_code == 3  # blocked: no Gateway, no backoff, no retry
    assert "no Gateway is running" in (ameesh.registry().turns("ann")[-1].error or "")
    (alert,) = ameesh.json("alerts", "ann")
    assert "anyy gateway start --profile work" in alert["message"]


def test_h13_a_new_run_does_not_wait_out_an_earlier_runs_backoff(ameesh: Ameesh) -> None:
    ameesh.monkeypatch.setenv("AMEESH_SESSION_MAX_ATTEMPTS", "1")
    ameesh.monkeypatch.setenv("AMEESH_SESSION_BACKOFF_BASE", "31")
    ameesh.script({"match": "one", "fail": "503 upstream unavailable"})
    ameesh.add("bob")
    ameesh("send", "bob", "one")
    fake = FakeTime()
    _run(ameesh, fake)  # failed for good: the run ends with the agent's backoff set (31 s)
    with ameesh.registry() as reg:
        assert (reg.agent("bob").retry_at or 0) > fake.now
    ameesh("send", "bob", "three")
    ameesh.script()
    fake = FakeTime()  # the same clock time: the backoff set by the last failure is not over
    fake.now += 1
    _run(ameesh, fake)
    assert fake.slept == []
    assert ameesh.answers("bob")[-1].endswith("three")
