"""Slash commands, key by key, against a real Gateway with the offline model: /new, /help, /sessions,
/tree, /provider, /model, /effort (SPEC B2, S5, T1, T2, M1, X2, X4)."""

from __future__ import annotations

from typing import Any

import pytest
from textual.widgets import OptionList, Static

from anyy.tui.app import AnyyApp
from anyy.tui.conversation import Message
from anyy.tui.screens import MORE, PICKER_PAGE, ChoiceScreen, ConfirmScreen, HelpScreen, SessionPicker, TreeScreen
from tests.cli.live import GatewayProcess, Hold, StartGateway
from tests.tui.pilot import TIMEOUT, make_app, notices, opened, type_text, until

pytestmark = pytest.mark.anyio

WAIT_OR_STOP = "wait for the response to finish, or stop it (Ctrl+C) first"


def messages(app: AnyyApp, role: str) -> list[str]:
    return [m.text for m in app.query(Message) if m.role == role]


async def command(app: AnyyApp, pilot: Any, line: str) -> None:
    await type_text(pilot, line)
    await pilot.press("enter")


async def screen_is(app: AnyyApp, kind: type) -> Any:
    await until(app, lambda: isinstance(app.screen, kind), TIMEOUT)
    return app.screen


async def back_on_main(app: AnyyApp) -> None:
    await until(app, lambda: len(app.screen_stack) == 1, TIMEOUT)


async def start_slow_turn(app: AnyyApp, pilot: Any) -> str:
    app.editor.insert(Hold.until_stopped().command)  # ended by the test's stop
    await pilot.press("enter")
    await until(app, lambda: app.busy, TIMEOUT)
    assert app.state.running is not None
    return app.state.running


def two_turn_session(live: GatewayProcess) -> str:
    with live.client() as client:
        session = client.call("session.create", {})
        for text in ("one", "two"):
            sub = client.call("session.send", {"session_id": session["id"], "text": text})
            client.call("session.wait", {"submission_id": sub["id"], "timeout": TIMEOUT})
        return str(session["id"])


def tree_of(live: GatewayProcess, session_id: str) -> dict[str, Any]:
    with live.client() as client:
        return client.call("session.tree", {"session_id": session_id})  # type: ignore[no-any-return]


async def test_b2_slash_new_starts_a_new_session(start_gateway: StartGateway) -> None:
    live = start_gateway()
    app = make_app(live)
    async with app.run_test(size=(100, 30)) as pilot:
        await opened(app)
        await command(app, pilot, "hello")
        await until(app, lambda: bool(messages(app, "assistant")) and not app.busy, TIMEOUT)
        first = app.session_id
        await command(app, pilot, "/new")
        await until(app, lambda: app.session_id != first, TIMEOUT)
        assert messages(app, "user") == []
        assert app.editor.text == ""
        assert "new session" in app.status.describe()  # made by its first message (U1)
        await command(app, pilot, "again")
        await until(app, lambda: bool(messages(app, "assistant")) and not app.busy, TIMEOUT)
        assert app.session_id in app.status.describe()
        with live.client() as client:
            ids = [s["id"] for s in client.call("session.list", {"kind": "chat"})["items"]]
        assert set(ids) == {first, app.session_id}


async def test_b2_unknown_command_is_not_sent(start_gateway: StartGateway) -> None:
    live = start_gateway()
    app = make_app(live)
    async with app.run_test(size=(100, 30)) as pilot:
        await opened(app)
        await command(app, pilot, "/nope")
        await until(app, lambda: "Unknown command /nope" in notices(app), TIMEOUT)
        assert app.editor.text == "/nope"
        with live.client() as client:
            assert client.call("session.list", {})["items"] == []  # nothing sent, nothing created


async def test_b2_s5_help_lists_keys_and_commands_and_esc_closes_it_before_stopping(
    start_gateway: StartGateway,
) -> None:
    live = start_gateway()
    app = make_app(live)
    async with app.run_test(size=(100, 40)) as pilot:
        await opened(app)
        running = await start_slow_turn(app, pilot)
        await command(app, pilot, "/help")
        screen = await screen_is(app, HelpScreen)
        text = str(screen.query_one("#help-text", Static).render())
        for word in ("/new", "/sessions", "/tree", "/provider", "/model", "/effort", "Alt+Up", "Ctrl+C", "Esc"):
            assert word in text
        await pilot.press("escape")  # S5: the help takes Esc; the turn goes on
        await back_on_main(app)
        assert app.state.running == running
        assert "Stopping" not in notices(app)
        await pilot.press("ctrl+c")
        await until(app, lambda: not app.busy, TIMEOUT)


