"""Codemode in the conversation (SPEC M6): the tools a ``run_script`` script calls are tool activity, listed
under the script's own activity, live as the Gateway announces them and from the recorded result when the
history is read. Against a real Gateway on loopback; the model is the fake OpenAI-compatible server,
scripted to call ``run_script``; the script waits on a FIFO the test writes to, never on a sleep."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from anyy.tui.app import AnyyApp
from anyy.tui.conversation import Message
from anyy.tui.tool_activity import ToolActivity, call_text
from tests.cli.live import GatewayProcess, StartGateway
from tests.fakes.model_server import FakeModelServer, Reply, ToolCall
from tests.tui.pilot import TIMEOUT, click_on, make_app, opened, type_text, until

pytestmark = pytest.mark.anyio

MISSING = "no-such-file-m6.txt"


@contextlib.contextmanager
def fake_model() -> Iterator[FakeModelServer]:
    server = FakeModelServer()
    server.start()
    try:
        yield server
    finally:
        server.stop()


@contextlib.contextmanager
def held_fifo(path: Path) -> Iterator[int]:
    """A FIFO kept open for reading and writing by the test: a reader in the script blocks until the test
    writes a line to the returned descriptor (the data waits in the pipe if the reader comes later)."""
    os.mkfifo(path)
    fd = os.open(path, os.O_RDWR)
    try:
        yield fd
    finally:
        os.close(fd)


def fake_provider(server: FakeModelServer) -> str:
    """The profile's config for a provider named ``fake``: the fake server, OpenAI-compatible."""
    return f'\n[providers.fake]\nkind = "openai"\nbase_url = "{server.openai_url}"\n'


def codemode_session(live: GatewayProcess) -> str:
    """A session on the ``fake`` provider with Codemode on: the model sees ``run_script`` only."""
    with live.client() as client:
        session = client.call("session.create", {})
        client.call("session.settings", {"session_id": session["id"], "provider": "fake", "model": "m"})
        client.call(
            "session.tools.configure",
            {"session_id": session["id"], "enabled": ["read_file", "shell"], "codemode": True},
        )
        return str(session["id"])


def the_activity(app: AnyyApp) -> ToolActivity:
    activities = list(app.query(ToolActivity))
    assert len(activities) == 1, "the script's calls are lines of its activity, not activities of their own"
    return activities[0]


def assistant_texts(app: AnyyApp) -> list[str]:
    return [m.text for m in app.query(Message) if m.role == "assistant"]


async def test_m6_codemode_inner_calls_shown_under_the_script(start_gateway: StartGateway, tmp_path: Path) -> None:
    fifo = tmp_path / "release"
    waiting = call_text("shell", {"command": f"head -n 1 {fifo}"})  # the path may be long: shortened
    script = (
        'print(tools.shell(command="echo hello from the script"))\n'
        "try:\n"
        f'    tools.read_file(path="{MISSING}")\n'
        "except ToolError as error:\n"
        '    print("missing:", error)\n'
        f'print(tools.shell(command="head -n 1 {fifo}"))\n'
    )
    with fake_model() as server, held_fifo(fifo) as release:
        # The FIFO is in the host's /tmp, which the sandbox replaces with its own: programs run unconfined here.
        live = start_gateway(config_extra=fake_provider(server) + "\n[tools.sandbox]\nenabled = false\n")
        session_id = codemode_session(live)
        server.enqueue(
            Reply(tool_calls=[ToolCall("run_script", {"script": script}, "script-1")]),
            Reply(text=["The script ran."]),
        )
        app = make_app(live, session_id=session_id)
        async with app.run_test(size=(120, 40)) as pilot:
            await opened(app)
            await type_text(pilot, "run the script")
            await pilot.press("enter")

            # Live: the script waits on the FIFO in its third call; the first two have finished.
            def live_lines_shown() -> bool:
                activities = list(app.query(ToolActivity))
                return bool(activities) and [c.outcome for c in activities[0].inner] == ["ok", "error", "running…"]

            await until(app, live_lines_shown, TIMEOUT)
            activity = the_activity(app)
            assert activity.outcome == "running…"
            assert str(activity.render()).splitlines()[1:4] == [
                "  ↳ shell(command=echo hello from the script) → ok",
                f"  ↳ read_file(path={MISSING}) → error",
                f"  ↳ {waiting} → running…",
            ]

            os.write(release, b"go on\n")
            await until(app, lambda: not app.busy and "The script ran." in assistant_texts(app), TIMEOUT)
            activity = the_activity(app)
            assert activity.outcome == "done"
            shown = str(activity.render())
            assert shown.startswith("⚙ run_script(script=print(tools.shell(")
            assert f"  ↳ {waiting} → ok" in shown
            assert not any(line.startswith("    │ ") for line in shown.splitlines())  # the calls' results: folded
            assert activity.collapsed
            assert "what the calls returned" in shown

            await click_on(pilot, activity)  # expanded: each call with the beginning of what it returned
            await until(app, lambda: activity.expanded, TIMEOUT)
            expanded = str(activity.render()).splitlines()
            first = expanded.index("  ↳ shell(command=echo hello from the script) → ok")
            assert expanded[first + 1] == "    │ hello from the script"
            second = expanded.index(f"  ↳ read_file(path={MISSING}) → error")
            assert expanded[second + 1].startswith("    │ ")
            assert MISSING in expanded[second + 1]
            third = expanded.index(f"  ↳ {waiting} → ok")
            assert "    │ go on" in expanded[third + 1 : third + 3]  # after the whole command, if it was cut

    # From the history: the same lines, from the result's inner_calls.
    again = make_app(live, session_id=session_id)
    async with again.run_test(size=(120, 40)):
        await opened(again)
        activity = the_activity(again)
        assert activity.outcome == "done"
        calls = [(c.name, c.outcome) for c in activity.inner]
        assert calls == [("shell", "ok"), ("read_file", "error"), ("shell", "ok")]
        assert str(activity.render()).splitlines()[1:4] == [
            "  ↳ shell(command=echo hello from the script) → ok",
            f"  ↳ read_file(path={MISSING}) → error",
            f"  ↳ {waiting} → ok",
        ]
        assert activity.collapsed
