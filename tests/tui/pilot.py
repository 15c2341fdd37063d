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


async def start_retry_wait(app: AnyyApp, pilot: Any, live: LiveGateway) -> str:
    """Switch the session to the Gateway's broken provider (``BROKEN_PROVIDER``), send a prompt with Enter;
    return the execution once it waits for an automatic retry."""
    with live.client() as client:
        client.call("session.settings", {"session_id": app.session_id, "provider": "broken", "model": "m"})
    await type_text(pilot, "hello")
    await pilot.press("enter")
    # The execution's state says retry_wait a moment before the retry_wait event starts the countdown.
    await app.wait_until(lambda: app.retry_waiting is not None and app.retry.execution is not None, TIMEOUT)
    assert app.retry_waiting is not None
    return app.retry_waiting
