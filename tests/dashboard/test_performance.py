"""B1 at scale: open a 10,000-message conversation — its newest page first, by a click and loaded cold,
then page back through it. The app sets ``data-first-page-ms`` on the conversation (from the click to the
frame after the first page); the figures are printed here and measured by ``python -m
bench.dashboard_bench`` (target ≤ 300 ms, issue 7): a timed assertion would fail on a busy machine."""

from __future__ import annotations

import re

from playwright.sync_api import expect

from tests.dashboard.conftest import Dashboard, seed

MESSAGES = 10_000
ANY = re.compile(".+")


def test_b1_open_a_10k_message_conversation_first_page_painted(dashboard: Dashboard) -> None:
    live = dashboard.live
    texts = [
        f"message {i} " + ("with **some** Markdown and `code` " if i % 2 else "a question ") * 3
        for i in range(MESSAGES)
    ]
    seed(live, "huge", texts)
    live.call("session.create", {"title": "small"})
    page = dashboard.open()
    conversation = page.locator("#conversation")

    page.locator("#sessions li", has_text="small").click()
    expect(page.locator("#title")).to_have_text("small")
    expect(page.locator("#entries li")).to_have_count(0)
    page.locator("#sessions li", has_text="huge").click()
    expect(conversation).to_have_attribute("data-first-page-ms", ANY)
    expect(page.locator("#entries li").last).to_contain_text(f"message {MESSAGES - 1}")
    clicked = float(conversation.get_attribute("data-first-page-ms") or "nan")

    # Cold: the page loaded straight into that conversation (#session=ID), from navigation start.
    page.reload()
    expect(page.locator("body")).to_have_attribute("data-ready", "true")
    expect(conversation).to_have_attribute("data-first-page-at", ANY)
    cold = float(conversation.get_attribute("data-first-page-at") or "nan")
    print(f"10k-message conversation, first page painted: {clicked:.0f} ms after the click, {cold:.0f} ms cold")

    entries = page.locator("#entries li")
    expect(entries).to_have_count(50)
    page.locator("#messages").evaluate("box => { box.scrollTop = 0; }")
    expect(entries).to_have_count(100)  # older pages on scrolling up, as for any conversation
    expect(entries.first).to_contain_text(f"message {MESSAGES - 100}")
