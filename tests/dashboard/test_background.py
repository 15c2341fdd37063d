"""K4 in the Dashboard: the Background list shows what started each session (a schedule's run, a
delegated task, a resident and its triggers), its state and last outcome; a schedule's runs and a
parent's delegated tasks are one click away (each opening its session), on a desktop and on a phone."""

from __future__ import annotations

from typing import Any

from playwright.sync_api import Browser, ViewportSize, expect

from anyy.domain.model_io import ToolCallEvent
from anyy.providers.base import ProviderError
from tests.dashboard.conftest import Dashboard
from tests.gateway.live import LiveGateway


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


PHONE: ViewportSize = {"width": 390, "height": 844}


def _seed_background(live: LiveGateway) -> dict[str, Any]:
    """A chat that delegated two tasks (both answered), a Background session whose answer failed, a
    schedule's run and a resident with a heartbeat and a webhook."""
    parent = live.call("session.create", {"title": "research"})["id"]
    live.call("session.tools.configure", {"session_id": parent, "enabled": ["delegate"]})
    tasks = [{"brief": "find the papers"}, {"brief": "sum up the notes"}]
    live.model.enqueue([ToolCallEvent(call_id="d1", name="delegate", arguments={"tasks": tasks})])
    live.model.enqueue("Found three.", "Summed up.", "Both done.")
    sent = live.call("session.send", {"session_id": parent, "text": "research this"})
    assert live.call("session.wait", {"submission_id": sent["id"], "timeout": 30})["state"] == "completed"
    failed = live.call("session.create", {"title": "broken job", "kind": "background"})["id"]
    live.model.enqueue(ProviderError("fatal", "the key was refused"))
    sent = live.call("session.send", {"session_id": failed, "text": "go"})
    assert live.call("session.wait", {"submission_id": sent["id"], "timeout": 30})["state"] == "failed"
    live.call("schedule.create", {"name": "digest", "prompt": "Write the digest.", "at": 4_102_444_800.0})
    live.model.enqueue("The digest.")
    run = live.call("schedule.run_now", {"schedule": "digest"})
    assert live.call("session.wait", {"submission_id": run["submission_id"], "timeout": 30})["state"] == "completed"
    resident = live.call(
        "resident.create", {"name": "inbox", "instructions": "File it.", "heartbeat_seconds": 1800, "webhook": True}
    )["resident"]
    children = [task["child_session_id"] for task in live.call("session.children", {"session_id": parent})]
    return {"parent": parent, "children": children, "failed": failed, "resident": resident["session_id"]}


def test_k4_background_rows_show_state_outcome_origin_and_a_parents_tasks_are_one_click_away(
    dashboard: Dashboard,
) -> None:
    seeded = _seed_background(dashboard.live)
    page = dashboard.open()
    page.get_by_role("tab", name="Background").click()
    row = page.locator("#sessions li")
    expect(row).to_have_count(5)  # two tasks, the failed job, the run, the resident (the parent is a Chat)
    failed = page.locator(f'#sessions li[data-id="{seeded["failed"]}"]')
    expect(failed.locator(".state")).to_have_attribute("data-outcome", "failed")
    expect(failed.locator(".activity .state")).to_have_text("✗ failed")
    expect(failed.locator(".activity .error")).to_contain_text("the key was refused")
    resident = page.locator(f'#sessions li[data-id="{seeded["resident"]}"] .origin')
    expect(resident).to_contain_text("resident inbox · heartbeat every 30 min · webhook /hooks/inbox · next wake in 30")
    child = page.locator(f'#sessions li[data-id="{seeded["children"][1]}"]')
    expect(child.locator(".state")).to_have_text("✓ completed")
    expect(child.locator(".origin")).to_have_text("delegated by “research”")  # the parent by its title

    child.get_by_role("button", name="Parent's tasks").click()
    dialog = page.locator("#tasks-dialog")
    items = dialog.locator("li")
    expect(items).to_have_count(3)
    expect(items.nth(0)).to_contain_text("Open the parent session")
    expect(items.nth(1)).to_contain_text("finished · find the papers")
    expect(items.nth(2)).to_contain_text("sum up the notes")
    items.nth(0).get_by_role("button").click()
    expect(dialog).not_to_be_visible()
    expect(page.locator("#title")).to_have_text("research")

    # The parent is a Chat: its header has its tasks, one click away, each opening its child.
    page.locator("#conv-links").get_by_role("button", name="Tasks (2)").click()
    expect(items).to_have_count(2)
    items.nth(1).get_by_role("button").click()
    second = dashboard.live.call("session.get", {"session_id": seeded["children"][1]})["session"]
    expect(page.locator("#title")).to_have_text(second["title"] or "Untitled")
    expect(page.locator("#conv-links .origin")).to_have_text("delegated by “research”")
    dashboard.screenshot("dashboard-background")


def test_k4_the_background_list_and_its_dialogs_fit_a_390px_phone(browser: Browser, live: LiveGateway) -> None:
    seeded = _seed_background(live)
    board = Dashboard(browser, live)
    board.context.close()
    board.context = browser.new_context(viewport=PHONE, is_mobile=True, has_touch=True)
    board.page = board.context.new_page()
    board.page.on("pageerror", lambda error: board.errors.append(f"uncaught: {error}"))
    try:
        page = board.open()
        page.get_by_role("tab", name="Background").click()
        expect(page.locator("#sessions li")).to_have_count(5)
        sidebar = page.locator("#sidebar").bounding_box()
        assert sidebar is not None
        overflow = page.evaluate(
            "() => [...document.querySelectorAll('#sessions li')].map(li => li.scrollWidth - li.clientWidth)"
        )
        assert max(overflow) <= 0, overflow  # nothing wider than the drawer: no sideways scrolling
        for link in page.locator("#sessions .list-link").all():
            box = link.bounding_box()
            assert box is not None
            assert box["x"] + box["width"] <= sidebar["x"] + sidebar["width"], box
            assert box["height"] >= 16  # big enough to tap
        board.screenshot("dashboard-background-phone")
        page.locator(f'#sessions li[data-id="{seeded["children"][0]}"]').get_by_role(
            "button", name="Parent's tasks"
        ).click()
        dialog = page.locator("#tasks-dialog")
        expect(dialog.locator("li")).to_have_count(3)
        box = dialog.bounding_box()
        assert box is not None
        assert box["x"] >= 0
        assert box["x"] + box["width"] <= PHONE["width"]
        board.screenshot("dashboard-background-tasks-phone")
        dialog.get_by_role("button", name="Close").click()
        expect(dialog).not_to_be_visible()
        assert board.errors == []
    finally:
        board.close()
