"""Q2: ``POST /upload`` stores a file for a message once, by its hash, with the token only, bounded in size;
the reply is the attachment ``session.send`` takes."""

from __future__ import annotations

import hashlib
import http.client
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.gateway.live import LiveGateway


@pytest.fixture
def live(tmp_path: Path) -> Iterator[LiveGateway]:
    with LiveGateway(tmp_path) as gateway:
        yield gateway


def upload(live: LiveGateway, body: bytes, *, name: str = "a.txt", token: str | None = None, **headers: str) -> Any:
    conn = http.client.HTTPConnection("127.0.0.1", live.port, timeout=30)
    sent = {"Authorization": f"Bearer {live.token if token is None else token}", **headers}
    try:
        conn.request("POST", f"/upload?name={name}", body=body, headers=sent)
        reply = conn.getresponse()
        return reply.status, json.loads(reply.read() or b"null")
    finally:
        conn.close()


def test_q2_upload_stores_once_by_hash_and_sends_as_an_attachment(live: LiveGateway) -> None:
    status, first = upload(live, b"hello file", name="hello.txt", **{"Content-Type": "text/plain; charset=utf-8"})
    assert status == 200
    digest = hashlib.sha256(b"hello file").hexdigest()
    assert first == {"object": digest, "name": "hello.txt", "media_type": "text/plain", "size": 10}
    assert upload(live, b"hello file", name="again.txt")[1]["object"] == digest  # content-addressed
    session_id = live.call("session.create", {})["id"]
    live.model.enqueue("ok")
    sent = live.call("session.send", {"session_id": session_id, "text": "read it", "attachments": [first]})
    assert live.call("session.wait", {"submission_id": sent["id"], "timeout": 10})["state"] == "completed"
    user = next(e for e in live.call("session.history", {"session_id": session_id})["items"] if e["kind"] == "user")
    assert user["data"]["attachments"] == [first]


def test_q2_upload_needs_the_token_a_name_and_a_bounded_size(live: LiveGateway) -> None:
    assert upload(live, b"x", token="wrong")[0] == 401
    status, body = upload(live, b"x", name="")
    assert status == 400
    assert body["error"].startswith("name:")
    status, body = upload(live, b"x", name="..%2Fescape")
    assert status == 400
    big = b"\0" * (32 * 1024 * 1024 + 1)
    status, body = upload(live, big, name="big.bin")
    assert status == 413
    assert "at most 32 MiB" in body["error"]
    status, body = upload(live, b"odd", name="odd.bin", **{"Content-Type": "not a type"})
    assert body["media_type"] == "application/octet-stream"
