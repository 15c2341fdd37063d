"""U2: a failed turn shows its error with Retry, live and after a reload (the runtime's durable notice),
on a phone (390x844) and on a desktop (1280x800); Retry sends the failed message again from just before
it. During a retry wait: "Retry now" and "Cancel retry" buttons, and Escape stops the work (the seed's
"Dashboard Escape stops the work"), not only the wait. The model is scripted (its errors included);
nothing sleeps: a 60 s retry wait is ended by the page, never waited out."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, ViewportSize, expect

from anyy.providers.base import ProviderError
from tests.dashboard.conftest import Dashboard
from tests.dashboard.test_conversation import open_new_session, send_from_page
from tests.gateway.live import LiveGateway

SIZES: dict[str, ViewportSize] = {"phone": {"width": 390, "height": 844}, "desktop": {"width": 1280, "height": 800}}


@pytest.fixture(params=sorted(SIZES))
def sized(request: pytest.FixtureRequest, browser: Browser, live: LiveGateway) -> Iterator[Dashboard]:
    board = Dashboard(browser, live)
    board.context.close()
    phone = request.param == "phone"
    board.context = browser.new_context(viewport=SIZES[request.param], is_mobile=phone, has_touch=phone)
    board.page = board.context.new_page()
    board.page.on("console", board._console)
    board.page.on("pageerror", lambda error: board.errors.append(f"uncaught: {error}"))
    try:
        yield board
        assert board.errors == [], f"the page logged console errors: {board.errors}"
    finally:
        board.close()


def test_u2_a_failed_turn_shows_its_error_and_retry_live_after_a_reload_and_retry_answers(sized: Dashboard) -> None:
    live = sized.live
    page, session_id = open_new_session(sized)
    live.model.enqueue(ProviderError("fatal", "the key was refused"))
    send_from_page(page, "hello")
    failed = page.locator("#entries .failed-turn")
    expect(failed).to_contain_text("The answer failed: the key was refused")
    retry = failed.get_by_role("button", name="Retry")
    expect(retry).to_be_visible()

    # A reload (or another device later) shows the same: the error and Retry come from the history.
    page.reload()
    expect(page.locator("body")).to_have_attribute("data-ready", "true")
    expect(failed).to_contain_text("The answer failed: the key was refused")
    expect(retry).to_be_visible()
    box, viewport = retry.bounding_box(), page.viewport_size
    assert box is not None
    assert viewport is not None
    assert box["x"] + box["width"] <= viewport["width"]  # reachable without scrolling sideways, on a phone too
    sized.screenshot(f"failed-turn-{viewport['width']}")

    live.model.enqueue("It works now.")
    retry.click()
    expect(page.locator("#entries .kind-assistant")).to_have_text(["It works now."])
    expect(page.locator("#entries .kind-user")).to_have_text(["hello"])  # once: the failed attempt is off the path
    expect(failed).to_have_count(0)
    history = live.call("session.history", {"session_id": session_id})["items"]
    assert [e["kind"] for e in reversed(history)] == ["user", "assistant"]
    tree = live.call("session.tree", {"session_id": session_id})
    assert sum(node["kind"] == "notice" for node in tree["nodes"]) == 1  # the failure stays in the tree


def test_u2_retry_is_offered_only_while_the_failure_ends_the_conversation(dashboard: Dashboard) -> None:
    live = dashboard.live
    page, _ = open_new_session(dashboard)
    live.model.enqueue(ProviderError("fatal", "the key was refused"))
    send_from_page(page, "hello")
    failed = page.locator("#entries .failed-turn")
    expect(failed.get_by_role("button", name="Retry")).to_be_visible()
    live.model.enqueue("Fine.")
    send_from_page(page, "something else")
    expect(page.locator("#entries .kind-assistant")).to_have_text(["Fine."])
    expect(failed).to_contain_text("The answer failed: the key was refused")  # still told
    expect(failed.get_by_role("button", name="Retry")).to_be_hidden()  # but no longer offered


def test_u2_during_a_retry_wait_retry_now_calls_the_model_at_once(sized: Dashboard) -> None:
    live = sized.live
    page, session_id = open_new_session(sized)
    live.model.enqueue(ProviderError("transient", "the model is overloaded", retry_after=60), "Back again.")
    send_from_page(page, "hello")
    retry = page.locator("#retry")
    expect(retry).to_contain_text("the model is overloaded")
    now = retry.get_by_role("button", name="Retry now")
    cancel = retry.get_by_role("button", name="Cancel retry")
    for control in (now, cancel):  # both on screen, on a phone too
        box, viewport = control.bounding_box(), page.viewport_size
        assert box is not None
        assert viewport is not None
        assert box["x"] + box["width"] <= viewport["width"]
    sized.screenshot(f"retry-wait-{page.viewport_size['width'] if page.viewport_size else 0}")
    now.click()  # no waiting the 60 s out
    expect(page.locator("#entries .kind-assistant")).to_have_text(["Back again."])
    expect(retry).to_have_count(0)
    assert len(live.model.requests) == 2
    assert live.call("session.get", {"session_id": session_id})["running_execution"] is None


def test_u2_escape_during_a_retry_wait_stops_the_work_and_keeps_the_queue(sized: Dashboard) -> None:
    live = sized.live
    page, session_id = open_new_session(sized)
    live.model.enqueue(ProviderError("transient", "the model is overloaded", retry_after=60))
    send_from_page(page, "hello")
    retry = page.locator("#retry")
    expect(retry).to_contain_text("the model is overloaded")
    execution = live.call("session.get", {"session_id": session_id})["running_execution"]
    assert execution is not None
    live.call("session.send", {"session_id": session_id, "text": "later", "kind": "follow_up"})
    expect(page.locator("#queue li")).to_have_count(1)
    page.keyboard.press("Escape")
    expect(retry).to_have_count(0)
    expect(page.locator("#status")).to_have_text("Stopped")
    ref = {"session_id": session_id, "execution_id": execution}
    first = live.call("session.execution", ref)["submission_ids"][0]
    ended = live.call("session.wait", {"submission_id": first, "timeout": 10})
    assert ended["state"] == "interrupted"
    stopped = live.call("session.execution", ref)
    assert stopped["note"] == "stopped by the user"  # the work, not only the wait
    assert [item["text"] for item in live.call("session.queue.list", {"session_id": session_id})] == ["later"]
    assert len(live.model.requests) == 1
