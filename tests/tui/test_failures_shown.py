"""A failure is shown when it happens, every time, even when its
text is the same as an earlier turn's (the notices of earlier turns never hide it)."""

from __future__ import annotations

import pytest

from tests.cli.live import BROKEN_PROVIDER, StartGateway
from tests.tui.pilot import TIMEOUT, make_app, new_session, notices, opened, type_text, until

pytestmark = pytest.mark.anyio


async def test_tui_shows_a_failure_whose_text_matches_an_earlier_one(start_gateway: StartGateway) -> None:
    live = start_gateway(config_extra=BROKEN_PROVIDER, retries=False)
    app = make_app(live, session_id=new_session(live, provider="broken", model="m"))
    async with app.run_test(size=(100, 30)) as pilot:
        await opened(app)
        await type_text(pilot, "hello")
        await pilot.press("enter")
        await until(app, lambda: "failed" in notices(app) and not app.busy, TIMEOUT)
        first = notices(app).count("\n") + 1
        await type_text(pilot, "again")
        await pilot.press("enter")
        await until(app, lambda: notices(app).count("\n") + 1 > first and not app.busy, TIMEOUT)
        lines = notices(app).splitlines()
        failures = [line for line in lines if "failed" in line]
        assert len(failures) == 2, lines
        assert failures[0] == failures[1]
