"""B1 (and X1): New session, the Chats and Background lists by pages, a conversation's history by
pages (older ones on scrolling up), rename."""

from __future__ import annotations

from pathlib import Path

from playwright.sync_api import Browser, expect

from tests.dashboard.conftest import Dashboard
from tests.gateway.live import LiveGateway


def test_b1_chats_and_background_tabs_page_by_scroll(dashboard: Dashboard) -> None:
    live = dashboard.live
    for i in range(120):
        live.call("session.create", {"title": f"chat {i:03d}"})
    for i in range(3):
        live.call("session.create", {"title": f"job {i}", "kind": "background"})
    page = dashboard.open()
    items = page.locator("#sessions li")
    expect(items).to_have_count(50)  # one page
    expect(items.first.locator(".title")).to_have_text("chat 119")  # most recent first
    dashboard.screenshot("dashboard-lists")
    page.locator("#sessions").evaluate("ul => { ul.scrollTop = ul.scrollHeight; }")
    expect(items).to_have_count(100)
    page.locator("#sessions").evaluate("ul => { ul.scrollTop = ul.scrollHeight; }")
    expect(items).to_have_count(120)
    expect(items.last.locator(".title")).to_have_text("chat 000")
    expect(page.locator("#sessions .title", has_text="job")).to_have_count(0)

    page.get_by_role("tab", name="Background").click()
    expect(items).to_have_count(3)
    expect(items.locator(".title")).to_have_text(["job 2", "job 1", "job 0"])
    page.get_by_role("tab", name="Chats").click()
    expect(items).to_have_count(50)


def test_b1_history_pages_load_on_scroll_up(dashboard: Dashboard) -> None:
    live = dashboard.live
    session = live.call("session.create", {"title": "long"})
    live.model.enqueue(*[f"answer {i}" for i in range(60)])
    last = None
    for i in range(60):
        last = live.call("session.send", {"session_id": session["id"], "text": f"question {i}"})
    assert last is not None
    assert live.call("session.wait", {"submission_id": last["id"]})["state"] == "completed"

    page = dashboard.open()
    page.locator("#sessions li", has_text="long").click()
    entries = page.locator("#entries li")
    expect(entries).to_have_count(50)  # the newest page, oldest at the top
    expect(entries.last).to_have_text("answer 59")
    expect(entries.first).to_have_text("question 35")
    page.locator("#messages").evaluate("box => { box.scrollTop = 0; }")
    expect(entries).to_have_count(100)
    page.locator("#messages").evaluate("box => { box.scrollTop = 0; }")
    expect(entries).to_have_count(120)
    expect(entries.first).to_have_text("question 0")
    expect(entries.last).to_have_text("answer 59")


def test_b1_new_session_and_rename(dashboard: Dashboard) -> None:
    page = dashboard.open()
    expect(page.locator("#sessions li")).to_have_count(0)
    page.get_by_role("button", name="New session").click()
    expect(page.locator("#conversation")).to_be_visible()
    dashboard.live.model.enqueue("Hi.")
    page.get_by_label("Message").fill("hello")
    page.get_by_role("button", name="Send").click()
    expect(page.locator("#entries .kind-assistant")).to_have_text(["Hi."])
    expect(page.locator("#sessions li")).to_have_count(1)
    page.get_by_role("button", name="Rename").click()
    page.get_by_label("Title").fill("Holiday plans")
    page.get_by_label("Title").press("Enter")
    expect(page.locator("#title")).to_have_text("Holiday plans")
    expect(page.locator("#sessions li .title")).to_have_text(["Holiday plans"])
    listed = dashboard.live.call("session.list", {"kind": "chat"})["items"]
    assert [s["title"] for s in listed] == ["Holiday plans"]
    page.reload()  # the open conversation is in the fragment; the token in sessionStorage
    expect(page.locator("body")).to_have_attribute("data-ready", "true")
    expect(page.locator("#title")).to_have_text("Holiday plans")


