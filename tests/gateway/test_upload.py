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


def _chunked(live: LiveGateway, chunks: list[bytes], *, name: str = "c.bin") -> Any:
    conn = http.client.HTTPConnection("127.0.0.1", live.port, timeout=30)
    try:
        conn.request(
            "POST",
            f"/upload?name={name}",
            body=iter(chunks),
            headers={"Authorization": f"Bearer {live.token}"},
            encode_chunked=True,
        )
        reply = conn.getresponse()
        return reply.status, json.loads(reply.read() or b"null")
    finally:
        conn.close()


def test_g5_uploads_stay_within_the_profiles_quota(tmp_path: Path) -> None:
    live = LiveGateway(tmp_path)
    live.profile.config_path.write_text(live.profile.config_path.read_text() + "\n[gateway]\nupload_quota = 1\n")
    with live:
        kib = 1024
        assert upload(live, b"a" * (600 * kib), name="first.bin")[0] == 200
        status, body = upload(live, b"b" * (600 * kib), name="second.bin")  # 1.2 MiB in all: over
        assert status == 413
        assert "upload quota" in body["error"]
        assert "[gateway] upload_quota" in body["error"]
        # Without a Content-Length (chunked), the body is cut off at the same bound.
        status, body = _chunked(live, [b"c" * (100 * kib)] * 6)
        assert status == 413
        assert "upload quota" in body["error"]
        assert upload(live, b"d" * (300 * kib), name="fits.bin")[0] == 200  # what is left is still usable
        assert live.run(live.gateway.store(lambda s: s.object_bytes())) == 900 * kib  # type: ignore[union-attr]


def test_g5_an_upload_whose_size_is_not_the_claimed_one_stores_nothing(live: LiveGateway) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", live.port, timeout=30)
    try:
        conn.request(
            "POST", "/upload?name=a.txt&size=10", body=b"five!", headers={"Authorization": f"Bearer {live.token}"}
        )
        reply = conn.getresponse()
        status, body = reply.status, json.loads(reply.read())
    finally:
        conn.close()
    assert status == 400
    assert "5 bytes where ?size= said 10" in body["error"]
    assert live.run(live.gateway.store(lambda s: s.object_bytes())) == 0  # type: ignore[union-attr]
    status, body = _chunked(live, [b"five", b"!"], name="ok.txt")
    assert status == 200
    assert body["size"] == 5
