"""Y3: the Dashboard shows what each answer cost (under it, with its tokens) and what the open session
cost so far (in the header), from the costs the Gateway kept with each call; unpriced answers show no
price at all, never $0."""

from __future__ import annotations

from playwright.sync_api import expect

from anyy.domain.entries import Usage
from anyy.domain.model_io import TextDelta, UsageEvent
from anyy.domain.pricing import ModelPrice
from anyy.runtime.pricing import PriceBook
from tests.dashboard.conftest import Dashboard
from tests.dashboard.test_conversation import open_new_session, send_from_page


def test_y3_answer_costs_and_the_session_total_in_the_dashboard(dashboard: Dashboard) -> None:
    live = dashboard.live
    page, session_id = open_new_session(dashboard)
    answers = page.locator("#entries .kind-assistant")
    cost = page.locator("#cost")

    live.model.enqueue([TextDelta(text="Free."), UsageEvent(usage=Usage(input=1000, output=100))])
    send_from_page(page, "unpriced")
    expect(answers.nth(0)).to_have_attribute("data-usage", "↑1k ↓100")  # no price: none shown
    expect(cost).to_have_text("")

    # $2 per million input tokens, $10 per million output: 1,000,000 in and 100,000 out cost $3.
    assert live.gateway is not None
    live.gateway.deps.prices = PriceBook({"offline": ModelPrice(input=2, output=10)}, {})
    live.model.enqueue([TextDelta(text="Paid."), UsageEvent(usage=Usage(input=1_000_000, output=100_000))])
    send_from_page(page, "priced")
    expect(answers.nth(1)).to_have_attribute("data-usage", "↑1M ↓100k · $3.00")
    expect(cost).to_have_text("$3.00 + 1 unpriced")
    report = live.call("usage.report", {"by": "session", "session_id": session_id})
    assert report["total"]["cost"] == 3_000_000_000

    page.reload()  # opened later: from the history and usage.report
    expect(page.locator("body")).to_have_attribute("data-ready", "true")
    expect(answers.nth(1)).to_have_attribute("data-usage", "↑1M ↓100k · $3.00")
    expect(cost).to_have_text("$3.00 + 1 unpriced")
