"""The TUI against a real Gateway on loopback with the offline model: opening, streaming, the editor
(SPEC B2, B3), and finding or starting the Gateway."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from anyy.api.entries import AssistantData, EntryData, EntryKindName, EntryView, ToolCallData, UserData
from anyy.cli.main import main
from anyy.client.launch import ensure_gateway
from anyy.profiles import get_profile
from anyy.tui.conversation import Message
from anyy.tui.history import screenful
from tests.cli.live import StartGateway, run
from tests.tui.pilot import TIMEOUT, make_app, notices, opened, type_text, until

pytestmark = pytest.mark.anyio


def messages(app, role: str) -> list[str]:
    return [m.text for m in app.query(Message) if m.role == role]


async def test_b2_anyy_opens_a_new_session_and_streams_the_answer(start_gateway: StartGateway) -> None:
    live = start_gateway()
    app = make_app(live)
    async with app.run_test(size=(100, 30)) as pilot:
        await opened(app)
        status = app.status.describe()
        assert app.session_id in status
        assert "role default" in status
        assert "offline/offline" in status
        assert status.endswith("idle")
        await type_text(pilot, "hello tui")
        await pilot.press("enter")
        await until(app, lambda: any("You said" in t for t in messages(app, "assistant")), TIMEOUT)
        await until(app, lambda: not app.busy, TIMEOUT)
        assert messages(app, "user") == ["hello tui"]
        assert "«hello tui»" in messages(app, "assistant")[0]
        assert app.editor.text == ""


async def test_b2_editor_shift_enter_and_ctrl_j_insert_newlines(start_gateway: StartGateway) -> None:
    live = start_gateway()
    app = make_app(live)
    async with app.run_test(size=(100, 30)) as pilot:
        await opened(app)
        await pilot.press("a", "shift+enter", "b", "ctrl+j", "c")
        assert app.editor.text == "a\nb\nc"
        with live.client() as client:
            assert client.call("session.list", {})["items"] == []  # nothing sent, nothing created


async def test_b2_resume_opens_an_existing_session_with_its_history(start_gateway: StartGateway) -> None:
    live = start_gateway()
    with live.client() as client:
        session = client.call("session.create", {})
        sub = client.call("session.send", {"session_id": session["id"], "text": "first words"})
        client.call("session.wait", {"submission_id": sub["id"], "timeout": TIMEOUT})
    app = make_app(live, session_id=session["id"])
    async with app.run_test(size=(100, 30)):
        await opened(app)
        assert app.session_id == session["id"]
        assert messages(app, "user") == ["first words"]
        assert "«first words»" in messages(app, "assistant")[0]


async def test_b2_resume_shows_the_page_in_order_newest_as_textual_markdown_older_cheaper(
    start_gateway: StartGateway,
) -> None:
    """Performance (issue 6): the page is mounted in one batch; only a screenful is Textual Markdown."""
    live = start_gateway()
    words = [f"words {i}" for i in range(8)]
    with live.client() as client:
        session = client.call("session.create", {})
        for text in words:
            sub = client.call("session.send", {"session_id": session["id"], "text": text})
            client.call("session.wait", {"submission_id": sub["id"], "timeout": TIMEOUT})
    app = make_app(live, session_id=session["id"])
    async with app.run_test(size=(100, 12)) as pilot:
        await opened(app)
        assert messages(app, "user") == words
        shown = list(app.query(Message))
        assert len(shown) == 16
        assert shown[-1].markdown is not None
        assert shown[-1].role == "assistant"
        assert shown[0].markdown is None
        assert shown[0].text == "words 0"
        rich = [m.markdown is not None for m in shown]
        assert rich == sorted(rich)  # the cheap ones are all older than the Textual Markdown ones
        app.conversation.scroll_home(animate=False)
        await pilot.pause()
        assert "words&#160;0" in app.export_screenshot()  # the cheap ones show their text too


def entry(kind: EntryKindName, text: str) -> EntryView:
    data: EntryData = ToolCallData(call_id="c", name="shell")
    if kind in ("user", "assistant"):
        data = UserData() if kind == "user" else AssistantData()
    return EntryView(id=1, parent=None, kind=kind, text=text, data=data, created_at=0.0, object=None)


def test_screenful_counts_the_newest_entries_that_fill_the_screen() -> None:
    line = entry("user", "x")  # 1 row + the margin
    assert screenful([line] * 10, 80, 6) == 3
    assert screenful([line] * 2, 80, 6) == 2
    long = entry("assistant", "y" * 200)  # 200 // 76 -> 3 rows + the margin
    assert screenful([long, line, line], 80, 4) == 1
    assert screenful([entry("tool_call", "z\n" * 50)] * 5, 80, 4) == 2
    assert screenful([], 80, 30) == 0


async def test_b2_resume_of_an_unknown_session_fails_with_the_gateways_message(start_gateway: StartGateway) -> None:
    live = start_gateway()
    app = make_app(live, session_id="ses_doesnotexist")
    async with app.run_test(size=(100, 30)):
        await until(app, lambda: app.failure is not None, TIMEOUT)
    assert "ses_doesnotexist" in str(app.failure)


async def test_b3_role_starts_a_new_session_with_that_role_and_unknown_role_fails(
    start_gateway: StartGateway,
) -> None:
    live = start_gateway()
    app = make_app(live, role="no-such-role")
    async with app.run_test(size=(100, 30)):
        await until(app, lambda: app.failure is not None, TIMEOUT)
    assert "no-such-role" in str(app.failure)
    app = make_app(live, role="default")
    async with app.run_test(size=(100, 30)):
        await opened(app)
        assert app.state.session is not None
        assert app.state.session.role == "default"


def test_b3_resume_with_role_is_a_usage_error() -> None:
    result = CliRunner().invoke(main, ["--resume", "ses_x", "--role", "scribe"])
    assert result.exit_code == 2
    assert "keeps its own role" in result.output
    result = CliRunner().invoke(main, ["--role", "scribe", "sessions", "list"])
    assert result.exit_code == 2


def test_b2_the_tui_starts_the_profiles_gateway_when_none_runs(home: Path) -> None:
    assert run(home, "profile", "create", "solo").returncode == 0
    try:
        address, note = ensure_gateway(get_profile(home, "solo"))
        assert note is not None
        assert "Started the Gateway of profile solo" in note
        again, second = ensure_gateway(get_profile(home, "solo"))
        assert second is None
        assert again.port == address.port
    finally:
        run(home, "gateway", "stop", "--profile", "solo")


async def test_b2_start_note_is_shown(start_gateway: StartGateway) -> None:
    live = start_gateway()
    app = make_app(live, note="Started the Gateway of profile default")
    async with app.run_test(size=(100, 30)):
        await opened(app)
        assert "Started the Gateway" in notices(app)
