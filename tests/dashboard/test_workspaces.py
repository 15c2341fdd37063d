"""W1 in the Dashboard: the header shows the session's folder; a new session offers the profile's recent
workspaces and takes a folder typed in the field; an idle session moves to another folder, and a folder
that does not exist is refused, the field showing the session's own again."""

from __future__ import annotations

import os
import re
from pathlib import Path

from playwright.sync_api import expect

from tests.dashboard.conftest import Dashboard


def test_w1_the_dashboard_shows_offers_and_changes_the_workspace(dashboard: Dashboard, tmp_path: Path) -> None:
    live = dashboard.live
    recent = tmp_path / "recent project"
    chosen = tmp_path / "chosen project"
    recent.mkdir()
    chosen.mkdir()
    recent_path, chosen_path = os.path.realpath(recent), os.path.realpath(chosen)
    old = live.call("session.create", {"title": "old", "workspace": recent_path})
    page = dashboard.open(f"session={old['id']}")
    expect(page.locator("#title")).to_have_text("old")
    expect(page.get_by_label("Workspace")).to_have_value(recent_path)

    page.get_by_role("button", name="New session").click()
    expect(page.locator("#title")).to_have_text("New session")
    expect(page.get_by_label("Workspace")).to_have_value(recent_path)  # the most recent one, offered first
    expect(page.locator("#workspace-recent option")).to_have_count(1)
    page.get_by_label("Workspace").fill(chosen_path)
    page.get_by_label("Workspace").press("Tab")
    live.model.enqueue("Here.")
    page.get_by_label("Message").fill("work there")
    page.keyboard.press("Enter")
    expect(page.locator("#entries .kind-assistant")).to_have_text(["Here."])
    created = next(s for s in live.call("session.list", {})["items"] if s["id"] != old["id"])
    assert created["workspace"] == chosen_path
    expect(page).to_have_url(re.compile(f"session={created['id']}"))  # opened: its header is shown
    expect(page.get_by_label("Workspace")).to_have_value(chosen_path)

    page.get_by_label("Workspace").fill(str(tmp_path / "nowhere"))
    page.get_by_label("Workspace").press("Tab")
    expect(page.locator("#banner")).to_contain_text("does not exist")
    expect(page.get_by_label("Workspace")).to_have_value(chosen_path)
    page.get_by_label("Workspace").fill(recent_path)
    page.get_by_label("Workspace").press("Tab")
    expect(page.locator("#notice")).to_contain_text(f"This session now works in {recent_path}.")
    session = live.call("session.get", {"session_id": created["id"]})["session"]
    assert session["workspace"] == recent_path
