"""U7 in the Dashboard: the Chats list lives — a session made elsewhere (another tab, the TUI, the CLI)
appears without a reload, each row says what its session does (working, waiting for you, failed, idle) as
it changes, and a new title shows in place."""

from __future__ import annotations

from playwright.sync_api import expect

from anyy.domain.model_io import TextDelta
from anyy.providers.base import ProviderError
from anyy.providers.gates import Gate
from tests.dashboard.conftest import Dashboard
from tests.dashboard.test_conversation import open_new_session
from tests.gateway.live import wait_gate


def test_u7_the_chats_list_lives_new_sessions_states_and_titles(dashboard: Dashboard) -> None:
    live = dashboard.live
    page, _ = open_new_session(dashboard, "here")
    rows = page.locator("#sessions li")
    expect(rows).to_have_count(1)

    gate = Gate("held")
    live.model.enqueue([TextDelta(text="Work"), gate, TextDelta(text="ed.")])
    other = live.call("session.create", {"title": "made elsewhere"})
    live.call("session.send", {"session_id": other["id"], "text": "hello"})
    wait_gate(gate)
    row = page.locator(f'#sessions li[data-id="{other["id"]}"]')
    expect(row.locator(".title")).to_have_text("made elsewhere")  # no reload
    expect(row.locator(".row-state")).to_have_text("working")
    gate.open()
    expect(row.locator(".row-state")).to_have_text("idle")

    live.call("session.rename", {"session_id": other["id"], "title": "renamed elsewhere"})
    expect(row.locator(".title")).to_have_text("renamed elsewhere")

    live.model.enqueue(ProviderError("fatal", "the key was refused"))
    live.call("session.send", {"session_id": other["id"], "text": "again"})
    expect(row.locator(".row-state")).to_have_text("failed")
    expect(row).to_have_attribute("data-state", "failed")
