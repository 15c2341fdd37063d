"""H17: alerts reach notification services through apprise, here ntfy's HTTP protocol on a loopback
endpoint the test runs: each kind to the URLs it is routed to, and in quiet mode one digest per URL set
when the runner ends."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from tests.ameesh.conftest import Ameesh


@dataclass
class Ntfy:
    """A loopback ntfy server: every published message (topic, title, message), in order."""

    port: int
    published: list[tuple[str, str, str]] = field(default_factory=list)

    def url(self, topic: str) -> str:
        return f"ntfy://127.0.0.1:{self.port}/{topic}"


@pytest.fixture
def ntfy() -> Iterator[Ntfy]:
    received: list[tuple[str, str, str]] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length) or b"{}")  # apprise publishes ntfy's JSON form
            received.append((str(body.get("topic")), str(body.get("title")), str(body.get("message"))))
            answer = b'{"id":"x","event":"message"}'
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield Ntfy(server.server_address[1], received)
    finally:
        server.shutdown()
        server.server_close()


def _canon(ameesh: Ameesh, ntfy: Ntfy, *, quiet: bool, routes: bool = True) -> None:
    canon = ameesh.work / ".ameesh" / "canon.toml"
    canon.parent.mkdir(exist_ok=True)
    canon.write_text(
        "[alerts]\n"
        f'notify = ["{ntfy.url("all")}"]\n'
        f"quiet = {str(quiet).lower()}\n"
        + (f'[alerts.routes]\ncircuit_open = ["{ntfy.url("phone")}"]\nsession_too_big = []\n' if routes else ""),
        encoding="utf-8",
    )
    for var, value in {"MAX_ATTEMPTS": "1", "BACKOFF_BASE": "0", "CIRCUIT_AFTER": "1"}.items():
        ameesh.monkeypatch.setenv(f"AMEESH_SESSION_{var}", value)
    ameesh.script({"fail": "503 upstream unavailable"})
    ameesh.add("bob")
    ameesh("send", "bob", "one")


def test_h17_alerts_reach_ntfy_through_apprise_routed_by_kind(ameesh: Ameesh, ntfy: Ntfy) -> None:
    _canon(ameesh, ntfy, quiet=False)
    assert ameesh("run", ok=False).exit_code == 4
    by_topic = {topic: (title, body) for topic, title, body in ntfy.published}
    assert sorted(by_topic) == ["all", "phone"]  # harness_failing to every URL's default, circuit_open routed
    assert by_topic["all"][0] == "ameesh: bob: harness_failing"
    assert "503 upstream unavailable" in by_topic["all"][1]
    assert by_topic["phone"][0] == "ameesh: bob: circuit_open"
    assert len(ntfy.published) == 2
    assert not [i for i in ameesh.json("thread", "bob") if i["kind"] == "push"]  # no delivery failed


def test_h17_quiet_mode_sends_one_digest_per_destination_when_the_runner_ends(ameesh: Ameesh, ntfy: Ntfy) -> None:
    _canon(ameesh, ntfy, quiet=True, routes=False)  # the supervisor is busy: no interruption per alert
    ameesh("run", ok=False)
    ((topic, title, message),) = ntfy.published  # harness_failing and circuit_open, in one digest
    assert (topic, title) == ("all", "ameesh: 2 alerts")
    assert "bob: harness_failing:" in message
    assert "bob: circuit_open:" in message
    ameesh.monkeypatch.setenv("AMEESH_ALERTS_QUIET", "0")  # the variable wins over the canon
    ameesh("retry", "bob")
    ameesh("run", ok=False)
    # Not quiet any more: each alert goes out on its own, as it is raised (in the order the runner raises
    # them, which its timing decides), never as a digest.
    singles = [title for _, title, _ in ntfy.published[1:]]
    assert sorted(singles) == ["ameesh: bob: circuit_open", "ameesh: bob: harness_failing"], singles


def test_h17_a_failed_delivery_is_said_in_the_thread_and_the_runner_goes_on(ameesh: Ameesh, ntfy: Ntfy) -> None:
    canon = ameesh.work / ".ameesh" / "canon.toml"
    canon.parent.mkdir()
    canon.write_text('[alerts]\nnotify = ["not-a-service://x"]\n', encoding="utf-8")
    ameesh.monkeypatch.setenv("AMEESH_SESSION_MAX_ATTEMPTS", "1")
    ameesh.script({"fail": "503 upstream unavailable"})
    ameesh.add("bob")
    ameesh("send", "bob", "one")
    assert ameesh("run", ok=False).exit_code == 4
    (said,) = [i["text"] for i in ameesh.json("thread", "bob") if i["kind"] == "push"]
    assert "not an apprise URL: not-a-service://x" in said