def test_u1_a_new_session_is_created_by_its_first_message(dashboard: Dashboard) -> None:
    """Opening the Dashboard, clicking New session and leaving leaves no empty session behind."""
    live = dashboard.live
    page = dashboard.open()
    page.get_by_role("button", name="New session").click()
    expect(page.locator("#title")).to_have_text("New session")
    expect(page.get_by_label("Message")).to_be_focused()
    assert live.call("session.list", {"kind": "chat"})["items"] == []
    page.go_back()  # changed their mind
    expect(page.locator("#empty")).to_be_visible()
    page.get_by_role("button", name="New session").click()
    live.model.enqueue("Created now.")
    page.get_by_label("Message").fill("first words")
    page.keyboard.press("Enter")
    expect(page.locator("#entries .kind-assistant")).to_have_text(["Created now."])
    listed = live.call("session.list", {"kind": "chat"})["items"]
    assert len(listed) == 1
    expect(page.locator("#sessions li")).to_have_count(1)
    assert page.url.endswith(f"#session={listed[0]['id']}")


def test_u1_a_refused_first_message_creates_no_session_and_keeps_the_draft(
    dashboard: Dashboard, tmp_path: Path
) -> None:
    """The first send creates the session and takes the message in one call: refused (here a file the
    Gateway does not hold, as if swept after its upload), nothing is created and the text stays."""
    live = dashboard.live
    page = dashboard.open()
    lost = {"object": "0" * 64, "name": "gone.txt", "media_type": "text/plain", "size": 3}
    page.route("**/upload*", lambda route: route.fulfill(status=200, json=lost))
    page.get_by_role("button", name="New session").click()
    note = tmp_path / "gone.txt"
    note.write_bytes(b"abc")
    page.locator("#file-input").set_input_files(str(note))
    expect(page.locator("#attachments .chip[data-state=attached]")).to_have_count(1)
    page.get_by_label("Message").fill("look at this")
    page.keyboard.press("Enter")
    expect(page.locator("#banner")).to_contain_text("0000000000")
    assert live.call("session.list", {"kind": "chat"})["items"] == []
    expect(page.get_by_label("Message")).to_have_value("look at this")
    page.unroute("**/upload*")
    page.get_by_role("button", name="Remove gone.txt").click()
    live.model.enqueue("Now it is.")
    page.get_by_label("Message").press("Enter")
    expect(page.locator("#entries .kind-assistant")).to_have_text(["Now it is."])
    assert len(live.call("session.list", {"kind": "chat"})["items"]) == 1


def test_x1_missing_conversation_names_the_profile_and_lists(dashboard: Dashboard) -> None:
    page = dashboard.open("session=ses_missing")
    banner = page.locator("#banner")
    expect(banner).to_contain_text("profile 'default'")
    expect(banner).to_contain_text("Chats")
    expect(banner).to_contain_text("Background")


def test_token_is_taken_out_of_the_address(dashboard: Dashboard) -> None:
    page = dashboard.open()
    assert "token" not in page.url
    assert page.evaluate("sessionStorage.getItem('anyy.token')") == dashboard.live.token


def test_the_console_check_sees_errors_and_uncaught_exceptions(browser: Browser, live: LiveGateway) -> None:
    # What the `dashboard` and `other_tab` fixtures assert after every test is empty: it must fill up.
    board = Dashboard(browser, live)
    try:
        page = board.open()
        assert board.errors == []
        with page.expect_console_message(lambda message: message.type == "error"):
            page.evaluate("console.error('boom')")
        with page.expect_event("pageerror"):
            page.evaluate("setTimeout(() => { throw new Error('late'); }, 0)")
        assert board.errors[0] == "boom"
        assert board.errors[1].startswith("uncaught: ")
        assert "late" in board.errors[1]
    finally:
        board.close()


def test_u1_the_list_shows_last_messages_and_titles_follow_live(dashboard: Dashboard) -> None:
    live = dashboard.live
    older = live.call("session.create", {"title": "Tea"})
    live.model.enqueue("Oolong, then sencha.")
    sent = live.call("session.send", {"session_id": older["id"], "text": "which tea first?"})
    live.call("session.wait", {"submission_id": sent["id"], "timeout": 30})
    page = dashboard.open()
    expect(page.locator("#sessions li .preview")).to_have_text(["Oolong, then sencha."])
    page.get_by_role("button", name="New session").click()
    live.model.enqueue("Sure.")
    page.get_by_label("Message").fill("please plan the garden for spring")
    page.keyboard.press("Enter")
    # Named from the first message at once, then by the (offline) model: the header and the list follow.
    expect(page.locator("#title")).to_have_text("Plan the garden for spring")
    expect(page.locator("#sessions li.current .title")).to_have_text("Plan the garden for spring")
