"""The tokens each response used (its entry's data.usage) and how full the session's context is against
the compaction budget (R4: session.get's context_tokens and context_budget), updated as entries are
appended and shown again when the page is loaded later."""

from __future__ import annotations

import re

from playwright.sync_api import expect

from anyy.domain.entries import Usage
from anyy.domain.model_io import TextDelta, UsageEvent
from tests.dashboard.conftest import Dashboard
from tests.dashboard.test_conversation import open_new_session, send_from_page


def test_r4_usage_per_response_and_the_context_fill_follow_the_conversation(dashboard: Dashboard) -> None:
    live = dashboard.live
    page, session_id = open_new_session(dashboard)
    context = page.locator("#context")
    expect(context).to_have_text("context — / 100k")  # no response yet
    answers = page.locator("#entries .kind-assistant")

    live.model.enqueue([TextDelta(text="Counted."), UsageEvent(usage=Usage(input=1200, output=340, cache_read=2000))])
    send_from_page(page, "count")
    expect(answers).to_have_text(["Counted."])  # the usage is not part of the message's text…
    expect(answers.nth(0)).to_have_attribute("data-usage", "↑3.2k (2k cached) ↓340")
    shown = answers.nth(0).evaluate("li => getComputedStyle(li, '::after').content")
    assert shown == '"↑3.2k (2k cached) ↓340"'  # …but shown under it
    expect(context).to_have_text("context 3.2k / 100k (3%)")  # updated when the entry was appended
    expect(context).to_have_attribute("data-tokens", "3200")
    expect(context).not_to_have_class(re.compile(r"\bfull\b"))

    live.model.enqueue([TextDelta(text="A long one."), UsageEvent(usage=Usage(input=85_000, output=1234))])
    send_from_page(page, "more")
    expect(answers.nth(1)).to_have_attribute("data-usage", "↑85k ↓1.2k")
    expect(context).to_have_text("context 85k / 100k (85%)")
    expect(context).to_have_class(re.compile(r"\bfull\b"))  # near the budget: older messages get summarised
    view = live.call("session.get", {"session_id": session_id})
    assert (view["context_tokens"], view["context_budget"]) == (85_000, 100_000)
    dashboard.screenshot("dashboard-usage")

    page.reload()  # opened later: the figures come from session.get and the history
    expect(page.locator("body")).to_have_attribute("data-ready", "true")
    expect(context).to_have_text("context 85k / 100k (85%)")
    expect(answers).to_have_text(["Counted.", "A long one."])
    expect(answers.nth(0)).to_have_attribute("data-usage", "↑3.2k (2k cached) ↓340")
    expect(answers.nth(1)).to_have_attribute("data-usage", "↑85k ↓1.2k")
