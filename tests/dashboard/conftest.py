"""Browser tests of the Dashboard: Debian's Chromium (/usr/bin/chromium, installed by
scripts/setup-browser; Playwright never downloads a browser) against a real Gateway on loopback with the
scripted offline model (tests/gateway/live.py). One browser per module, one Gateway and one page per test.

Every page records its console errors and uncaught exceptions; a test fails if there was any. With
ANYY_DASHBOARD_SCREENSHOTS=DIR set, tests that show a main view save it there (docs/img/ is made so).
"""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, ConsoleMessage, Error, Page, expect, sync_playwright

from anyy.domain.entries import EntryKind, NewEntry
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
        pytest.skip(f"{CHROMIUM} is missing and scripts/setup-browser could not install Debian's chromium")


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
