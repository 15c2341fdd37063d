"""K4 in the TUI: the /sessions Background tab shows what started each session, and Ctrl+R on a
scheduled run's session lists its schedule's runs (Enter opens one)."""

from __future__ import annotations

from typing import Any

import pytest
from textual.widgets import OptionList

from anyy.tui.screens import SessionPicker
from tests.cli.live import StartGateway
from tests.tui.pilot import TIMEOUT, make_app, opened, type_text, until

pytestmark = pytest.mark.anyio


def _options(picker: SessionPicker) -> list[tuple[str, str]]:
    options = picker.query_one(OptionList)
    found = [options.get_option_at_index(i) for i in range(options.option_count)]
    return [(str(o.id), str(o.prompt)) for o in found]


async def test_k4_background_tab_shows_origins_and_ctrl_r_lists_a_schedules_runs(
    start_gateway: StartGateway,
) -> None:
    live = start_gateway()
    with live.client() as client:
        client.call("schedule.create", {"name": "daily summary", "prompt": "Sum up.", "at": 4_102_444_800.0})
        runs = [client.call("schedule.run_now", {"schedule": "daily summary"}) for _ in range(2)]
        for run in runs:
            client.call("session.wait", {"submission_id": run["submission_id"], "timeout": TIMEOUT})
        by_hand = client.call("session.create", {"kind": "background", "title": "by hand"})["id"]
    app = make_app(live)
    async with app.run_test(size=(160, 40)) as pilot:
        await opened(app)
        await type_text(pilot, "/sessions")
        await pilot.press("enter")
        await until(app, lambda: isinstance(app.screen, SessionPicker), TIMEOUT)
        picker: Any = app.screen
        await until(app, lambda: picker.loaded >= 1, TIMEOUT)
        await pilot.press("tab")
        await until(app, lambda: len(_options(picker)) == 3, TIMEOUT)
        shown = dict(_options(picker))
        assert "schedule daily summary" in shown[runs[0]["session_id"]]
        assert "schedule" not in shown[by_hand]
        first = next(i for i, (sid, _) in enumerate(_options(picker)) if sid == runs[1]["session_id"])
        picker.query_one(OptionList).highlighted = first
        await pilot.press("ctrl+r")
        wanted = [runs[1]["session_id"], runs[0]["session_id"]]  # newest run first
        await until(app, lambda: [sid for sid, _ in _options(picker)] == wanted, TIMEOUT)
        assert all("completed" in text for _, text in _options(picker))
        picker.query_one(OptionList).highlighted = 1
        await pilot.press("enter")
        await until(app, lambda: app.session_id == runs[0]["session_id"], TIMEOUT)


def _index(picker: SessionPicker, session_id: str) -> int:
    return next(i for i, (sid, _) in enumerate(_options(picker)) if sid == session_id)


async def _open_picker(app: Any, pilot: Any) -> Any:
    await type_text(pilot, "/sessions")
    await pilot.press("enter")
    await until(app, lambda: isinstance(app.screen, SessionPicker), TIMEOUT)
    picker: Any = app.screen
    await until(app, lambda: picker.loaded >= 1, TIMEOUT)
    return picker


async def test_k4_background_tab_shows_state_and_ctrl_r_ctrl_t_list_a_parents_delegated_tasks(
    start_gateway: StartGateway,
) -> None:
    live = start_gateway()
    with live.client() as client:
        parent = client.call("session.create", {"title": "research"})["id"]
        client.call("session.tools.configure", {"session_id": parent, "enabled": ["delegate"]})
        sent = client.call(
            "session.send", {"session_id": parent, "text": "delegate: find the papers; sum up the notes"}
        )
        assert client.call("session.wait", {"submission_id": sent["id"], "timeout": TIMEOUT})["state"] == "completed"
        children = [task["child_session_id"] for task in client.call("session.children", {"session_id": parent})]
        asking = client.call("session.create", {"kind": "background", "title": "asking"})["id"]
        client.call("session.tools.configure", {"session_id": asking, "enabled": ["ask_user"]})
        sent = client.call("session.send", {"session_id": asking, "text": "Which branch, ask me?"})
        assert client.call("session.wait", {"submission_id": sent["id"], "timeout": TIMEOUT})["state"] == "suspended"
    app = make_app(live)
    async with app.run_test(size=(160, 40)) as pilot:
        await opened(app)
        picker = await _open_picker(app, pilot)
        await pilot.press("tab")
        await until(app, lambda: len(_options(picker)) == 3, TIMEOUT)
        shown = dict(_options(picker))
        assert "? waiting for an answer" in shown[asking]
        assert "✓ idle · last: completed" in shown[children[0]]
        assert f"delegated by {parent} (Ctrl+R: the parent's tasks)" in shown[children[0]]
        picker.query_one(OptionList).highlighted = _index(picker, children[1])
        await pilot.press("ctrl+r")
        await until(app, lambda: [sid for sid, _ in _options(picker)] == [parent, *children], TIMEOUT)
        listed = dict(_options(picker))
        assert "finished" in listed[children[0]]
        assert "find the papers" in listed[children[0]]
        picker.query_one(OptionList).highlighted = 0
        await pilot.press("enter")
        await until(app, lambda: app.session_id == parent, TIMEOUT)

        picker = await _open_picker(app, pilot)  # the Chats tab: the parent's own tasks with Ctrl+T
        await until(app, lambda: parent in dict(_options(picker)), TIMEOUT)
        picker.query_one(OptionList).highlighted = _index(picker, parent)
        await pilot.press("ctrl+t")
        await until(app, lambda: [sid for sid, _ in _options(picker)] == children, TIMEOUT)
        picker.query_one(OptionList).highlighted = 1
        await pilot.press("enter")
        await until(app, lambda: app.session_id == children[1], TIMEOUT)
