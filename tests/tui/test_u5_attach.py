"""U5 in the TUI: a file attached with ``/attach`` reaches the model (the offline model of a real Gateway
quotes the file's text it received), and an image for a model that reads text only is refused at attach
time with the reason, nothing uploaded."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.live import StartGateway
from tests.tui.pilot import TIMEOUT, make_app, notices, opened, type_text, until

pytestmark = pytest.mark.anyio


async def test_u5_tui_attach_gives_the_files_text_to_the_model(start_gateway: StartGateway, tmp_path: Path) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("milk, eggs\n")
    live = start_gateway()
    app = make_app(live)
    async with app.run_test(size=(120, 30)) as pilot:
        await opened(app)
        await type_text(pilot, f"/attach {notes}")
        await pilot.press("enter")
        await until(app, lambda: len(app.state.attachments) == 1, TIMEOUT)
        await type_text(pilot, "list?")
        await pilot.press("enter")
        await until(app, lambda: not app.state.attachments, TIMEOUT)
        await until(app, lambda: not app.busy, TIMEOUT)
        with live.client() as client:
            items = client.call("session.history", {"session_id": app.session_id})["items"]
        (answer,) = [item for item in items if item["kind"] == "assistant"]
        assert '[Attached file "notes.txt" (text file, 11 bytes).' in answer["text"]
        assert "milk, eggs" in answer["text"]


async def test_u5_tui_refuses_an_image_for_a_text_only_model_at_attach_time(
    start_gateway: StartGateway, tmp_path: Path
) -> None:
    photo = tmp_path / "photo.png"
    photo.write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(16))
    live = start_gateway()
    app = make_app(live)
    async with app.run_test(size=(120, 30)) as pilot:
        await opened(app)
        await type_text(pilot, f"/attach {photo}")
        await pilot.press("enter")
        await until(app, lambda: "photo.png was not attached: the model" in notices(app), TIMEOUT)
        assert "reads text only and cannot take images" in notices(app)
        assert app.state.attachments == []
    objects = live.home / "profiles" / "default" / "objects"
    assert not any(p.is_file() for p in objects.rglob("*")) if objects.exists() else True  # nothing uploaded
