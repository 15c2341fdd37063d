"""``web_fetch`` (M6) against a loopback HTTP server started by the test; nothing leaves the machine."""

from __future__ import annotations

import http.client
import threading
import urllib.parse
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import msgspec
import pytest

from anyy.tools import web_fetch
from anyy.tools.base import ToolContext
from anyy.tools.policy import ToolPolicy
from anyy.tools.web_fetch import WebFetchTool

pytestmark = pytest.mark.anyio

PAGE = b"""<!doctype html><html><head><title>The  Title</title><style>body{color:red}</style></head>
<body><script>var hidden = 1;</script><h1>Heading</h1><p>First &amp; <b>bold</b> paragraph.</p>
<ul><li>one</li><li>two</li></ul></body></html>"""


class _Handler(BaseHTTPRequestHandler):
    release: threading.Event  # set by the fixture: lets the stalled handler finish at teardown

    def do_GET(self) -> None:
        routes = {
            "/page": (200, "text/html; charset=utf-8", PAGE),
            "/plain": (200, "text/plain; charset=latin-1", "café\n".encode("latin-1")),
            "/json": (200, "application/json", b'{"a": 1}'),
            "/big": (200, "text/plain", b"0123456789" * 1000),
            "/image": (200, "image/png", b"\x89PNG\r\n"),
        }
        if self.path == "/stall":
            self.release.wait(30)
            return
        if self.path == "/moved":
            self._answer(302, "text/plain", b"", location="/plain")
        elif self.path == "/to-ftp":
            self._answer(302, "text/plain", b"", location="ftp://127.0.0.1/file")
        elif self.path in routes:
            self._answer(*routes[self.path])
        else:
            self._answer(404, "text/plain", b"no such page")

    def _answer(self, status: int, content_type: str, body: bytes, location: str | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        if location:
            self.send_header("Location", location)
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def context(context: ToolContext) -> ToolContext:
    """The test server is on loopback, which web_fetch reaches only when the profile allows it (N3)."""
    return msgspec.structs.replace(context, policy=ToolPolicy(allow_private_network=True))


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    for name in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(name, raising=False)  # loopback only, never through a proxy
    release = threading.Event()
    handler = type("Handler", (_Handler,), {"release": release})
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    release.set()
    httpd.shutdown()
    httpd.server_close()
    thread.join(10)


async def fetch(url: str, context: ToolContext) -> tuple[str, bool]:
    outcome = await WebFetchTool().run({"url": url}, context)
    return outcome.text, outcome.is_error


async def test_m6_web_fetch_returns_the_readable_text_of_a_page(server: str, context: ToolContext) -> None:
    text, failed = await fetch(f"{server}/page", context)
    assert not failed
    assert text.startswith(f"[{server}/page (text/html, ")
    body = text.split("\n\n", 1)[1]
    assert body == "# The Title\n\nHeading\n\nFirst & bold paragraph.\n\n- one\n\n- two"
    assert "hidden" not in text
    assert "color" not in text


async def test_m6_web_fetch_returns_other_text_as_it_is(server: str, context: ToolContext) -> None:
    text, failed = await fetch(f"{server}/plain", context)
    assert not failed
    assert text.endswith("\n\ncafé\n")  # decoded with the charset the server declared
    json_text, _ = await fetch(f"{server}/json", context)
    assert json_text.endswith('{"a": 1}')
    moved, _ = await fetch(f"{server}/moved", context)
    assert moved.startswith(f"[{server}/plain ")  # the final address after the redirect


async def test_m6_web_fetch_caps_bytes_read_and_output(
    server: str, context: ToolContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(web_fetch, "MAX_BYTES", 2500)
    text, failed = await fetch(f"{server}/big", context)
    assert not failed
    assert "2500 bytes, only the first 2500 bytes were read" in text
    capped, _ = await fetch(f"{server}/big", msgspec.structs.replace(context, output_cap=300))
    assert len(capped) < 400
    assert "characters cut from the middle of the output" in capped


async def test_m6_web_fetch_errors_say_what_went_wrong(server: str, context: ToolContext) -> None:
    cases = {
        f"{server}/missing": "answered HTTP 404",
        f"{server}/image": "is image/png, not text",
        f"{server}/to-ftp": "redirect to a non-http(s) URL refused",
        "file:///etc/passwd": "takes an absolute http:// or https:// URL",
        "ftp://127.0.0.1/x": "takes an absolute http:// or https:// URL",
        "/relative/path": "takes an absolute http:// or https:// URL",
        "http://127.0.0.1:1/": "cannot fetch",
    }
    for url, message in cases.items():
        text, failed = await fetch(url, context)
        assert failed, url
        assert message in text, (url, text)


async def test_m6_web_fetch_gives_up_after_its_timeout(server: str, context: ToolContext) -> None:
    text, failed = await fetch(f"{server}/stall", msgspec.structs.replace(context, timeout=0.5))
    assert failed
    assert "timed out after 0.5 s" in text


class _ProxyHandler(BaseHTTPRequestHandler):
    """A forwarding proxy that writes down what it was asked: absolute-form GETs are relayed; a CONNECT is
    accepted and the tunnel closed at once (no TLS server is needed to see where it was meant to lead)."""

    seen: list[tuple[str, str]]  # (request line, Host header)

    def do_GET(self) -> None:
        self.seen.append((self.requestline, self.headers.get("Host", "")))
        target = urllib.parse.urlsplit(self.path)
        upstream = http.client.HTTPConnection(target.hostname or "", target.port or 80, timeout=10)
        upstream.request("GET", target.path, headers={"Host": self.headers.get("Host", "")})
        answer = upstream.getresponse()
        body = answer.read()
        self.send_response(answer.status)
        self.send_header("Content-Type", answer.getheader("Content-Type") or "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        upstream.close()

    def do_CONNECT(self) -> None:
        self.seen.append((self.requestline, self.headers.get("Host", "")))
        self.send_response(200, "Connection established")
        self.end_headers()
        self.close_connection = True

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def proxy(server: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[list[tuple[str, str]]]:
    """A loopback proxy named by http_proxy / https_proxy, as a Gateway behind a company proxy sees it."""
    seen: list[tuple[str, str]] = []
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), type("Proxy", (_ProxyHandler,), {"seen": seen}))
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    address = f"http://127.0.0.1:{httpd.server_address[1]}"
    monkeypatch.setenv("http_proxy", address)
    monkeypatch.setenv("https_proxy", address)
    for name in ("no_proxy", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
    yield seen
    httpd.shutdown()
    httpd.server_close()
    thread.join(10)


async def test_m6_web_fetch_goes_through_the_environments_proxy_to_the_checked_address(
    server: str, proxy: list[tuple[str, str]], context: ToolContext
) -> None:
    port = urllib.parse.urlsplit(server).port
    text, failed = await fetch(f"http://localhost:{port}/plain", context)
    assert not failed, text
    assert text.endswith("\n\ncafé\n")
    # The proxy was asked for the address checked here, never for the name (it would resolve it again).
    assert proxy == [(f"GET http://127.0.0.1:{port}/plain HTTP/1.1", f"localhost:{port}")]

    proxy.clear()
    text, failed = await fetch(f"https://localhost:{port}/plain", context)
    assert failed  # the test proxy closes every tunnel: no TLS server behind it
    assert proxy == [(f"CONNECT 127.0.0.1:{port} HTTP/1.1", f"127.0.0.1:{port}")]


async def test_m6_web_fetch_honours_no_proxy(
    server: str, proxy: list[tuple[str, str]], context: ToolContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("no_proxy", "localhost,127.0.0.1")
    text, failed = await fetch(f"{server}/plain", context)
    assert not failed, text
    assert proxy == []


async def test_n3_a_proxy_opens_no_door_the_network_policy_closes(
    server: str, proxy: list[tuple[str, str]], context: ToolContext
) -> None:
    closed = msgspec.structs.replace(context, policy=ToolPolicy(allow_private_network=False))
    text, failed = await fetch(f"{server}/plain", closed)
    assert failed
    assert "loopback" in text
    assert proxy == []  # refused before the proxy was asked anything
