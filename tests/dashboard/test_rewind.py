"""W3 in the Dashboard: a message's Rewind button previews what restoring the workspace to before it would
change (and the files changed by hand, kept unless ticked), then rewinds the files only, the conversation
only (its text back in the editor), or both, in a real browser against a real Gateway."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.dashboard.conftest import Dashboard
from tests.gateway.live import TIMEOUT, LiveGateway


@pytest.fixture
def live(tmp_path: Path) -> Iterator[LiveGateway]:
    # The offline model's cues (``write FILE: TEXT``) call the real write_file tool.
    with LiveGateway(tmp_path, scripted_only=False) as gateway:
        yield gateway


def _turn(live: LiveGateway, session_id: str, text: str) -> None:
    sent = live.call("session.send", {"session_id": session_id, "text": text})
    assert live.call("session.wait", {"submission_id": sent["id"], "timeout": TIMEOUT})["state"] == "completed"


def test_w3_the_dashboard_rewinds_files_then_conversation_and_both(dashboard: Dashboard, tmp_path: Path) -> None:
    live = dashboard.live
    work = tmp_path / "project"
    work.mkdir()
    session_id = live.call("session.create", {"title": "edits", "workspace": os.path.realpath(work)})["id"]
    live.call("session.tools.configure", {"session_id": session_id, "enabled": ["write_file"]})
    _turn(live, session_id, "write a.txt: first")
    _turn(live, session_id, "write b.txt: two")
    _turn(live, session_id, "write a.txt: third")
    (work / "b.txt").write_text("by hand")
    head = live.call("session.get", {"session_id": session_id})["session"]["head"]

    page = dashboard.open(f"session={session_id}")
    users = page.locator("#entries .kind-user")
    expect(users).to_have_text(["write a.txt: first", "write b.txt: two", "write a.txt: third"])
    users.nth(1).get_by_role("button", name="Rewind to before this").click()
    preview = page.locator("#rewind-preview")
    expect(preview.get_by_role("list", name="Would change")).to_have_text("~ a.txt")
    expect(preview.get_by_role("list", name="Would remove")).to_have_text("- b.txt")
    expect(preview.get_by_role("list", name="Changed by hand since the agent's last capture (kept)")).to_have_text(
        "! b.txt"
    )
    assert (work / "a.txt").read_text() == "third"  # a preview changes nothing

    page.get_by_role("button", name="Files only").click()
    expect(page.locator("#notice")).to_contain_text("files restored: 0 added, 1 changed, 0 removed")
    expect(page.locator("#notice")).to_contain_text("kept as you changed them: b.txt")
    assert (work / "a.txt").read_text() == "first"
    assert (work / "b.txt").read_text() == "by hand"  # changed by hand: kept
    assert live.call("session.get", {"session_id": session_id})["session"]["head"] == head  # conversation stays
    expect(users).to_have_count(3)

    users.nth(2).get_by_role("button", name="Rewind to before this").click()
    page.get_by_role("button", name="Conversation only").click()
    expect(page.locator("#notice")).to_contain_text("conversation moved back to before that message")
    expect(users).to_have_text(["write a.txt: first", "write b.txt: two"])
    expect(page.get_by_label("Message")).to_have_value("write a.txt: third")
    assert (work / "a.txt").read_text() == "first"  # the files stay

    users.nth(0).get_by_role("button", name="Rewind to before this").click()
    expect(preview.get_by_role("list", name="Would remove").get_by_role("listitem")).to_have_text(
        ["- a.txt", "- b.txt"]
    )
    page.get_by_label("Also restore the files changed by hand").check()
    page.get_by_role("button", name="Conversation and files").click()
    expect(page.locator("#notice")).to_contain_text("files restored: 0 added, 0 changed, 2 removed")
    expect(users).to_have_count(0)
    expect(page.get_by_label("Message")).to_have_value("write a.txt: first")
    assert sorted(os.listdir(work)) == []
