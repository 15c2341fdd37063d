"""O3: Web Push to paired devices, really encrypted (RFC 8291) and signed (VAPID), delivered to a push
service on loopback that decrypts each message with the subscription's own keys, as a browser would."""

from __future__ import annotations

import base64
import json
import os
import ssl
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import http_ece  # type: ignore[import-untyped]
import httpx
import pytest
import trustme
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from tests.fakes.gateways import StartGateway, run

HOST = "127.0.0.2"
TIMEOUT = 60.0


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


class PushService:
    """A push service on 127.0.0.1 over HTTPS: it keeps what it is sent, by endpoint path."""

    def __init__(self, ca: trustme.CA) -> None:
        self.received: dict[str, list[tuple[dict[str, str], bytes]]] = {}
        self.arrived = threading.Condition()
        service = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                with service.arrived:
                    service.received.setdefault(self.path, []).append(
                        ({k.lower(): v for k, v in self.headers.items()}, body)
                    )
                    service.arrived.notify_all()
                self.send_response(201)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        ca.issue_cert("127.0.0.1").configure_cert(context)
        self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def base(self) -> str:
        return f"https://127.0.0.1:{self.server.server_address[1]}"

    def wait(self, path: str, timeout: float) -> tuple[dict[str, str], bytes]:
        with self.arrived:
            assert self.arrived.wait_for(lambda: path in self.received, timeout), f"no push to {path}"
            return self.received[path][0]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class Browser:
    """What a browser keeps for one push subscription: its P-256 key pair and auth secret."""

    def __init__(self, endpoint: str) -> None:
        self.key = ec.generate_private_key(ec.SECP256R1())
        self.auth = os.urandom(16)
        public = self.key.public_key().public_bytes(
            serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint
        )
        self.subscription = {"endpoint": endpoint, "keys": {"p256dh": _b64(public), "auth": _b64(self.auth)}}

    def decrypt(self, body: bytes) -> dict[str, Any]:
        found: dict[str, Any] = json.loads(
            http_ece.decrypt(body, private_key=self.key, auth_secret=self.auth, version="aes128gcm")
        )
        return found


@pytest.fixture
def push_service(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[PushService]:
    ca = trustme.CA()
    bundle = tmp_path / "push-ca.pem"
    ca.cert_pem.write_to_path(str(bundle))
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(bundle))  # the Gateway process trusts the push service
    service = PushService(ca)
    yield service
    service.close()


def _device(home: Path, base: str, trust: ssl.SSLContext, *args: str) -> httpx.Client:
    offer = json.loads(run(home, "devices", "pair", "--json", *args).stdout)
    http = httpx.Client(verify=trust, trust_env=False, headers={"Origin": base})
    assert http.post(f"{base}/auth/pair", json={"code": offer["code"]}).status_code == 200
    return http


def test_o3_push_when_a_question_waits_decrypted_with_the_subscription_keys(
    home: Path, start_gateway: StartGateway, push_service: PushService
) -> None:
    # The test's push service runs on loopback: a push service the profile's owner names.
    named = '\n[gateway]\npush_hosts = ["127.0.0.1"]\n'
    gateway = start_gateway(start_args=("--host", HOST, "--tls"), config_extra=named)
    base = f"https://{HOST}:{gateway.address.port}"
    trust = ssl.create_default_context(cafile=home / "profiles" / "default" / "tls" / "ca.pem")
    plain, private = Browser(f"{push_service.base}/p/plain"), Browser(f"{push_service.base}/p/private")
    phone = _device(home, base, trust, "--name", "phone", "--scope", "reader")
    key = phone.get(f"{base}/push/key").json()["key"]
    assert phone.post(f"{base}/push/subscribe", json={"subscription": plain.subscription}).status_code == 200
    laptop = _device(home, base, trust, "--name", "laptop")
    allowed = {"subscription": private.subscription, "kinds": ["question"], "content": True}
    assert laptop.post(f"{base}/push/subscribe", json=allowed).json() == {"kinds": ["question"], "content": True}
    listed = {d["name"]: d["push_kinds"] for d in json.loads(run(home, "devices", "list", "--json").stdout)["devices"]}
    assert listed == {"phone": ["question", "approval", "failed", "finished"], "laptop": ["question"]}

    with gateway.client() as client:
        session = client.call("session.create", {"title": "deploy notes"})["id"]
        client.call("session.tools.configure", {"session_id": session, "enabled": ["ask_user"]})
        sent = client.call("session.send", {"session_id": session, "text": "Which branch, ask me?"})
        assert client.call("session.wait", {"submission_id": sent["id"], "timeout": TIMEOUT})["state"] == "suspended"
    headers, body = push_service.wait("/p/plain", timeout=5.0)  # within 5 s of the question being asked
    assert headers["content-encoding"] == "aes128gcm"
    assert f"k={key}" in headers["authorization"]  # signed with the profile's VAPID key
    told = plain.decrypt(body)
    assert told["kind"] == "question"
    assert told["session"] == "deploy notes"
    assert told["url"] == f"/#session={session}"
    assert "text" not in told  # no conversation text unless the device allowed it
    assert b"branch" not in body
    _, secret_body = push_service.wait("/p/private", timeout=5.0)
    assert "branch" in private.decrypt(secret_body)["text"].lower()
    # A revoked device is told nothing more: its subscription is dropped with it.
    assert run(home, "devices", "revoke", "phone").returncode == 0
    listed = {d["name"]: d["push_kinds"] for d in json.loads(run(home, "devices", "list", "--json").stdout)["devices"]}
    assert listed["phone"] == []


