"""The Gateway serves the Dashboard (no browser needed here): the files and their headers, the page
weight, the refusal of cross-origin WebSockets, and `anyy dashboard` with the token in the fragment."""

from __future__ import annotations

import http.client
import re
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

from anyy.cli.main import main
from tests.gateway.live import LiveGateway

MAX_PAGE_BYTES = 200 * 1024


@pytest.fixture
def live(tmp_path: Path) -> Iterator[LiveGateway]:
    with LiveGateway(tmp_path) as gateway:
        yield gateway


def get(live: LiveGateway, path: str) -> tuple[int, dict[str, str], bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", live.port, timeout=10)
    try:
        conn.request("GET", path)
        response = conn.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
    finally:
        conn.close()


def test_the_dashboard_is_served_at_the_root_with_a_strict_policy(live: LiveGateway) -> None:
    status, headers, body = get(live, "/")
    assert status == 200
    assert headers["content-type"].startswith("text/html")
    assert b'src="/dashboard/app.js"' in body
    assert "script-src 'self'" in headers["content-security-policy"]
    assert "frame-ancestors 'none'" in headers["content-security-policy"]
    assert headers["referrer-policy"] == "no-referrer"
    assert live.token.encode() not in body
    total = len(body)
    status, headers, app = get(live, "/dashboard/app.js")
    modules = sorted(set(re.findall(r'^import .* from "\./([a-z]+\.js)";$', app.decode(), re.MULTILINE)))
    assert modules, "app.js imports its modules"
    for name in modules:  # each is served, and preloaded by the page
        assert f'href="/dashboard/{name}"'.encode() in body
    for name, kind in [("app.js", "text/javascript"), ("style.css", "text/css")] + [
        (m, "text/javascript") for m in modules
    ]:
        status, headers, data = get(live, f"/dashboard/{name}")
        assert status == 200, name
        assert headers["content-type"].startswith(kind)
        assert "script-src 'self'" in headers["content-security-policy"]
        total += len(data)
    print(f"page weight: {total} bytes ({', '.join(['index.html', 'app.js', 'style.css', *modules])})")
    assert total <= MAX_PAGE_BYTES, f"the page weighs {total} bytes"
    assert get(live, "/dashboard/secret.txt")[0] == 404
    assert get(live, "/dashboard/..%2fapp.py")[0] == 404


def _ws_close_code(live: LiveGateway, origin: str | None) -> int | None:
    """None when the connection is served (gateway.status answers), else the close code."""
    headers = {"Origin": origin} if origin is not None else None
    try:
        with connect(f"{live.ws_url}?token={live.token}", additional_headers=headers, open_timeout=10) as ws:
            ws.send('{"jsonrpc": "2.0", "id": 1, "method": "gateway.status"}')
            assert '"profile"' in ws.recv(10)
    except ConnectionClosed as exc:
        return exc.rcvd.code if exc.rcvd is not None else -1
    return None


def test_cross_origin_websockets_are_refused(live: LiveGateway) -> None:
    assert _ws_close_code(live, "http://evil.example") == 4403
    assert _ws_close_code(live, f"http://evil.example:{live.port}") == 4403  # a rebound DNS name
    assert _ws_close_code(live, "null") == 4403
    assert _ws_close_code(live, f"http://127.0.0.1:{live.port + 1}") == 4403
    assert _ws_close_code(live, f"http://127.0.0.1:{live.port}") is None
    assert _ws_close_code(live, f"http://localhost:{live.port}") is None
    assert _ws_close_code(live, None) is None  # not a browser


def test_anyy_dashboard_starts_the_gateway_and_puts_the_token_in_the_fragment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from anyy.profiles import create_profile
    from anyy.profiles.gateway_address import read_address

    home = tmp_path / "home"
    profile = create_profile(home, "default")
    monkeypatch.setenv("ANYY_HOME", str(home))
    monkeypatch.delenv("ANYY_PROFILE", raising=False)
    runner = CliRunner()
    # No Gateway runs: one command starts it (and says so), as the TUI does, then gives the address.
    result = runner.invoke(main, ["dashboard", "--print-url", "--session", "ses_1"])
    try:
        assert result.exit_code == 0, result.output
        address = read_address(profile)
        assert address is not None
        assert "Started the Gateway of profile default" in result.stderr
        assert result.stdout.strip() == f"{address.url}/#token={address.token}&session=ses_1"

        # It runs now: nothing more is started, and the browser gets the token in the fragment only.
        opened: list[str] = []

        def fake_open(url: str) -> bool:
            opened.append(url)
            return True

        monkeypatch.setattr("webbrowser.open", fake_open)
        result = runner.invoke(main, ["dashboard"])
        assert result.exit_code == 0, result.output
        assert "Started" not in result.stderr
        assert opened == [f"{address.url}/#token={address.token}"]
        assert address.token not in result.stdout
        with urllib.request.urlopen(f"{address.url}/", timeout=10) as page:
            assert b"<title>" in page.read()
    finally:
        stopped = runner.invoke(main, ["gateway", "stop"])
        assert stopped.exit_code == 0, stopped.output
