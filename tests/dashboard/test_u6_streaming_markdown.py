"""U6 in the Dashboard: a streaming answer's Markdown is rendered block by block while it streams (a
heading and a table are HTML before the answer ends, rendered and sanitised by the Gateway as the recorded
entry is), the block being written is shown as text, and model HTML stays inert."""

from __future__ import annotations

from playwright.sync_api import expect

from anyy.domain.model_io import TextDelta
from anyy.providers.gates import Gate
from tests.dashboard.conftest import Dashboard
from tests.dashboard.test_conversation import open_new_session, send_from_page
from tests.gateway.live import wait_gate

DONE = '# Report\n\n| name | score |\n|---|---|\n| Ada | 9 |\n\n<img src=x onerror="window.pwned=1">\n\n'
OPEN = "Still writing | this"


def test_u6_markdown_is_rendered_progressively_while_it_streams(dashboard: Dashboard) -> None:
    live = dashboard.live
    page, _ = open_new_session(dashboard)
    gate = Gate("held")
    live.model.enqueue([TextDelta(text=DONE), TextDelta(text=OPEN), gate, TextDelta(text=" line.")])
    send_from_page(page, "report please")
    box = page.locator("#live")
    expect(box.locator(".open-block")).to_have_text(OPEN)
    wait_gate(gate)
    expect(box.locator("h1")).to_have_text("Report")  # complete blocks are rendered while it streams
    expect(box.locator("table td")).to_have_text(["Ada", "9"])
    assert "| name |" not in box.inner_text()
    assert box.locator("img").count() == 0
    assert page.evaluate("window.pwned") is None
    gate.open()
    entry = page.locator("#entries .kind-assistant")
    expect(entry.locator("table td")).to_have_text(["Ada", "9"])
    expect(entry).to_contain_text("Still writing | this line.")
    expect(box).to_be_hidden()
