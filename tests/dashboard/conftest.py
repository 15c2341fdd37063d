"""Browser tests of the Dashboard: Debian's Chromium (/usr/bin/chromium, installed by
scripts/setup-browser; Playwright never downloads a browser) against a real Gateway on loopback with the
scripted offline model (tests/gateway/live.py). One browser per module, one Gateway and one page per test.

Every page records its console errors and uncaught exceptions; a test fails if there was any. With
ANYY_DASHBOARD_SCREENSHOTS=DIR set, tests that show a main view save it there (docs/img/ is made so).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, ConsoleMessage, Error, Page, WebSocketRoute, expect, sync_playwright

from anyy.domain.entries import EntryKind, NewEntry
from tests.fakes.prerequisites import missing
from tests.gateway.live import LiveGateway

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
SETUP_BROWSER = Path(__file__).resolve().parents[2] / "scripts" / "setup-browser"
expect.set_options(timeout=10_000)


def _ensure_chromium() -> None:
    if not CHROMIUM.exists() and SETUP_BROWSER.exists():
        subprocess.run(["bash", str(SETUP_BROWSER)], check=False, timeout=600)
    if not CHROMIUM.exists():
        missing("browser", f"{CHROMIUM} is missing and scripts/setup-browser could not install Debian's chromium")


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    _ensure_chromium()
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_FLAGS)
        try:
            yield browser
        finally:
            browser.close()


@pytest.fixture
def live(tmp_path: Path) -> Iterator[LiveGateway]:
    with LiveGateway(tmp_path) as gateway:
        yield gateway


class Dashboard:
    """A page on the Dashboard of ``live``, and the errors its console reported."""

    def __init__(self, browser: Browser, live: LiveGateway) -> None:
        self.live = live
        self.context = browser.new_context(viewport={"width": 1280, "height": 760})
        self.page: Page = self.context.new_page()
        self.errors: list[str] = []
        self.page.on("console", self._console)
        self.page.on("pageerror", lambda error: self.errors.append(f"uncaught: {error}"))

    def _console(self, message: ConsoleMessage) -> None:
        if message.type == "error":
            self.errors.append(message.text)

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.live.port}/"

    def open(self, fragment: str = "") -> Page:
        """Load the Dashboard with the token in the fragment (as `anyy dashboard` does)."""
        extra = f"&{fragment}" if fragment else ""
        self.page.goto(f"{self.base}#token={self.live.token}{extra}")
        expect(self.page.locator("body")).to_have_attribute("data-ready", "true")
        return self.page

    def screenshot(self, name: str) -> None:
        folder = os.environ.get("ANYY_DASHBOARD_SCREENSHOTS")
        if folder:
            Path(folder).mkdir(parents=True, exist_ok=True)
            self.page.screenshot(path=str(Path(folder) / f"{name}.png"))

    def close(self) -> None:
        with contextlib.suppress(Error):
            self.context.close()


@pytest.fixture
def dashboard(browser: Browser, live: LiveGateway) -> Iterator[Dashboard]:
    board = Dashboard(browser, live)
    try:
        yield board
        assert board.errors == [], f"the page logged console errors: {board.errors}"
    finally:
        board.close()


@pytest.fixture
def other_tab(browser: Browser, live: LiveGateway) -> Iterator[Dashboard]:
    """A second page (its own browser context, as another tab or window) on the same Gateway."""
    board = Dashboard(browser, live)
    try:
        yield board
        assert board.errors == [], f"the other page logged console errors: {board.errors}"
    finally:
        board.close()


def seed(live: LiveGateway, title: str, texts: list[str], *, kind: str = "chat") -> str:
    """A session with these user/assistant messages, written straight into the store."""
    assert live.gateway is not None
    session_id: str = live.call("session.create", {"title": title, "kind": kind})["id"]
    entries = [
        NewEntry(kind=EntryKind.USER if i % 2 == 0 else EntryKind.ASSISTANT, text=text) for i, text in enumerate(texts)
    ]
    live.run(live.gateway.store(lambda s: s.append_entries(session_id, entries)))
    return session_id


class EventValve:
    """The page's WebSocket to the Gateway, routed through the test (Playwright's ``route_web_socket``,
    installed before the page loads). Frames pass unchanged, except that the Gateway's *events* can be
    held back (kept in order) and released: the page then acts on what it last showed, as a page behind
    a slow connection would, while its calls and their replies go through. The frames the page sent are
    recorded (:meth:`sent`).

    Routed frames travel only while the test is inside a Playwright call (the sync API dispatches them
    then): wait for what the page shows with ``expect`` before blocking on anything else.
    """

    def __init__(self, page: Page) -> None:
        self.holding = False
        self.held: list[tuple[WebSocketRoute, str | bytes]] = []  # (the page's side, a frame for it)
        self.from_page: list[dict[str, Any]] = []
        page.route_web_socket(re.compile(r"/ws(\?|$)"), self._route)

    def _route(self, page_side: WebSocketRoute) -> None:
        server = page_side.connect_to_server()

        def to_gateway(message: str | bytes) -> None:
            with contextlib.suppress(ValueError):
                frame = json.loads(message)
                if isinstance(frame, dict):
                    self.from_page.append(frame)
            server.send(message)

        def to_page(message: str | bytes) -> None:
            if self.holding and _is_event(message):
                self.held.append((page_side, message))
            else:
                page_side.send(message)

        page_side.on_message(to_gateway)
        server.on_message(to_page)

    def hold(self) -> None:
        """From now on, keep the Gateway's events from the page."""
        self.holding = True

    def release(self) -> None:
        """Deliver the held events, in order, and let the next ones through."""
        self.holding = False
        held, self.held = self.held, []
        for page_side, message in held:
            page_side.send(message)

    def sent(self, method: str) -> list[dict[str, Any]]:
        """The parameters of each call of ``method`` the page made."""
        return [frame.get("params") or {} for frame in self.from_page if frame.get("method") == method]


def _is_event(message: str | bytes) -> bool:
    try:
        frame = json.loads(message)
    except ValueError:
        return False
    return isinstance(frame, dict) and frame.get("method") == "event" and "id" not in frame
