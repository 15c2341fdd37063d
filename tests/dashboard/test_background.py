"""K4 in the Dashboard: the Background list shows what started each session, and a scheduled run's
session leads to its schedule's runs in one click (each run opening its session)."""

from __future__ import annotations

from playwright.sync_api import expect

from tests.dashboard.conftest import Dashboard


def test_k4_background_list_shows_the_origin_and_a_schedules_runs_are_one_click_away(dashboard: Dashboard) -> None:
    live = dashboard.live
    live.call("schedule.create", {"name": "daily summary", "prompt": "Sum up.", "at": 4_102_444_800.0})
    live.model.enqueue("first summary", "second summary")
    runs = [live.call("schedule.run_now", {"schedule": "daily summary"}) for _ in range(2)]
    for run in runs:
        assert live.call("session.wait", {"submission_id": run["submission_id"]})["state"] == "completed"
    live.call("session.create", {"title": "by hand", "kind": "background"})

    page = dashboard.open()
    page.get_by_role("tab", name="Background").click()
    items = page.locator("#sessions li")
    expect(items).to_have_count(3)
    scheduled = page.locator("#sessions li", has=page.locator(".origin", has_text="schedule daily summary"))
    expect(scheduled).to_have_count(2)
    expect(page.locator("#sessions li", has_text="by hand").locator(".origin")).to_have_count(0)

    scheduled.first.get_by_role("button", name="Runs").click()
    dialog = page.locator("#runs-dialog")
    expect(dialog.get_by_role("heading")).to_have_text("Runs of daily summary")
    entries = dialog.locator("li")
    expect(entries).to_have_count(2)
    expect(entries.first).to_contain_text("completed")
    entries.last.get_by_role("button").click()
    expect(dialog).not_to_be_visible()
    expect(page.locator("#entries li").last).to_have_text("first summary")
