"""The profile's config.toml as a running Gateway applies it (M1, R3, R1): read at start for new sessions
and retries, and again on ``session.reload``. A real Gateway, a scripted model, a WebSocket client."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from anyy.providers.base import ProviderError
from commons.jsonrpc import RpcError
from tests.fakes.gateways import BROKEN_PROVIDER, LiveGateway, WsClient


def configured(tmp_path: Path, *replacements: tuple[str, str], extra: str = "") -> LiveGateway:
    """A Gateway whose profile's config.toml was edited before the Gateway started."""
    live = LiveGateway(tmp_path)
    text = live.profile.config_path.read_text()
    for old, new in replacements:
        assert old in text, old
        text = text.replace(old, new, 1)
    live.profile.config_path.write_text(text + extra)
    return live


@pytest.fixture
def no_retries(tmp_path: Path) -> Iterator[LiveGateway]:
    with configured(tmp_path, ("enabled = true", "enabled = false")) as live:
        yield live


def ended(client: WsClient, session_id: str) -> dict[str, Any]:
    """The first execution_state event of the session that is neither running nor a retry wait."""
    return client.event(
        lambda e: (
            e.get("type") == "execution_state"
            and e.get("session_id") == session_id
            and e.get("state") not in ("running", "retry_wait")
        ),
        timeout=60,
    )


def test_r3_retries_disabled_in_the_profile_fail_at_the_first_transient_error(no_retries: LiveGateway) -> None:
    live = no_retries
    live.model.enqueue(ProviderError("transient", "overloaded, try again"), "never asked for")
    with live.ws() as client:
        session = client.call("session.create")
        client.call("events.subscribe", {"session_id": session["id"]})
        client.call("session.send", {"session_id": session["id"], "text": "hello"})
        end = ended(client, session["id"])
        waits = [e for e in client.events if e.get("type") == "retry_wait"]
    assert end["state"] == "failed"
    assert "overloaded" in (end.get("error") or "")
    assert waits == []  # no automatic retry was even scheduled
    assert live.model.pending == 1  # and the model was called once
    assert len(live.model.requests) == 1


def test_m1_new_sessions_take_the_profiles_model_provider_and_effort(tmp_path: Path) -> None:
    replacements = (('model = "offline"', 'model = "offline-large"'), ('effort = ""', 'effort = "high"'))
    with configured(tmp_path, *replacements) as live, live.ws() as client:
        created = client.call("session.create")
        got = client.call("session.get", {"session_id": created["id"]})["session"]
    for session in (created, got):
        assert (session["provider"], session["model"], session["effort"]) == ("offline", "offline-large", "high")


def test_m1_new_sessions_take_the_profiles_named_provider(tmp_path: Path) -> None:
    with (
        configured(
            tmp_path,
            ('provider = "offline"', 'provider = "broken"'),
            ('model = "offline"', 'model = "m"'),
            extra=BROKEN_PROVIDER,
        ) as live,
        live.ws() as client,
    ):
        created = client.call("session.create")
    assert (created["provider"], created["model"]) == ("broken", "m")


def test_r1_reload_applies_the_edited_config_toml(gateway: LiveGateway) -> None:
    """``session.reload`` over RPC: a provider added to config.toml and ``[retries] enabled = false``
    both apply to the next response, without restarting the Gateway."""
    with gateway.ws() as client:
        session = client.call("session.create")
        sid = session["id"]
        client.call("events.subscribe", {"session_id": sid})
        config = gateway.profile.config_path
        unknown = {"session_id": sid, "provider": "broken", "model": "m"}
        with pytest.raises(RpcError):  # not configured yet
            client.call("session.settings", unknown)
        config.write_text(config.read_text().replace("enabled = true", "enabled = false", 1) + BROKEN_PROVIDER)
        steps = client.call("session.reload", {"session_id": sid})
        assert (steps[0]["step"], steps[0]["applied"]) == ("settings", True)
        # The new provider is known now (before the reload, this was an unknown provider) ...
        client.call("session.settings", {"session_id": sid, "provider": "broken", "model": "m"})
        client.call("session.send", {"session_id": sid, "text": "hello"})
        end = ended(client, sid)
        waits = [e for e in client.events if e.get("type") == "retry_wait"]
    # ... its connection is refused (a transient error), and with retries off that fails at once.
    assert end["state"] == "failed"
    assert waits == []


def test_r1_reload_of_a_broken_config_applies_nothing_and_says_why(gateway: LiveGateway) -> None:
    with gateway.ws() as client:
        session = client.call("session.create")
        config = gateway.profile.config_path
        good = config.read_text()
        config.write_text(good + "\n[retries]\nenabled = false\n")  # a table twice: not TOML
        steps = client.call("session.reload", {"session_id": session["id"]})
        settings = steps[0]
        assert (settings["step"], settings["applied"]) == ("settings", False)
        assert settings["detail"]
        # Nothing changed: a transient error is still retried.
        gateway.model.enqueue(ProviderError("transient", "overloaded"), "recovered")
        client.call("events.subscribe", {"session_id": session["id"]})
        client.call("session.send", {"session_id": session["id"], "text": "hello"})
        client.event(lambda e: e.get("type") == "retry_wait", timeout=60)
        assert ended(client, session["id"])["state"] == "completed"  # retried after its wait, and answered


def test_x4_a_session_keeps_its_model_when_the_profiles_default_changes(gateway: LiveGateway) -> None:
    """The session owns its state: an old session resumed after config.toml changed keeps its model;
    only sessions created after the change take the new default."""
    with gateway.ws() as client:
        old = client.call("session.create")
        config = gateway.profile.config_path
        config.write_text(config.read_text().replace('model = "offline"', 'model = "offline-large"', 1))
        new = client.call("session.create")
        resumed = client.call("session.get", {"session_id": old["id"]})["session"]
    assert (resumed["provider"], resumed["model"]) == ("offline", "offline")
    assert new["model"] == "offline-large"


LISTED_PROVIDER = """
[providers.listed]
kind = "openai"
base_url = "http://127.0.0.1:1/v1"
models = ["small", "large"]
"""


def test_u4_changing_only_the_provider_never_keeps_the_old_providers_model(tmp_path: Path) -> None:
    """``/provider openai`` once made the model ``openai/offline``: the offline model's name kept under
    another provider. Now the provider's first listed model is taken, or, for a provider that lists
    none, nothing changes and the error says to name a model."""
    with configured(tmp_path, extra=LISTED_PROVIDER) as live, live.ws() as client:
        sid = client.call("session.create")["id"]
        with pytest.raises(RpcError) as caught:
            client.call("session.settings", {"session_id": sid, "provider": "openai"})
        assert "lists no models" in caught.value.message
        assert "--model NAME" in caught.value.message
        session = client.call("session.get", {"session_id": sid})["session"]
        assert (session["provider"], session["model"]) == ("offline", "offline")
        changed = client.call("session.settings", {"session_id": sid, "provider": "listed"})
        assert (changed["provider"], changed["model"]) == ("listed", "small")
        both = client.call("session.settings", {"session_id": sid, "provider": "openai", "model": "gpt-x"})
        assert (both["provider"], both["model"]) == ("openai", "gpt-x")