async def test_x2_sessions_and_tree_while_busy_say_wait_or_stop(start_gateway: StartGateway) -> None:
    live = start_gateway()
    app = make_app(live)
    async with app.run_test(size=(100, 30)) as pilot:
        await opened(app)
        await start_slow_turn(app, pilot)
        await command(app, pilot, "/sessions")
        await until(app, lambda: f"/sessions: {WAIT_OR_STOP}" in notices(app), TIMEOUT)
        await command(app, pilot, "/tree")
        await until(app, lambda: f"/tree: {WAIT_OR_STOP}" in notices(app), TIMEOUT)
        await pilot.press("ctrl+t")
        await until(app, lambda: notices(app).count(f"/tree: {WAIT_OR_STOP}") == 2, TIMEOUT)
        assert len(app.screen_stack) == 1  # nothing opened
        assert app.busy
        await pilot.press("ctrl+c")
        await until(app, lambda: not app.busy, TIMEOUT)


def option_ids(screen: Any) -> list[str]:
    options = screen.query_one(OptionList)
    return [str(options.get_option_at_index(i).id) for i in range(options.option_count)]


async def test_s5_sessions_picker_pages_tabs_search_opens_and_esc_closes(start_gateway: StartGateway) -> None:
    live = start_gateway()
    with live.client() as client:
        chats = [client.call("session.create", {"title": f"chat {i}"})["id"] for i in range(PICKER_PAGE + 3)]
        background = client.call("session.create", {"kind": "background", "title": "nightly"})["id"]
        sub = client.call("session.send", {"session_id": chats[0], "text": "zebra crossing"})
        client.call("session.wait", {"submission_id": sub["id"], "timeout": TIMEOUT})
    app = make_app(live)
    async with app.run_test(size=(120, 40)) as pilot:
        await opened(app)
        own = app.session_id
        await command(app, pilot, "/sessions")
        picker: SessionPicker = await screen_is(app, SessionPicker)
        await until(app, lambda: picker.loaded >= 1, TIMEOUT)
        ids = option_ids(picker)
        assert len(ids) == PICKER_PAGE + 1  # one page, then "more"
        assert ids[-1] == MORE
        assert background not in ids
        await pilot.press(*["down"] * PICKER_PAGE, "enter")  # Enter on "more" loads the next page
        await until(app, lambda: MORE not in option_ids(picker), TIMEOUT)
        assert set(option_ids(picker)) == set(chats)  # its own session is a draft, not created yet
        await pilot.press("tab")  # Background
        await until(app, lambda: option_ids(picker) == [background], TIMEOUT)
        await pilot.press("tab")  # back to Chats, then search
        await until(app, lambda: picker.kind == "chat" and len(option_ids(picker)) > 1, TIMEOUT)
        await type_text(pilot, "zebra")
        await until(app, lambda: option_ids(picker) == [chats[0]], TIMEOUT)
        await pilot.press("escape")  # S5: Esc closes the picker; nothing else happens
        await back_on_main(app)
        assert app.session_id == own
        await command(app, pilot, "/sessions")
        picker = await screen_is(app, SessionPicker)
        await until(app, lambda: picker.loaded >= 1, TIMEOUT)
        await type_text(pilot, "zebra")
        await until(app, lambda: option_ids(picker) == [chats[0]], TIMEOUT)
        await pilot.press("enter")
        await until(app, lambda: app.session_id == chats[0] and bool(messages(app, "assistant")), TIMEOUT)
        await back_on_main(app)
        assert messages(app, "user") == ["zebra crossing"]
        assert chats[0] in app.status.describe()


async def test_t1_tree_up_down_enter_selects_and_s_toggles_the_summary(start_gateway: StartGateway) -> None:
    live = start_gateway()
    session_id = two_turn_session(live)
    nodes = tree_of(live, session_id)["nodes"]
    app = make_app(live, session_id=session_id)
    async with app.run_test(size=(120, 40)) as pilot:
        await opened(app)
        await command(app, pilot, "/tree")
        tree: TreeScreen = await screen_is(app, TreeScreen)
        options = tree.query_one(OptionList)
        assert options.option_count == len(nodes) == 4
        assert options.highlighted == 3  # the head
        assert "current position" in str(options.get_option_at_index(3).prompt)
        await pilot.press("escape")  # cancels: nothing moves
        await back_on_main(app)
        assert tree_of(live, session_id)["head"] == nodes[3]["id"]
        await pilot.press("ctrl+t")
        tree = await screen_is(app, TreeScreen)
        await pilot.press("up", "up", "down", "up")  # to the first answer
        assert tree.query_one(OptionList).highlighted == 1
        await pilot.press("s")
        assert tree.summarize
        assert "(on)" in str(tree.query_one("#summary", Static).render())
        await pilot.press("s", "s")
        assert tree.summarize
        await pilot.press("enter")
        await until(app, lambda: "Moved to entry" in notices(app), TIMEOUT)
        await back_on_main(app)
        after = tree_of(live, session_id)
        assert after["head"] != nodes[3]["id"]
        moved = {n["id"]: n for n in after["nodes"]}[after["head"]]
        assert (moved["kind"], moved["parent"]) == ("branch_summary", nodes[1]["id"])  # "s" on: summary written
        assert messages(app, "user") == ["one"]
        assert app.editor.text == ""


