"""Residents through the Gateway (K3): resident.* RPC, and the webhook: its own secret (a wrong one, or an
unknown name, is 401 and records nothing), a size limit (413, nothing recorded), the body as a follow-up of
the resident's session. D12: a fork of the resident's session does not take its webhook."""

from __future__ import annotations

import http.client
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from anyy.domain.residents import MAX_HOOK_BYTES
from tests.fakes.gateways import TIMEOUT, LiveGateway, error_code


@pytest.fixture
def live(tmp_path: Path) -> Iterator[LiveGateway]:
    with LiveGateway(tmp_path) as gateway:
        yield gateway


def post_hook(live: LiveGateway, name: str, body: bytes, secret: str | None) -> tuple[int, Any]:
    conn = http.client.HTTPConnection("127.0.0.1", live.port, timeout=TIMEOUT)
    headers = {"Content-Type": "text/plain"}
    if secret is not None:
        headers["Authorization"] = f"Bearer {secret}"
    try:
        conn.request("POST", f"/hooks/{name}", body=body, headers=headers)
        response = conn.getresponse()
        return response.status, json.loads(response.read() or b"null")
    finally:
        conn.close()


def create(live: LiveGateway, **extra: Any) -> dict[str, Any]:
    params = {"name": "inbox", "instructions": "File what comes in.", "webhook": True, **extra}
    created: dict[str, Any] = live.call("resident.create", params)
    return created


def user_texts(live: LiveGateway, session_id: str) -> list[str]:
    items = live.call("session.history", {"session_id": session_id, "limit": 50})["items"]
    return [e["text"] for e in items if e["kind"] == "user"]


def test_k3_resident_rpc_creates_lists_changes_pauses_and_removes(live: LiveGateway) -> None:
    created = create(live, heartbeat_seconds=1800, heartbeat_note="look around")
    resident = created["resident"]
    assert created["secret"]
    assert resident["webhook_path"] == "/hooks/inbox"
    assert resident["next_wake_at"] is not None
    assert resident["last_wake_at"] is None
    session = live.call("session.get", {"session_id": resident["session_id"]})["session"]
    assert session["kind"] == "background"
    assert session["origin"]["kind"] == "resident"
    assert [r["name"] for r in live.call("resident.list")] == ["inbox"]
    assert error_code(lambda: create(live)) != 0  # the name is taken
    changed = live.call("resident.update", {"name": "inbox", "heartbeat_seconds": 3600, "new_secret": True})
    assert changed["resident"]["heartbeat_seconds"] == 3600
    assert changed["secret"] not in (None, created["secret"])
    assert live.call("resident.pause", {"name": "inbox"})["paused"]
    assert live.call("resident.get", {"name": resident["id"]})["next_wake_at"] is None
    assert not live.call("resident.resume", {"name": "inbox"})["paused"]
    live.call("resident.delete", {"name": "inbox"})
    assert live.call("resident.list") == []
    assert live.call("session.get", {"session_id": resident["session_id"]})  # its session stays


def test_k3_bad_resident_input_names_the_field(live: LiveGateway) -> None:
    for params, field in (
        ({"name": "Bad Name", "instructions": "x"}, "name"),
        ({"name": "ok", "instructions": "  "}, "instructions"),
        ({"name": "ok", "instructions": "x", "heartbeat_seconds": 5}, "heartbeat"),
    ):
        with pytest.raises(Exception, match=field):
            live.call("resident.create", params)
    create(live)
    with pytest.raises(Exception, match="exists"):
        create(live)


def test_k3_webhook_wrong_secret_is_401_and_records_nothing(live: LiveGateway) -> None:
    created = create(live)
    session_id = created["resident"]["session_id"]
    for secret in (None, "wrong", live.token):  # not even the Gateway's own token
        status, reply = post_hook(live, "inbox", b"mail arrived", secret)
        assert status == 401, reply
    assert post_hook(live, "nobody", b"x", created["secret"])[0] == 401  # as a wrong secret: names are not told (K5)
    assert user_texts(live, session_id) == []
    assert live.call("session.queue.list", {"session_id": session_id}) == []
    assert live.call("resident.get", {"name": "inbox"})["last_wake_at"] is None


def test_k3_webhook_body_over_the_limit_is_413_and_records_nothing(live: LiveGateway) -> None:
    created = create(live)
    status, reply = post_hook(live, "inbox", b"x" * (MAX_HOOK_BYTES + 1), created["secret"])
    assert status == 413
    assert "too large" in reply["error"]
    assert live.call("session.queue.list", {"session_id": created["resident"]["session_id"]}) == []


def test_k3_webhook_body_becomes_a_follow_up_of_the_residents_session(live: LiveGateway) -> None:
    created = create(live)
    session_id = created["resident"]["session_id"]
    live.model.enqueue("Filed.")
    status, reply = post_hook(live, "inbox", b'{"subject": "invoice"}', created["secret"])
    assert status == 202
    assert reply["session_id"] == session_id
    done = live.call("session.wait", {"submission_id": reply["submission_id"], "timeout": TIMEOUT})
    assert done["state"] == "completed"
    assert done["kind"] == "follow_up"
    [text] = user_texts(live, session_id)
    assert text.startswith('[webhook] {"subject": "invoice"}')
    assert "Standing instructions: File what comes in." in text
    assert live.call("resident.get", {"name": "inbox"})["last_trigger"] == "webhook"
    live.call("resident.pause", {"name": "inbox"})
    assert post_hook(live, "inbox", b"more", created["secret"])[0] == 409


def test_d12_a_fork_of_a_resident_session_does_not_take_its_webhook(live: LiveGateway) -> None:
    created = create(live)
    session_id = created["resident"]["session_id"]
    live.model.enqueue("Filed.", "Filed again.")
    _, first = post_hook(live, "inbox", b"one", created["secret"])
    live.call("session.wait", {"submission_id": first["submission_id"], "timeout": TIMEOUT})
    fork = live.call("session.fork", {"session_id": session_id})["session"]
    assert fork.get("origin") is None  # a fork is nobody's resident
    assert all(r["session_id"] != fork["id"] for r in live.call("resident.list"))
    status, second = post_hook(live, "inbox", b"two", created["secret"])
    assert status == 202
    assert second["session_id"] == session_id  # the webhook still reaches the original only
    live.call("session.wait", {"submission_id": second["submission_id"], "timeout": TIMEOUT})
    assert [t.split("\n")[0] for t in user_texts(live, fork["id"])] == ["[webhook] one"]
    assert [t.split("\n")[0] for t in user_texts(live, session_id)] == ["[webhook] two", "[webhook] one"]
