"""The Gateway serves the Dashboard (no browser needed here): the files and their headers, the page
weight, the refusal of cross-origin WebSockets, and `anyy dashboard` with a one-time code in the fragment
(D5: the token never on a browser's command line)."""

from __future__ import annotations

import http.client
import json
import re
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from playwright.sync_api import expect
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

from anyy.cli.main import main
from tests.dashboard.conftest import Dashboard
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


def _exchange(url: str, code: str, origin: str | None = None) -> tuple[int, dict[str, str]]:
    headers = {"Origin": origin} if origin else {}
    request = urllib.request.Request(f"{url}/auth/exchange", data=code.encode(), headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=10) as reply:
            return reply.status, json.loads(reply.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_d5_anyy_dashboard_starts_the_gateway_and_hands_the_browser_a_one_time_code(
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
        printed = result.stdout.strip()
        match = re.fullmatch(re.escape(f"{address.url}/#code=") + r"([\w-]+)&session=ses_1", printed)
        assert match is not None, printed
        assert address.token not in printed

        # It runs now: nothing more is started, and the browser's command line holds a code, never the token.
        opened: list[str] = []

        def fake_open(url: str) -> bool:
            opened.append(url)
            return True

        monkeypatch.setattr("webbrowser.open", fake_open)
        result = runner.invoke(main, ["dashboard"])
        assert result.exit_code == 0, result.output
        assert "Started" not in result.stderr
        assert len(opened) == 1
        assert opened[0].startswith(f"{address.url}/#code=")
        assert address.token not in opened[0]
        assert address.token not in result.stdout
        code = opened[0].split("#code=", 1)[1]
        # A foreign page may not trade it; the Dashboard's own page trades it once, then it is spent.
        assert _exchange(address.url, code, origin="http://evil.example")[0] == 403
        own = address.url
        assert _exchange(address.url, code, origin=own) == (200, {"token": address.token})
        status, body = _exchange(address.url, code, origin=own)
        assert status == 401
        assert "run `anyy dashboard` again" in body["error"]
        assert _exchange(address.url, match.group(1), origin=own)[0] == 200  # the printed one is still unused
        with urllib.request.urlopen(f"{address.url}/", timeout=10) as page:
            assert b"<title>" in page.read()
    finally:
        stopped = runner.invoke(main, ["gateway", "stop"])
        assert stopped.exit_code == 0, stopped.output


def test_g5_a_code_is_traded_only_with_the_gateways_own_origin(live: LiveGateway) -> None:
    """Another local user who read a code from a command line (``ps``) cannot trade it: a request without
    an Origin, or with another one, is refused and the code stays usable by the Dashboard's page."""
    url = f"http://127.0.0.1:{live.port}"
    code = live.call("dashboard.code")["code"]
    for origin in (None, "http://evil.example", f"http://127.0.0.1:{live.port + 1}", "null"):
        status, body = _exchange(url, code, origin=origin)
        assert status == 403, origin
        assert "Origin" in body["error"]
        assert "token" not in body
    assert _exchange(url, code, origin=f"http://localhost:{live.port}") == (200, {"token": live.token})


def test_d5_the_page_trades_the_code_for_the_token_and_forgets_it(dashboard: Dashboard) -> None:
    live = dashboard.live
    code = live.call("dashboard.code")["code"]
    page = dashboard.page
    page.goto(f"{dashboard.base}#code={code}")
    expect(page.locator("body")).to_have_attribute("data-ready", "true")
    assert "code=" not in page.url
    assert page.evaluate("sessionStorage.getItem('anyy.token')") == live.token
    # The same code in another tab opens nothing: it was spent.
    other = dashboard.context.browser.new_context() if dashboard.context.browser else None
    assert other is not None
    try:
        again = other.new_page()
        again.goto(f"{dashboard.base}#code={code}")
        expect(again.locator("#banner")).to_contain_text("run `anyy dashboard` again")
    finally:
        other.close()
