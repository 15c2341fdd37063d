"""Fixtures for the security tests: a working directory, a folder outside it, a loopback server that
counts the requests that reached it (each one an escape)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from anyy.tools.base import ToolContext


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    path = tmp_path / "work"
    path.mkdir()
    return path


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    path = tmp_path / "outside"
    path.mkdir()
    (path / "secret.txt").write_text("secret\n")
    return path


@pytest.fixture
def context(workdir: Path, tmp_path: Path) -> ToolContext:
    return ToolContext(workdir=workdir, memory_dir=tmp_path / "memory", session_id="ses_security", timeout=20)


class Internal:
    """A loopback HTTP server standing for the Gateway or a cloud metadata service."""

    def __init__(self) -> None:
        self.hits: list[str] = []
        self.release = threading.Event()
        self.port = 0
        self.redirect_to = ""


@pytest.fixture
def internal(monkeypatch: pytest.MonkeyPatch) -> Iterator[Internal]:
    for name in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(name, raising=False)
    state = Internal()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path == "/redirect":
                self.send_response(302)
                self.send_header("Location", state.redirect_to)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            if self.path == "/dribble":  # one byte at a time, forever, until the test ends
                self.send_response(200)
                self.send_header("Content-Type", "text/plain")
                self.send_header("Content-Length", "1000000")
                self.end_headers()
                while not state.release.wait(0.05):
                    try:
                        self.wfile.write(b"x")
                        self.wfile.flush()
                    except OSError:
                        return
                return
            state.hits.append(self.path)
            body = b"internal secret"
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    state.port = httpd.server_address[1]
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield state
    state.release.set()
    httpd.shutdown()
    httpd.server_close()
    thread.join(10)
