"""Q2 in the TUI: ``/attach PATH`` uploads a file through the Gateway's ``/upload`` route and lists it above
the editor; ``/detach`` removes it; the next message carries what is listed, and a failed send keeps it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.live import StartGateway
from tests.tui.pilot import TIMEOUT, make_app, notices, opened, type_text, until

pytestmark = pytest.mark.anyio


async def test_q2_attach_lists_the_file_detach_removes_it_and_send_carries_it(
    start_gateway: StartGateway, tmp_path: Path
) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("milk, eggs\n")
    other = tmp_path / "other.md"
    other.write_text("# other\n")
    live = start_gateway()
    app = make_app(live)
    async with app.run_test(size=(120, 30)) as pilot:
        await opened(app)
        bar = app.query_one("#attachments")
        await type_text(pilot, f"/attach {notes}")
        await pilot.press("enter")
        await until(app, lambda: len(app.state.attachments) == 1, TIMEOUT)
        await type_text(pilot, f"/attach {other}")
        await pilot.press("enter")
        await until(app, lambda: len(app.state.attachments) == 2, TIMEOUT)
        shown = str(bar.render())
        assert "1. notes.txt (11 B)" in shown
        assert "2. other.md" in shown
        assert bar.has_class("has-files")
        await type_text(pilot, "/detach 2")
        await pilot.press("enter")
        await until(app, lambda: [a.name for a in app.state.attachments] == ["notes.txt"])
        await type_text(pilot, f"/attach {tmp_path / 'missing.txt'}")
        await pilot.press("enter")
        await until(app, lambda: "/attach: no file" in notices(app))
        await type_text(pilot, "what is on the list?")
        await pilot.press("enter")
        await until(app, lambda: not app.state.attachments and not bar.has_class("has-files"), TIMEOUT)
        await until(app, lambda: not app.busy, TIMEOUT)
        with live.client() as client:
            items = client.call("session.history", {"session_id": app.session_id})["items"]
        (user,) = [item for item in items if item["kind"] == "user"]
        attached = user["data"]["attachments"]
        assert [(a["name"], a["size"], a["media_type"]) for a in attached] == [("notes.txt", 11, "text/plain")]
