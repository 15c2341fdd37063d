"""B1, Q2 (and G2): several tabs on one session stay in step through the Gateway's events — what one
sends streams and is recorded in the other; a change to the queue in one shows in the other."""

from __future__ import annotations

from playwright.sync_api import Page, expect

from anyy.domain.model_io import TextDelta
from anyy.providers.gates import Gate
from tests.dashboard.conftest import Dashboard
from tests.dashboard.test_conversation import held, send_from_page
from tests.gateway.live import wait_gate


def two_tabs(dashboard: Dashboard, other_tab: Dashboard) -> tuple[Page, Page, str]:
    session = dashboard.live.call("session.create", {"title": "shared"})
    pages = []
    for board in (dashboard, other_tab):
        page = board.open(f"session={session['id']}")
        expect(page.locator("#title")).to_have_text("shared")
        pages.append(page)
    return pages[0], pages[1], session["id"]


def test_b1_q2_a_message_sent_in_one_tab_streams_and_is_recorded_in_the_other(
    dashboard: Dashboard, other_tab: Dashboard
) -> None:
    live = dashboard.live
    first, second, _ = two_tabs(dashboard, other_tab)
    gate = Gate("mid-answer")
    live.model.enqueue([TextDelta(text="Half"), gate, TextDelta(text=" and whole.")])
    send_from_page(first, "from the first tab")
    wait_gate(gate)
    for page in (first, second):
        expect(page.locator("#entries .kind-user")).to_have_text(["from the first tab"])
        expect(page.locator("#live")).to_have_text("Half")  # streamed to both
        expect(page.locator("body")).to_have_class("busy")
    gate.open()
    for page in (first, second):
        expect(page.locator("#entries .kind-assistant")).to_have_text(["Half and whole."])  # recorded
        expect(page.locator("#live")).to_be_hidden()
        expect(page.locator("body")).not_to_have_class("busy")

    live.model.enqueue("second answer")
    send_from_page(second, "now from the second")  # and the other way round
    for page in (first, second):
        expect(page.locator("#entries .kind-user")).to_have_text(["from the first tab", "now from the second"])
        expect(page.locator("#entries .kind-assistant")).to_have_text(["Half and whole.", "second answer"])


def test_q2_a_queue_change_in_one_tab_shows_in_the_other(dashboard: Dashboard, other_tab: Dashboard) -> None:
    live = dashboard.live
    first, second, _ = two_tabs(dashboard, other_tab)
    gate = held(live, first, "busy work")
    expect(second.locator("#live")).to_have_text("Work")
    send_from_page(second, "later")  # the second tab sees the work: Send adds a follow-up
    for page in (first, second):
        expect(page.locator("#queue li .text")).to_have_text(["later"])
        expect(page.locator("#queue li .badge")).to_have_text(["follow-up"])

    first.locator("#queue li").get_by_role("button", name="Steer").click()
    expect(second.locator("#queue li .badge")).to_have_text(["steering"])

    second.locator("#queue li").get_by_role("button", name="Delete").click()
    expect(first.locator("#queue li")).to_have_count(0)
    expect(second.locator("#queue li")).to_have_count(0)
    gate.open()
    for page in (first, second):
        expect(page.locator("#entries .kind-assistant")).to_have_text(["Worked."])
