"""U6 in the Dashboard: items left waiting after a stop say so and offer Continue (they start) and Clear
(they go), as the TUI's /continue and /clear; nothing is offered while the agent works."""

from __future__ import annotations

from playwright.sync_api import expect

from tests.dashboard.conftest import Dashboard
from tests.dashboard.test_conversation import held, open_new_session, queue_of, send_from_page


def _stop_with_leftovers(board: Dashboard, session_id: str, *texts: str) -> None:
    page = board.page
    held(board.live, page, "first")
    for text in texts:
        send_from_page(page, text)
    expect(page.locator("#queue li.queued .text")).to_have_text(list(texts))
    expect(page.locator("#queue li.leftover")).to_have_count(0)  # the agent works: nothing is left over yet
    page.get_by_role("button", name="Stop").click()
    expect(page.locator("#status")).to_have_text("Stopped")


def test_u6_leftover_items_after_a_stop_offer_continue(dashboard: Dashboard) -> None:
    live = dashboard.live
    page, session_id = open_new_session(dashboard)
    _stop_with_leftovers(dashboard, session_id, "later")
    leftover = page.locator("#queue li.leftover")
    expect(leftover).to_contain_text("1 item left waiting: Continue starts it, Clear removes it.")
    live.model.enqueue("Later done.")
    leftover.get_by_role("button", name="Continue").click()
    expect(page.locator("#entries .kind-assistant").last).to_have_text("Later done.")
    expect(page.locator("#queue li")).to_have_count(0)
    assert queue_of(live, session_id) == []


def test_u6_leftover_items_after_a_stop_offer_clear_and_survive_a_reload(dashboard: Dashboard) -> None:
    live = dashboard.live
    page, session_id = open_new_session(dashboard)
    _stop_with_leftovers(dashboard, session_id, "later", "and then")
    page.reload()
    expect(page.locator("body")).to_have_attribute("data-ready", "true")
    leftover = page.locator("#queue li.leftover")
    expect(leftover).to_contain_text("2 items left waiting")
    leftover.get_by_role("button", name="Clear").click()
    expect(page.locator("#queue li")).to_have_count(0)
    assert queue_of(live, session_id) == []
    assert live.model.pending == 0  # nothing started