def test_o3_subscription_checked(home: Path, start_gateway: StartGateway) -> None:
    gateway = start_gateway(start_args=("--host", HOST, "--tls"))
    base = f"https://{HOST}:{gateway.address.port}"
    trust = ssl.create_default_context(cafile=home / "profiles" / "default" / "tls" / "ca.pem")
    phone = _device(home, base, trust)
    insecure = {"subscription": {"endpoint": "http://127.0.0.1:9/x", "keys": {"p256dh": "a", "auth": "b"}}}
    refused = phone.post(f"{base}/push/subscribe", json=insecure)
    assert refused.status_code == 400
    assert "https://" in refused.json()["error"]
    bad_kind = {"subscription": {"endpoint": "https://push.example/x", "keys": {"p256dh": "a", "auth": "b"}}}
    assert phone.post(f"{base}/push/subscribe", json=bad_kind | {"kinds": ["everything"]}).status_code == 400
    # Pushes are the Gateway's own requests: only to a push service, never to an address a device chooses
    # (a host on the user's network, the Gateway itself).
    for host in ("10.0.0.7", "127.0.0.1:8080", "router.lan", "fcm.googleapis.com.evil.example"):
        inside = {"subscription": {"endpoint": f"https://{host}/x", "keys": {"p256dh": "a", "auth": "b"}}}
        refused = phone.post(f"{base}/push/subscribe", json=inside)
        assert refused.status_code == 400, host
        assert "not a known push service" in refused.json()["error"]
        assert "push_hosts" in refused.json()["error"]
    browser = {
        "subscription": {"endpoint": "https://fcm.googleapis.com/fcm/send/abc", "keys": {"p256dh": "a", "auth": "b"}}
    }
    assert phone.post(f"{base}/push/subscribe", json=browser).status_code == 200
    # The owner's token is not a device: nothing to push to.
    owner = httpx.post(
        f"{base}/push/subscribe",
        json=bad_kind,
        headers={"Authorization": f"Bearer {gateway.address.token}"},
        verify=trust,
        trust_env=False,
    )
    assert owner.status_code == 400


def test_o3_a_long_turn_that_ends_unwatched_is_told_a_short_or_watched_one_is_not() -> None:
    from anyy.api.events import ExecutionStateChanged
    from anyy.gateway.push import LONG_TURN, Turns

    now = [0.0]
    turns = Turns(clock=lambda: now[0])

    def state(execution: str, value: str) -> ExecutionStateChanged:
        return ExecutionStateChanged(session_id="s", execution_id=execution, state=value)  # type: ignore[arg-type]

    nobody, someone = (lambda _: False), (lambda _: True)
    assert turns.kind(state("long", "running"), nobody) is None
    assert turns.kind(state("short", "running"), nobody) is None
    assert turns.kind(state("watched", "running"), nobody) is None
    now[0] += LONG_TURN
    assert turns.kind(state("long", "completed"), nobody) == "finished"
    assert turns.kind(state("watched", "completed"), someone) is None
    now[0] += 1
    assert turns.kind(state("short2", "running"), nobody) is None
    assert turns.kind(state("short2", "completed"), nobody) is None
    assert turns.kind(state("short", "suspended"), nobody) == "approval"  # no question: an approval waits
