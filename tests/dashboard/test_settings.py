"""M1: the model/provider/effort selector changes the current session only; and the page is
ready with 1,000 sessions (how fast: bench.dashboard_bench)."""

from __future__ import annotations

from playwright.sync_api import expect

from tests.dashboard.conftest import Dashboard


def test_m1_selector_changes_the_current_session_only(dashboard: Dashboard) -> None:
    live = dashboard.live
    other = live.call("session.create", {"title": "other"})
    mine = live.call("session.create", {"title": "mine"})
    page = dashboard.open(f"session={mine['id']}")
    expect(page.locator("#title")).to_have_text("mine")
    expect(page.get_by_label("Model")).to_have_value("offline/offline")
    page.get_by_label("Effort").select_option("high")
    page.get_by_label("Model").select_option("offline/offline")
    dashboard.screenshot("dashboard-selector")

    def effort_of(session_id: str) -> str:
        return str(live.call("session.get", {"session_id": session_id})["session"]["effort"])

    header = page.locator("#conv-header")
    expect(header).to_have_attribute("data-effort", "high")  # confirmed by the Gateway
    expect(header).to_have_attribute("data-model", "offline/offline")
    assert effort_of(mine["id"]) == "high"
    page.locator("#sessions li", has_text="other").click()
    expect(page.locator("#title")).to_have_text("other")
    expect(page.get_by_label("Effort")).to_have_value("")
    assert effort_of(mine["id"]) == "high"
    assert effort_of(other["id"]) == ""


def test_b1_ready_with_1000_sessions(dashboard: Dashboard) -> None:
    """The page is ready with a large profile: the first page of the list, the rest on scrolling. How fast
    is measured by ``python -m bench.dashboard_bench`` (a timed assertion here would fail on a busy
    machine, not on a slow page)."""
    live = dashboard.live
    for i in range(1000):
        live.call("session.create", {"title": f"session {i}"})
    page = dashboard.open()
    expect(page.locator("#sessions li")).to_have_count(50)
    ready = float(page.evaluate("() => performance.getEntriesByName('anyy-ready')[0].startTime"))
    print(f"time to interactive with 1,000 sessions: {ready:.0f} ms (bench.dashboard_bench measures it)")
    expect(page.locator("#sessions li").first.locator(".title")).to_have_text("session 999")


def test_u1_model_and_effort_chosen_before_the_first_message_apply_to_the_session_it_creates(
    dashboard: Dashboard,
) -> None:
    live = dashboard.live
    page = dashboard.open()
    page.get_by_role("button", name="New session").click()
    expect(page.locator("#title")).to_have_text("New session")
    expect(page.get_by_label("Model")).to_have_value("")  # the profile's model, until one is chosen
    page.get_by_label("Model").select_option("offline/offline")
    page.get_by_label("Effort").select_option("high")
    assert live.call("session.list", {"kind": "chat"})["items"] == []  # a choice creates nothing
    live.model.enqueue("Thought hard.")
    page.get_by_label("Message").fill("first words")
    page.keyboard.press("Enter")
    expect(page.locator("#entries .kind-assistant")).to_have_text(["Thought hard."])
    (created,) = live.call("session.list", {"kind": "chat"})["items"]
    session = live.call("session.get", {"session_id": created["id"]})["session"]
    assert (session["provider"], session["model"], session["effort"]) == ("offline", "offline", "high")
    header = page.locator("#conv-header")
    expect(header).to_have_attribute("data-effort", "high")
    expect(page.get_by_label("Model").locator("option[value='']")).to_have_count(0)  # a real session's own
