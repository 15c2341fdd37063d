"""W1 in the TUI, against a real Gateway process: a new session works in the directory the TUI was started
in (or ``--cwd``), the status line shows it, and ``/cwd DIR`` moves an idle session (a relative DIR taken
from the TUI's directory; a folder that does not exist is refused, nothing changes)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from anyy.tui.app import AnyyApp
from tests.cli.live import GatewayProcess, StartGateway
from tests.tui.pilot import TIMEOUT, make_app, notices, opened, type_text, until

pytestmark = pytest.mark.anyio


async def line(pilot: Any, text: str) -> None:
    await type_text(pilot, text)
    await pilot.press("enter")


def workspace_of(live: GatewayProcess, session_id: str) -> str:
    with live.client() as client:
        return str(client.call("session.get", {"session_id": session_id})["session"]["workspace"])


async def test_w1_the_tui_works_in_its_directory_shows_it_and_moves_with_cwd(
    start_gateway: StartGateway, tmp_path: Path
) -> None:
    live = start_gateway()
    project = tmp_path / "tui project"
    (project / "docs").mkdir(parents=True)
    real = os.path.realpath(project)
    app: AnyyApp = make_app(live, workspace=str(project))
    async with app.run_test(size=(160, 30)) as pilot:
        await opened(app)
        assert str(project) in app.status.describe()
        await line(pilot, "run: pwd")
        await until(app, lambda: bool(app.state.session_id) and not app.busy and app.state.usage is not None)
        session_id = app.state.session_id
        assert session_id
        assert workspace_of(live, session_id) == real
        assert real in app.status.describe()

        cwd = os.getcwd()
        os.chdir(project)  # /cwd DIR takes a relative DIR from the TUI's own directory
        try:
            await line(pilot, "/cwd docs")
            await until(app, lambda: "now works in" in notices(app), TIMEOUT)
            await line(pilot, "/cwd missing")
            await until(app, lambda: "/cwd: not changed" in notices(app), TIMEOUT)
        finally:
            os.chdir(cwd)
        assert workspace_of(live, session_id) == f"{real}/docs"
        assert f"{real}/docs" in app.status.describe()
        assert "does not exist" in notices(app)
