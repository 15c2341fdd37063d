"""Q2, Q3, S1: the one Send button, the queue (Steer, Edit, Delete), conflicts, Escape; and the safe
rendering of the model's Markdown. The model is held mid-answer by a Gate, never by sleeping."""

from __future__ import annotations

from typing import Any

from playwright.sync_api import Page, expect

from anyy.domain.model_io import TextDelta
from anyy.providers.gates import Gate
from tests.dashboard.conftest import Dashboard
from tests.gateway.live import LiveGateway, put_object, wait_gate


def open_new_session(dashboard: Dashboard, title: str = "talk") -> tuple[Page, str]:
    session = dashboard.live.call("session.create", {"title": title})
    page = dashboard.open(f"session={session['id']}")
    expect(page.locator("#title")).to_have_text(title)
    return page, session["id"]


def send_from_page(page: Page, text: str) -> None:
    page.get_by_label("Message").fill(text)
    page.get_by_role("button", name="Send").click()


def queue_of(live: LiveGateway, session_id: str) -> list[dict[str, Any]]:
    result: list[dict[str, Any]] = live.call("session.queue.list", {"session_id": session_id})
    return result


def held(live: LiveGateway, page: Page, text: str) -> Gate:
    """Send ``text`` from the page; its answer streams "Work" and then waits at the returned gate."""
    gate = Gate("held")
    live.model.enqueue([TextDelta(text="Work"), gate, TextDelta(text="ed.")])
    send_from_page(page, text)
    expect(page.locator("#live")).to_have_text("Work")  # first: the page's frames may be routed (EventValve)
    wait_gate(gate)
    return gate


def test_q2_send_when_idle_streams_the_answer(dashboard: Dashboard) -> None:
    page, _ = open_new_session(dashboard)
    gate = held(dashboard.live, page, "hello")
    expect(page.locator("#entries .kind-user")).to_have_text(["hello"])
    expect(page.locator("body")).to_have_class("busy")
    gate.open()
    expect(page.locator("#entries .kind-assistant")).to_have_text(["Worked."])
    expect(page.locator("#live")).to_be_hidden()
    expect(page.locator("body")).not_to_have_class("busy")
    expect(page.get_by_label("Message")).to_have_value("")


def test_q2_send_while_busy_adds_a_follow_up(dashboard: Dashboard) -> None:
    live = dashboard.live
    page, session_id = open_new_session(dashboard)
    gate = held(live, page, "first")
    live.model.enqueue("second answer")
    send_from_page(page, "second")
    item = page.locator("#queue li")
    expect(item).to_have_count(1)
    expect(item.locator(".badge")).to_have_text("follow-up")
    expect(item.locator(".text")).to_have_text("second")
    assert [(s["kind"], s["text"]) for s in queue_of(live, session_id)] == [("follow_up", "second")]
    dashboard.screenshot("dashboard-conversation-busy")
    gate.open()  # the first response ends; the follow-up starts then
    expect(page.locator("#entries .kind-assistant")).to_have_text(["Worked.", "second answer"])
    expect(item).to_have_count(0)


def test_q2_steer_edit_cancel_delete(dashboard: Dashboard) -> None:
    live = dashboard.live
    page, session_id = open_new_session(dashboard)
    gate = held(live, page, "first")
    send_from_page(page, "alpha")
    attachment = put_object(live, b"notes", "notes.txt")
    with live.ws() as other:  # a second client queues an item with an attachment
        other.call(
            "session.send",
            {"session_id": session_id, "text": "beta", "kind": "follow_up", "attachments": [attachment]},
        )
    items = page.locator("#queue li")
    expect(items.locator(".text")).to_have_text(["alpha", "beta"])
    alpha, beta = items.nth(0), items.nth(1)

    # Edit, then Cancel: the item is intact.
    beta.get_by_role("button", name="Edit").click()
    page.get_by_label("Edit pending item").fill("beta changed")
    page.locator("#queue").get_by_role("button", name="Cancel").click()
    expect(items.locator(".text")).to_have_text(["alpha", "beta"])
    assert [s["text"] for s in queue_of(live, session_id)] == ["alpha", "beta"]

    # Edit, then Save: that item only; its attachment kept.
    items.nth(1).get_by_role("button", name="Edit").click()
    page.get_by_label("Edit pending item").fill("beta v2")
    page.locator("#queue").get_by_role("button", name="Save").click()
    expect(items.locator(".text")).to_have_text(["alpha", "beta v2"])
    expect(items.nth(1).locator(".attachments")).to_have_text("notes.txt")
    queued = queue_of(live, session_id)
    assert [s["text"] for s in queued] == ["alpha", "beta v2"]
    assert [a["name"] for a in queued[1]["attachments"]] == ["notes.txt"]

    # Steer: alpha moves to the steering queue (shown first).
    alpha.get_by_role("button", name="Steer").click()
    expect(items.nth(0).locator(".badge")).to_have_text("steering")
    assert [(s["kind"], s["text"]) for s in queue_of(live, session_id)] == [
        ("steering", "alpha"),
        ("follow_up", "beta v2"),
    ]

    # Delete: the item leaves the queue.
    items.nth(1).get_by_role("button", name="Delete").click()
    expect(items.locator(".text")).to_have_text(["alpha"])
    assert [s["text"] for s in queue_of(live, session_id)] == ["alpha"]

    live.model.enqueue("steered answer")
    gate.open()
    expect(items).to_have_count(0)


