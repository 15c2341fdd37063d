"""U2: a failed turn shows its error with Retry, live and after a reload (the runtime's durable notice),
on a phone (390x844) and on a desktop (1280x800); Retry sends the failed message again from just before
it. The model is scripted (its errors included); nothing sleeps."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, ViewportSize, expect

from anyy.providers.base import ProviderError
from tests.dashboard.conftest import Dashboard
from tests.dashboard.test_conversation import open_new_session, send_from_page
from tests.gateway.live import LiveGateway

SIZES: dict[str, ViewportSize] = {"phone": {"width": 390, "height": 844}, "desktop": {"width": 1280, "height": 800}}


@pytest.fixture(params=sorted(SIZES))
def sized(request: pytest.FixtureRequest, browser: Browser, live: LiveGateway) -> Iterator[Dashboard]:
    board = Dashboard(browser, live)
    board.context.close()
    phone = request.param == "phone"
    board.context = browser.new_context(viewport=SIZES[request.param], is_mobile=phone, has_touch=phone)
    board.page = board.context.new_page()
    board.page.on("console", board._console)
    board.page.on("pageerror", lambda error: board.errors.append(f"uncaught: {error}"))
    try:
        yield board
        assert board.errors == [], f"the page logged console errors: {board.errors}"
    finally:
        board.close()


def test_u2_a_failed_turn_shows_its_error_and_retry_live_after_a_reload_and_retry_answers(sized: Dashboard) -> None:
    live = sized.live
    page, session_id = open_new_session(sized)
    live.model.enqueue(ProviderError("fatal", "the key was refused"))
    send_from_page(page, "hello")
    failed = page.locator("#entries .failed-turn")
    expect(failed).to_contain_text("The answer failed: the key was refused")
    retry = failed.get_by_role("button", name="Retry")
    expect(retry).to_be_visible()

    # A reload (or another device later) shows the same: the error and Retry come from the history.
    page.reload()
    expect(page.locator("body")).to_have_attribute("data-ready", "true")
    expect(failed).to_contain_text("The answer failed: the key was refused")
    expect(retry).to_be_visible()
    box, viewport = retry.bounding_box(), page.viewport_size
    assert box is not None
    assert viewport is not None
    assert box["x"] + box["width"] <= viewport["width"]  # reachable without scrolling sideways, on a phone too
    sized.screenshot(f"failed-turn-{viewport['width']}")

    live.model.enqueue("It works now.")
    retry.click()
    expect(page.locator("#entries .kind-assistant")).to_have_text(["It works now."])
    expect(page.locator("#entries .kind-user")).to_have_text(["hello"])  # once: the failed attempt is off the path
    expect(failed).to_have_count(0)
    history = live.call("session.history", {"session_id": session_id})["items"]
    assert [e["kind"] for e in reversed(history)] == ["user", "assistant"]
    tree = live.call("session.tree", {"session_id": session_id})
    assert sum(node["kind"] == "notice" for node in tree["nodes"]) == 1  # the failure stays in the tree


def test_u2_retry_is_offered_only_while_the_failure_ends_the_conversation(dashboard: Dashboard) -> None:
    live = dashboard.live
    page, _ = open_new_session(dashboard)
    live.model.enqueue(ProviderError("fatal", "the key was refused"))
    send_from_page(page, "hello")
    failed = page.locator("#entries .failed-turn")
    expect(failed.get_by_role("button", name="Retry")).to_be_visible()
    live.model.enqueue("Fine.")
    send_from_page(page, "something else")
    expect(page.locator("#entries .kind-assistant")).to_have_text(["Fine."])
    expect(failed).to_contain_text("The answer failed: the key was refused")  # still told
    expect(failed.get_by_role("button", name="Retry")).to_be_hidden()  # but no longer offered
