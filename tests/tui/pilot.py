"""Helpers for Pilot tests: open the TUI on a live Gateway, wait on the app's state.

:func:`until` waits for a condition on the app, looking at it every 10 ms (the app's event loop runs in
between): a wait never assumes how long anything takes, only its timeout bounds it. The app itself carries
nothing for tests (no hooks, no change counters)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from anyy.client.gateway import address_locator
from anyy.profiles.profile import get_profile
from anyy.tui.app import AnyyApp
from anyy.tui.conversation import NoticeLine
from tests.cli.live import GatewayProcess

TIMEOUT = 30.0
LOOK_EVERY = 0.01  # seconds between two looks at the condition while nothing else wakes the waiter


def make_app(live: GatewayProcess, **options: Any) -> AnyyApp:
    options.setdefault("locate", address_locator(live.profile, live.home))
    options.setdefault("profile", get_profile(live.home, live.profile))
    return AnyyApp(live.address, **options)


def new_session(live: GatewayProcess, **settings: str) -> str:
    """A session made through the Gateway (with these ``session.settings``), for a test that needs one before
    the TUI's first message (the TUI itself makes its session on the first send)."""
    with live.client() as client:
        session_id: str = client.call("session.create", {})["id"]
        if settings:
            client.call("session.settings", {"session_id": session_id, **settings})
    return session_id


async def until(app: AnyyApp, condition: Callable[[], bool], timeout: float = TIMEOUT) -> None:
    """Return once ``condition()`` holds; TimeoutError (naming it) after ``timeout`` seconds."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not condition():
        if loop.time() >= deadline:
            raise TimeoutError(f"the TUI did not reach the expected state within {timeout:g} s")
        await asyncio.sleep(LOOK_EVERY)


async def click_on(pilot: Any, widget: Any, timeout: float = TIMEOUT) -> None:
    """Click ``widget`` once the click lands on it. Pilot clicks where the widget was last laid out: on a
    loaded machine a refresh still pending (a stream below it growing, the view following the bottom) can
    move it, and the click then reaches whatever is there now; that click is not counted, and the widget is
    clicked again once the screen is refreshed."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        await pilot.pause()
        if await pilot.click(widget):
            return
        if loop.time() >= deadline:
            raise TimeoutError(f"a click on {widget!r} did not land on it within {timeout:g} s")


async def opened(app: AnyyApp) -> None:
    await until(app, lambda: bool(app.state.session) and app.status.state != "connecting")


async def type_text(pilot: Any, text: str) -> None:
    """Type ``text`` into the focused editor, key by key (a newline is Shift+Enter)."""
    keys = ["shift+enter" if ch == "\n" else "space" if ch == " " else ch for ch in text]
    await pilot.press(*keys)


def notices(app: AnyyApp) -> str:
    """The notice lines the conversation shows, in order."""
    return "\n".join(str(line.content) for line in app.conversation.query(NoticeLine))


async def start_retry_wait(app: AnyyApp, pilot: Any, live: GatewayProcess) -> str:
    """In an app opened on a session of the Gateway's broken provider (``BROKEN_PROVIDER``: ``make_app(live,
    session_id=new_session(live, provider="broken", model="m"))``), send a prompt with Enter; return the
    execution once it waits for an automatic retry."""
    await type_text(pilot, "hello")
    await pilot.press("enter")
    # The execution's state says retry_wait a moment before the retry_wait event starts the countdown.
    await until(app, lambda: app.state.retrying is not None and app.retry.execution is not None)
    assert app.state.retrying is not None
    return app.state.retrying
