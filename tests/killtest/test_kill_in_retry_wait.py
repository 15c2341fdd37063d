"""G3 for work that was waiting to retry: a real Gateway process SIGKILLed while an execution sits in its
automatic retry wait (R3). On restart that execution is interrupted like running work, with the notice,
its submission too, and the session can be used again. The kill comes on the ``retry_wait`` event (a
wait of 4 s, announced before it starts), never on a timer."""

from __future__ import annotations

from pathlib import Path

from anyy.profiles import create_profile
from anyy.runtime.host import RECOVERY_NOTE
from anyy.storage.sqlite import SqliteStore
from tests.fakes.gateways import BROKEN_PROVIDER, WsClient
from tests.killtest.gateway_process import GatewayProcess


def test_g3_gateway_killed_during_a_retry_wait_recovers_it_as_interrupted(tmp_path: Path) -> None:
    home = tmp_path / "home"
    profile = create_profile(home, "retry")
    config = profile.config_path.read_text()
    config = config.replace('provider = "offline"', 'provider = "broken"', 1).replace(
        'model = "offline"', 'model = "m"', 1
    )
    profile.config_path.write_text(config.replace("max_retries = 3", "max_retries = 8", 1) + BROKEN_PROVIDER)
    work = tmp_path / "work"
    work.mkdir()
    gateway = GatewayProcess(home, "retry", cwd=work, log=tmp_path / "gateway.err")
    try:
        gateway.start()
        with WsClient(f"ws://{gateway.host}:{gateway.port}/ws", gateway.token) as client:
            session_id = client.call("session.create")["id"]
            client.call("events.subscribe", {"session_id": session_id})
            submission = client.call("session.send", {"session_id": session_id, "text": "hello"})
            waiting = client.event(lambda e: e.get("type") == "retry_wait" and e["attempt"] >= 2, timeout=60)
            gateway.kill()  # 4 s into nothing: the execution is in its wait
        execution_id = waiting["execution_id"]
        store = SqliteStore.open_profile(profile.path, profile=profile.name)
        try:
            assert store.get_execution(execution_id).state == "retry_wait"  # what the kill left on disk
        finally:
            store.close()

        gateway.start()
        rpc = gateway.client()
        recovered = rpc.call("session.execution", session_id=session_id, execution_id=execution_id)
        assert recovered["state"] == "interrupted"
        assert recovered["note"].startswith(RECOVERY_NOTE)
        assert "No text of its answer had been saved yet." in recovered["note"]  # it was waiting: nothing streamed
        view = rpc.call("session.get", session_id=session_id)
        assert view["running_execution"] is None
        assert view["retry_wait"] is None
        assert rpc.call("session.wait", submission_id=submission["id"], timeout=0)["state"] == "interrupted"
        history = rpc.call("session.history", session_id=session_id, limit=10)["items"]
        assert any(e["kind"] == "notice" and e["text"] == recovered["note"] for e in history)
        assert rpc.call("session.queue.list", session_id=session_id) == []
    finally:
        gateway.stop()
