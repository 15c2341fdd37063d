"""K1, exactly once across a crash: a real Gateway process SIGKILLed right after a schedule's run was
claimed. Held with tests.fakes.gateways.Hold (a shell call blocked on a pipe), never a timer.

- Claimed, not started: the run's prompt waits in its (fixed, busy) session's queue when the Gateway
  dies; after restart the scheduler starts it, it runs once, and nothing claims that run again.
- Claimed and running: the run's own execution is held when the Gateway dies; after restart it is
  interrupted (G3) and not run again — one run, one session."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

from anyy.profiles import create_profile
from anyy.storage.sqlite import SqliteStore
from tests.fakes.gateways import Hold, WsClient, _hold_folder
from tests.killtest.gateway_process import GatewayProcess, RpcFailure

FAR = 4_102_444_800.0  # 2100-01-01: the timing never fires during the test; runs come from run_now


def _gateway(tmp_path: Path) -> GatewayProcess:
    create_profile(tmp_path / "home", "sched")
    work = tmp_path / "work"
    work.mkdir()
    return GatewayProcess(tmp_path / "home", "sched", cwd=work, log=tmp_path / "gateway.err")


def _runs_on_disk(home: Path, name: str) -> list[Any]:
    store = SqliteStore.open_profile(home / "profiles" / "sched", profile="sched")
    try:
        return store.list_runs(name)
    finally:
        store.close()


def _user_texts(rpc: Any, session_id: str) -> list[str]:
    items = rpc.call("session.history", session_id=session_id, limit=100)["items"]
    return [e["text"] for e in items if e["kind"] == "user"]


def test_k1_a_run_claimed_but_not_started_when_the_gateway_is_killed_runs_once_after_restart(
    tmp_path: Path,
) -> None:
    gateway = _gateway(tmp_path)
    held = Hold(_hold_folder() / f"hold-{uuid.uuid4().hex[:12]}")
    try:
        gateway.start()
        with WsClient(f"ws://{gateway.host}:{gateway.port}/ws", gateway.token) as client:
            target = client.call("session.create", {"title": "notes"})["id"]
            client.call("events.subscribe", {"session_id": target})
            client.call("session.send", {"session_id": target, "text": held.command})
            client.event(lambda e: e.get("type") == "tool_started", timeout=60)  # the session is busy
            client.call(
                "schedule.create", {"name": "digest", "prompt": "Write the digest.", "at": FAR, "session_id": target}
            )
            run = client.call("schedule.run_now", {"schedule": "digest"})
            assert run["outcome"] == "pending"  # claimed, queued behind the held turn
            gateway.kill()
        [on_disk] = _runs_on_disk(tmp_path / "home", "digest")
        assert on_disk.outcome == "pending"

        gateway.start()
        rpc = gateway.client()
        done = rpc.call("session.wait", submission_id=run["submission_id"], timeout=60)
        assert done["state"] == "completed"
        runs = rpc.call("schedule.runs", schedule="digest")
        assert [(r["scheduled_for"], r["outcome"]) for r in runs] == [(run["scheduled_for"], "completed")]
        assert _user_texts(rpc, target).count("Write the digest.") == 1

        gateway.stop()  # and once more: nothing runs it again
        gateway.start()
        rpc = gateway.client()
        assert len(rpc.call("schedule.runs", schedule="digest")) == 1
        assert _user_texts(rpc, target).count("Write the digest.") == 1
        assert rpc.call("session.queue.list", session_id=target) == []
    finally:
        held.release()
        held.close()
        gateway.stop()


def test_k1_a_run_killed_while_running_is_interrupted_and_not_run_again(tmp_path: Path) -> None:
    gateway = _gateway(tmp_path)
    held = Hold(_hold_folder() / f"hold-{uuid.uuid4().hex[:12]}")
    try:
        gateway.start()
        with WsClient(f"ws://{gateway.host}:{gateway.port}/ws", gateway.token) as client:
            client.call("events.subscribe", {})
            client.call("schedule.create", {"name": "held", "prompt": held.command, "at": FAR})
            run = client.call("schedule.run_now", {"schedule": "held"})
            client.event(lambda e: e.get("type") == "tool_started" and e["session_id"] == run["session_id"], timeout=60)
            # Killed once the shell call runs: the run has begun (a run that had not would be run again, P7).
            held.wait_running()
            gateway.kill()

        gateway.start()
        rpc = gateway.client()
        runs = rpc.call("schedule.runs", schedule="held")
        assert [(r["session_id"], r["outcome"]) for r in runs] == [(run["session_id"], "interrupted")]
        background = rpc.call("session.list", kind="background")["items"]
        assert [s["id"] for s in background] == [run["session_id"]]
        assert rpc.call("session.queue.list", session_id=run["session_id"]) == []
    finally:
        held.release()
        held.close()
        gateway.stop()


def _after_the_actors_work(rpc: Any, session_id: str) -> None:
    """Return once the session's actor has done the work queued before this call: a navigation to the
    head is itself a job of that actor. A Conflict means the response that just ended is still being
    wound up (or, had the queue drained, the next one runs): ask again; the answer decides, not a timer."""
    for _ in range(10_000):
        head = rpc.call("session.get", session_id=session_id)["session"]["head"]
        try:
            rpc.call("session.navigate", session_id=session_id, entry_id=head)
            return
        except RpcFailure as failure:
            if "idle session" not in str(failure):
                raise
    raise AssertionError("the session never became idle")


def test_k1_a_run_pending_at_restart_starts_alone_and_the_items_the_restart_left_pending_wait(
    tmp_path: Path,
) -> None:
    """G3: after a restart nothing in a session starts by itself; the schedule's run claimed before the
    crash is the one exception, and it starts alone: the user's item queued before it stays pending."""
    gateway = _gateway(tmp_path)
    held = Hold(_hold_folder() / f"hold-{uuid.uuid4().hex[:12]}")
    try:
        gateway.start()
        with WsClient(f"ws://{gateway.host}:{gateway.port}/ws", gateway.token) as client:
            target = client.call("session.create", {"title": "notes"})["id"]
            client.call("events.subscribe", {"session_id": target})
            client.call("session.send", {"session_id": target, "text": held.command})
            client.event(lambda e: e.get("type") == "tool_started", timeout=60)
            later = client.call("session.send", {"session_id": target, "text": "a question for later"})
            client.call(
                "schedule.create", {"name": "digest", "prompt": "Write the digest.", "at": FAR, "session_id": target}
            )
            run = client.call("schedule.run_now", {"schedule": "digest"})
            gateway.kill()

        gateway.start()
        rpc = gateway.client()
        assert rpc.call("session.wait", submission_id=run["submission_id"], timeout=60)["state"] == "completed"
        _after_the_actors_work(rpc, target)
        assert [item["id"] for item in rpc.call("session.queue.list", session_id=target)] == [later["id"]]
        assert "a question for later" not in _user_texts(rpc, target)
        rpc.call("session.continue", session_id=target)  # continued by hand, it goes on as usual
        assert rpc.call("session.wait", submission_id=later["id"], timeout=60)["state"] == "completed"
    finally:
        held.release()
        held.close()
        gateway.stop()
