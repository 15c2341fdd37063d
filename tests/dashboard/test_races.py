"""S1 and Q3 when the page is behind: the Gateway's events are held back from the page (EventValve), so
it acts on what it last showed while the Gateway has moved on. A late Escape names the turn it showed
and never stops a later one; Steer or Delete on an item taken or changed meanwhile is a conflict, the
queue is refreshed and the unsent draft stays in the editor."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from anyy.domain.model_io import TextDelta
from anyy.providers.gates import Gate
from tests.dashboard.conftest import Dashboard, EventValve
from tests.dashboard.test_conversation import held, open_new_session, queue_of, send_from_page
from tests.gateway.live import LiveGateway, is_state, wait_gate

DRAFT = "my unsent draft"


@pytest.fixture
def valve(dashboard: Dashboard) -> Iterator[EventValve]:
    valve = EventValve(dashboard.page)
    yield valve
    valve.release()


def execution_state(live: LiveGateway, session_id: str, execution_id: str) -> str:
    execution: dict[str, Any] = live.call("session.execution", {"session_id": session_id, "execution_id": execution_id})
    return str(execution["state"])


def running_execution(live: LiveGateway, session_id: str) -> str | None:
    running: str | None = live.call("session.get", {"session_id": session_id})["running_execution"]
    return running


def test_s1_a_late_escape_never_stops_a_later_turn(dashboard: Dashboard, valve: EventValve) -> None:
    live = dashboard.live
    page, session_id = open_new_session(dashboard)
    first_gate = held(live, page, "first")
    first = running_execution(live, session_id)
    assert first is not None
    with live.ws() as other:
        other.call("events.subscribe", {"session_id": session_id})
        valve.hold()  # the page hears nothing more of the Gateway's events
        second_gate = Gate("second turn")
        live.model.enqueue([TextDelta(text="Second"), second_gate, TextDelta(text=" turn.")])
        first_gate.open()
        other.event(is_state("completed", first))  # the turn on the page's screen has ended…
        other.call("session.send", {"session_id": session_id, "text": "another"})
        wait_gate(second_gate)  # …and another one runs
        second = running_execution(live, session_id)
        assert second is not None
        assert second != first

        expect(page.locator("#live")).to_have_text("Work")  # the page still shows the first turn
        expect(page.locator("body")).to_have_class("busy")
        page.keyboard.press("Escape")
        expect(page.locator("#notice")).to_have_text("That response had already ended: nothing was stopped.")
        assert valve.sent("session.stop") == [{"session_id": session_id, "execution_id": first}]
        assert running_execution(live, session_id) == second  # the later turn goes on

        valve.release()  # the page catches up: the later turn shows running, then completes
        expect(page.locator("#live")).to_have_text("Second")
        expect(page.locator("body")).to_have_class("busy")
        expect(page.locator("#entries .kind-user")).to_have_text(["first", "another"])
        second_gate.open()
        expect(page.locator("#entries .kind-assistant")).to_have_text(["Worked.", "Second turn."])
        expect(page.locator("body")).not_to_have_class("busy")
    assert execution_state(live, session_id, first) == "completed"
    assert execution_state(live, session_id, second) == "completed"


def queued_with_draft(dashboard: Dashboard, text: str) -> tuple[Page, str, Gate, dict[str, Any]]:
    """A session held mid-answer with ``text`` queued as a follow-up from the page, and a draft typed."""
    live = dashboard.live
    page, session_id = open_new_session(dashboard)
    gate = held(live, page, "first")
    send_from_page(page, text)
    expect(page.locator("#queue li .text")).to_have_text([text])
    page.get_by_label("Message").fill(DRAFT)
    [pending] = queue_of(live, session_id)
    return page, session_id, gate, pending


def test_q3_steer_of_an_item_another_client_changed_is_a_conflict_and_keeps_the_draft(
    dashboard: Dashboard, valve: EventValve
) -> None:
    live = dashboard.live
    page, session_id, gate, pending = queued_with_draft(dashboard, "gamma")
    valve.hold()
    with live.ws() as other:  # another client edits the item; the page has not heard of it yet
        other.call(
            "session.queue.update", {"submission_id": pending["id"], "version": pending["version"], "text": "gamma 2"}
        )
    item = page.locator("#queue li")
    expect(item.locator(".text")).to_have_text("gamma")
    item.get_by_role("button", name="Steer").click()
    expect(page.locator("#notice")).to_contain_text("taken or changed meanwhile")
    expect(item.locator(".text")).to_have_text("gamma 2")  # the queue was refreshed
    expect(item.locator(".badge")).to_have_text("follow-up")
    expect(page.get_by_label("Message")).to_have_value(DRAFT)
    assert valve.sent("session.queue.steer") == [{"submission_id": pending["id"], "version": pending["version"]}]
    assert [(s["kind"], s["text"]) for s in queue_of(live, session_id)] == [("follow_up", "gamma 2")]
    valve.release()
    live.model.enqueue("done")
    gate.open()
    expect(page.locator("#entries .kind-assistant")).to_have_text(["Worked.", "done"])
    expect(item).to_have_count(0)
    expect(page.get_by_label("Message")).to_have_value(DRAFT)


def test_q3_delete_of_an_item_the_agent_took_is_a_conflict_and_keeps_the_draft(
    dashboard: Dashboard, valve: EventValve
) -> None:
    live = dashboard.live
    page, session_id, first, pending = queued_with_draft(dashboard, "delta")
    valve.hold()
    second = Gate("second")
    live.model.enqueue([second, TextDelta(text="ok")])
    first.open()  # the response ends and the agent takes the follow-up; the page has not heard of it yet
    wait_gate(second)
    assert queue_of(live, session_id) == []
    item = page.locator("#queue li")
    expect(item.locator(".text")).to_have_text("delta")
    item.get_by_role("button", name="Delete").click()
    expect(page.locator("#notice")).to_contain_text("taken or changed meanwhile")
    expect(item).to_have_count(0)  # the queue was refreshed
    expect(page.get_by_label("Message")).to_have_value(DRAFT)
    assert valve.sent("session.queue.cancel") == [{"submission_id": pending["id"], "version": pending["version"]}]
    taken = live.call("session.wait", {"submission_id": pending["id"], "timeout": 0})
    assert taken["state"] == "taken"  # not cancelled: the agent has it
    valve.release()
    second.open()
    expect(page.locator("#entries .kind-assistant")).to_have_text(["Worked.", "ok"])
    expect(page.get_by_label("Message")).to_have_value(DRAFT)
