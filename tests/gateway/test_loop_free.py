"""Nothing holds the Gateway's event loop (G4): a provider's SDK is imported in a worker thread, so other
sessions' calls are answered while it loads. A real Gateway on a socket; the import is held by a gate."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from anyy.providers.base import Provider
from anyy.providers.registry import LOADERS, ProviderConfig
from tests.fakes.gateways import TIMEOUT, LiveGateway, WsClient
from tests.fakes.model_server import FakeModelServer, Reply


@pytest.fixture
def model_server() -> Iterator[FakeModelServer]:
    server = FakeModelServer()
    server.start()
    yield server
    server.stop()


def finished(client: WsClient, session_id: str) -> dict[str, Any]:
    return client.event(
        lambda e: (
            e.get("type") == "execution_state"
            and e.get("session_id") == session_id
            and e.get("state") not in ("running", "retry_wait")
        ),
        timeout=60,
    )


def test_g4_a_held_provider_import_leaves_other_sessions_answered(
    tmp_path: Path, model_server: FakeModelServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NO_PROXY", "*")
    entered, release = threading.Event(), threading.Event()

    def held_import(name: str, settings: ProviderConfig, api_key: str) -> Provider:
        entered.set()  # as an SDK whose import takes its time: held until the test has seen the others answered
        release.wait(TIMEOUT * 6)
        return LOADERS["openai"](name, settings, api_key)

    live = LiveGateway(tmp_path, loaders={"openai": held_import})
    table = f'\n[providers.remote]\nkind = "openai"\nbase_url = "{model_server.openai_url}"\nmodels = ["m"]\n'
    live.profile.config_path.write_text(live.profile.config_path.read_text() + table)
    model_server.enqueue(Reply(text=["from the remote model"]))
    try:
        with live, live.ws() as first, live.ws() as other:
            slow = first.call("session.create")
            first.call("session.settings", {"session_id": slow["id"], "provider": "remote", "model": "m"})
            first.call("events.subscribe", {"session_id": slow["id"]})
            first.call("session.send", {"session_id": slow["id"], "text": "hello"})
            assert entered.wait(TIMEOUT), "the first model call never reached the provider's import"

            # The import is held: another session is created, answered by its model, and the Gateway reports.
            live.model.enqueue("meanwhile")
            session = other.call("session.create")
            other.call("events.subscribe", {"session_id": session["id"]})
            other.call("session.send", {"session_id": session["id"], "text": "are you there?"})
            assert finished(other, session["id"])["state"] == "completed"
            assert other.call("gateway.status")["profile"] == "default"
            assert not release.is_set()

            release.set()
            assert finished(first, slow["id"])["state"] == "completed"
            entries = first.call("session.history", {"session_id": slow["id"]})
            assert "from the remote model" in str(entries)
    finally:
        release.set()
