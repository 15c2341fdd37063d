"""U8 in the Dashboard: after a Gateway restart (a new process, a new access token, the same port) an open tab
comes back by itself, with its draft and its conversation, through the browser key the code exchange left
(an HttpOnly cookie; the profile keeps its digest); a reload after the restart works too. ``anyy dashboard
--revoke`` forgets the keys: the tab then says to open the Dashboard again. Real Gateways on one loopback
port, real Chromium."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect

from anyy.profiles.browser_keys import keys_path
from tests.dashboard.conftest import Dashboard
from tests.fakes.gateways import LiveGateway, run


@pytest.fixture
def first(tmp_path: Path) -> Iterator[LiveGateway]:
    gateway = LiveGateway(tmp_path).start()
    yield gateway
    gateway.close()


def _open_with_code(board: Dashboard, session_id: str) -> Page:
    """As `anyy dashboard` opens it: a one-time code in the fragment, traded by the page."""
    code = board.live.call("dashboard.code")["code"]
    board.page.goto(f"{board.base}#code={code}&session={session_id}")
    expect(board.page.locator("body")).to_have_attribute("data-ready", "true")
    return board.page


def _restart(live: LiveGateway, tmp_path: Path, token: str) -> LiveGateway:
    port = live.port
    live.close()
    return LiveGateway(tmp_path, port=port, token=token).start()


def test_u8_a_tab_comes_back_after_a_gateway_restart_with_its_draft(
    browser: Browser, first: LiveGateway, tmp_path: Path
) -> None:
    board = Dashboard(browser, first)
    gateways = [first]
    try:
        session = first.call("session.create", {"title": "kept"})
        page = _open_with_code(board, session["id"])
        stored = json.loads(keys_path(first.profile).read_text())["keys"]
        assert len(stored) == 1
        assert len(stored[0]["hash"]) == 64  # a digest, never the key itself
        cookies = board.context.cookies()
        assert [(c["httpOnly"], c["sameSite"], c["path"]) for c in cookies] == [(True, "Strict", "/auth/refresh")]
        assert cookies[0]["value"] not in keys_path(first.profile).read_text()
        page.get_by_label("Message").fill("my draft")

        port = first.port
        first.close()
        expect(page.locator("#banner")).to_have_text("Reconnecting to the Gateway…")
        second = LiveGateway(tmp_path, port=port, token="another-token-" + "y" * 20).start()
        gateways.append(second)
        board.live = second
        expect(page.locator("#banner")).to_be_hidden()
        expect(page.locator("body")).not_to_have_class("offline")
        expect(page.get_by_label("Message")).to_have_value("my draft")
        expect(page.locator("#title")).to_have_text("kept")
        second.model.enqueue("Back.")
        page.get_by_role("button", name="Send").click()
        expect(page.locator("#entries .kind-assistant")).to_have_text(["Back."])

        # A reload after the restart (the tab's token is the old one) comes back too.
        third = _restart(second, tmp_path, "third-token-" + "z" * 20)
        gateways.append(third)
        board.live = third
        page.reload()
        expect(page.locator("body")).to_have_attribute("data-ready", "true")
        expect(page.locator("#entries .kind-assistant")).to_have_text(["Back."])
        # Chromium itself logs each attempt made while the Gateway was down; the page's own code logged nothing.
        assert [e for e in board.errors if "ERR_CONNECTION_REFUSED" not in e] == [], board.errors
    finally:
        board.close()
        for gateway in gateways:
            gateway.close()


def test_u8_revoked_browsers_do_not_come_back(browser: Browser, first: LiveGateway, tmp_path: Path) -> None:
    board = Dashboard(browser, first)
    gateways = [first]
    try:
        session = first.call("session.create", {"title": "kept"})
        page = _open_with_code(board, session["id"])
        done = run(first.home, "dashboard", "--revoke")
        assert done.returncode == 0, done.stderr
        assert "Forgot 1 browser key" in done.stdout
        second = _restart(first, tmp_path, "another-token-" + "y" * 20)
        gateways.append(second)
        expect(page.locator("#banner")).to_contain_text("Not reconnected: this browser is not known to the Gateway")
        expect(page.locator("#banner")).to_contain_text("anyy dashboard")
    finally:
        board.close()
        for gateway in gateways:
            gateway.close()
