"""B1: search in the session lists (session.search); a hit opens its conversation at that message."""

from __future__ import annotations

from playwright.sync_api import expect

from tests.dashboard.conftest import Dashboard, seed


def test_b1_search_opens_the_conversation_at_the_hit(dashboard: Dashboard) -> None:
    live = dashboard.live
    texts = [f"filler message {i}" for i in range(300)]
    texts[20] = "where did I put the aubergine recipe"  # far back: several pages above the newest
    wanted = seed(live, "cooking", texts)
    seed(live, "other", ["nothing to see", "indeed"])
    seed(live, "background job", ["aubergine stock check"], kind="background")
    page = dashboard.open()
    expect(page.locator("#sessions li")).to_have_count(2)

    page.get_by_label("Search", exact=True).fill("aubergine")
    hits = page.locator("#search-results li")
    expect(hits).to_have_count(1)  # the Chats tab: the background session's message is not listed
    expect(hits.locator(".title")).to_have_text("cooking")
    expect(hits.locator("mark")).to_have_text("aubergine")
    expect(page.locator("#sessions")).to_be_hidden()
    dashboard.screenshot("dashboard-search")

    hits.first.click()
    expect(page.locator("#title")).to_have_text("cooking")
    found = page.locator("#entries li.found")
    expect(found).to_have_text("where did I put the aubergine recipe")
    expect(found).to_be_in_viewport()
    assert page.url.endswith(f"#session={wanted}")

    page.get_by_role("tab", name="Background").click()  # the search follows the tab
    expect(hits.locator(".title")).to_have_text("background job")

    page.get_by_label("Search", exact=True).fill("zzzz")
    expect(page.locator("#search-results")).to_have_text("No messages match.")
    page.get_by_label("Search", exact=True).press("Escape")  # clears the search, back to the list
    expect(page.locator("#search-results")).to_be_hidden()
    expect(page.locator("#sessions li .title")).to_have_text(["background job"])