async def test_t2_f4_selecting_a_user_message_moves_before_it_puts_its_text_in_the_editor_and_never_forks(
    start_gateway: StartGateway,
) -> None:
    live = start_gateway()
    session_id = two_turn_session(live)
    nodes = tree_of(live, session_id)["nodes"]
    with live.client() as client:
        sessions_before = [s["id"] for s in client.call("session.list", {"limit": 200})["items"]]
    app = make_app(live, session_id=session_id)
    async with app.run_test(size=(120, 40)) as pilot:
        await opened(app)
        await type_text(pilot, "my draft")
        await pilot.press("ctrl+t")  # the tree by key keeps the draft in the editor
        await screen_is(app, TreeScreen)
        await pilot.press("up", "enter")  # the user message "two"
        await screen_is(app, ConfirmScreen)  # warned about the draft first
        await pilot.press("escape")
        await until(app, lambda: "the draft is kept" in notices(app), TIMEOUT)
        assert app.editor.text == "my draft"
        assert tree_of(live, session_id)["head"] == nodes[3]["id"]
        await pilot.press("ctrl+t")
        await screen_is(app, TreeScreen)
        await pilot.press("up", "enter")
        await screen_is(app, ConfirmScreen)
        await pilot.press("enter")
        await until(app, lambda: app.editor.text == "two", TIMEOUT)
        await back_on_main(app)
        assert tree_of(live, session_id)["head"] == nodes[1]["id"]  # just before "two"
        assert messages(app, "user") == ["one"]
        app.editor.clear()
        await command(app, pilot, "/tree")
        await screen_is(app, TreeScreen)
        await pilot.press("up", "enter")  # "one", with an empty editor: no question
        await until(app, lambda: app.editor.text == "one", TIMEOUT)
        assert tree_of(live, session_id)["head"] is None
        assert messages(app, "user") == []
        assert app.session_id == session_id  # F4: /tree moves this session's position; it never forks
    with live.client() as client:
        assert [s["id"] for s in client.call("session.list", {"limit": 200})["items"]] == sessions_before


async def test_m1_provider_model_effort_change_the_current_session_only(start_gateway: StartGateway) -> None:
    live = start_gateway()
    with live.client() as client:
        other = client.call("session.create", {})
    app = make_app(live)
    async with app.run_test(size=(120, 40)) as pilot:
        await opened(app)
        await command(app, pilot, "/effort")
        choice = await screen_is(app, ChoiceScreen)
        assert option_ids(choice) == ["default", "low", "medium", "high"]
        await pilot.press("down", "down", "down", "enter")
        await until(app, lambda: getattr(app.state.session, "effort", None) == "high", TIMEOUT)
        assert "offline/offline (high)" in app.status.describe()
        await command(app, pilot, "/model")
        choice = await screen_is(app, ChoiceScreen)
        assert option_ids(choice) == ["offline\toffline"]
        await pilot.press("escape")
        await back_on_main(app)
        await command(app, pilot, "/provider")
        choice = await screen_is(app, ChoiceScreen)
        assert "openai" in option_ids(choice)
        assert choice.query_one(OptionList).highlighted == option_ids(choice).index("offline")
        await pilot.press("escape")
        await back_on_main(app)
        await command(app, pilot, "/effort low")
        await until(app, lambda: getattr(app.state.session, "effort", None) == "low", TIMEOUT)
        # openai lists no models: the session is left as it is and told to name one (it once became
        # openai/offline, the offline model's name under another provider).
        await command(app, pilot, "/provider openai")
        await until(app, lambda: "lists no models" in notices(app), TIMEOUT)
        assert getattr(app.state.session, "provider", None) == "offline"
        await command(app, pilot, "/provider offline")
        await until(app, lambda: getattr(app.state.session, "provider", None) == "offline", TIMEOUT)
        await command(app, pilot, "/model no-such-model")
        await until(app, lambda: "Not changed" in notices(app), TIMEOUT)
        await command(app, pilot, "hello")  # the first message creates the session with the choices made (U1)
        await until(app, lambda: bool(messages(app, "assistant")) and not app.busy, TIMEOUT)
        refused = notices(app).count("Not changed")
        await command(app, pilot, "/model no-such-model")  # and the Gateway judges them from then on
        await until(app, lambda: notices(app).count("Not changed") == refused + 1, TIMEOUT)
        with live.client() as client:
            mine = client.call("session.get", {"session_id": app.session_id})["session"]
            theirs = client.call("session.get", {"session_id": other["id"]})["session"]
        assert (mine["provider"], mine["model"], mine["effort"]) == ("offline", "offline", "low")
        assert (theirs["provider"], theirs["model"], theirs["effort"]) == (
            other["provider"],
            other["model"],
            other["effort"],
        )