def test_q3_conflict_keeps_the_draft(dashboard: Dashboard) -> None:
    live = dashboard.live
    page, session_id = open_new_session(dashboard)
    gate = held(live, page, "first")
    send_from_page(page, "gamma")
    item = page.locator("#queue li")
    expect(item.locator(".text")).to_have_text("gamma")
    pending = queue_of(live, session_id)[0]

    page.get_by_label("Message").fill("my unsent draft")
    item.get_by_role("button", name="Edit").click()
    page.get_by_label("Edit pending item").fill("gamma from the page")
    # Meanwhile another client changes that item: the page's edit is now based on an old version.
    with live.ws() as other:
        other.call(
            "session.queue.update", {"submission_id": pending["id"], "version": pending["version"], "text": "gamma 2"}
        )
    page.locator("#queue").get_by_role("button", name="Save").click()
    expect(page.locator("#notice")).to_contain_text("changed meanwhile")
    expect(item.locator(".text")).to_have_text("gamma 2")  # the queue was refreshed
    editor = page.get_by_label("Message")
    expect(editor).to_have_value("gamma from the page\n\nmy unsent draft")  # nothing typed is lost
    assert [s["text"] for s in queue_of(live, session_id)] == ["gamma 2"]
    live.model.enqueue("done")
    gate.open()
    expect(item).to_have_count(0)


def test_q3_item_taken_while_editing_keeps_the_text(dashboard: Dashboard) -> None:
    live = dashboard.live
    page, session_id = open_new_session(dashboard)
    first = held(live, page, "first")
    send_from_page(page, "delta")
    item = page.locator("#queue li")
    expect(item.locator(".text")).to_have_text("delta")
    page.get_by_label("Message").fill("draft")
    item.get_by_role("button", name="Edit").click()
    page.get_by_label("Edit pending item").fill("delta edited")
    second = Gate("second")
    live.model.enqueue([second, TextDelta(text="ok")])
    first.open()  # the agent takes the follow-up
    wait_gate(second)
    expect(item).to_have_count(0)
    expect(page.locator("#notice")).to_contain_text("taken meanwhile")
    expect(page.get_by_label("Message")).to_have_value("delta edited\n\ndraft")
    assert queue_of(live, session_id) == []
    second.open()


def test_s1_escape_stops_and_keeps_pending(dashboard: Dashboard) -> None:
    live = dashboard.live
    page, session_id = open_new_session(dashboard)
    held(live, page, "first")
    running = live.call("session.get", {"session_id": session_id})["running_execution"]
    assert running is not None
    send_from_page(page, "later")
    expect(page.locator("#queue li .text")).to_have_text(["later"])
    page.keyboard.press("Escape")
    expect(page.locator("#live")).to_be_hidden()  # at once, before the Gateway answers
    expect(page.locator("#status")).to_have_text("Stopped")
    with live.ws() as other:
        other.call("events.subscribe", {"session_id": session_id})
        view = other.call("session.get", {"session_id": session_id})
        if view["running_execution"] is not None:
            other.event(lambda e: e.get("type") == "execution_state" and e.get("state") == "interrupted")
    assert live.call("session.get", {"session_id": session_id})["running_execution"] is None
    assert [s["text"] for s in queue_of(live, session_id)] == ["later"]  # pending items are kept
    expect(page.locator("#queue li .text")).to_have_text(["later"])
    # The next Send is a prompt again (the page is idle), and nothing started by itself.
    assert live.model.pending == 0


def test_q2_markdown_from_the_model_is_rendered_safely(dashboard: Dashboard) -> None:
    live = dashboard.live
    page, _ = open_new_session(dashboard)
    live.model.enqueue(
        "Some **bold** and *italic* and `code`.\n\n"
        '<img src=x onerror="window.pwned=1"><script>window.pwned=2</script>\n\n'
        "[safe](https://example.com/a) [bad](javascript:window.pwned=3)\n\n"
        "```\n<b>not bold</b>\n```"
    )
    send_from_page(page, "show me")
    answer = page.locator("#entries .kind-assistant")
    expect(answer.locator("strong")).to_have_text("bold")
    expect(answer.locator("em")).to_have_text("italic")
    expect(answer.locator("p code")).to_have_text("code")
    expect(answer.locator("pre code")).to_have_text("<b>not bold</b>")
    assert answer.locator("img, script, b").count() == 0
    links = answer.locator("a")
    expect(links).to_have_count(1)
    expect(links).to_have_attribute("href", "https://example.com/a")
    expect(links).to_have_attribute("rel", "noopener noreferrer")
    expect(answer).to_contain_text("[bad](javascript:window.pwned=3)")
    assert page.evaluate("window.pwned === undefined")
    dashboard.screenshot("dashboard-conversation")
