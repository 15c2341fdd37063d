"""Helpers for Pilot tests: open the TUI on a live Gateway, wait on the app's state (never on sleeps)."""

from __future__ import annotations

from typing import Any

from anyy.profiles import get_profile
from anyy.profiles.gateway_address import read_address
from anyy.tui.app import AnyyApp
from tests.cli.live import LiveGateway

TIMEOUT = 30.0


def make_app(live: LiveGateway, **options: Any) -> AnyyApp:
    options.setdefault("locate", lambda: read_address(get_profile(live.home, live.profile)))
    return AnyyApp(live.address, **options)


async def opened(app: AnyyApp) -> None:
    await app.wait_until(lambda: bool(app.session) and app.status.state != "connecting", TIMEOUT)


async def type_text(pilot: Any, text: str) -> None:
    """Type ``text`` into the focused editor, key by key (a newline is Shift+Enter)."""
    keys = ["shift+enter" if ch == "\n" else "space" if ch == " " else ch for ch in text]
    await pilot.press(*keys)


def notices(app: AnyyApp) -> str:
    return "\n".join(app.notices)
