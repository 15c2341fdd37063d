"""Y3: the TUI's status line says what the session cost and what its last answer cost, from the costs the
Gateway kept with each call (a priced offline model, [prices] in the profile), live and when reopened."""

from __future__ import annotations

import pytest

from anyy.domain.pricing import format_usd
from tests.cli.live import GatewayProcess, StartGateway
from tests.tui.pilot import TIMEOUT, make_app, opened, type_text, until

pytestmark = pytest.mark.anyio

PRICED = "\n[prices.offline]\ninput = 1000\noutput = 1000\n"


def _cost(live: GatewayProcess, session_id: str) -> tuple[int, int]:
    with live.client() as client:
        report = client.call("usage.report", {"by": "session", "session_id": session_id})
    return report["total"]["cost"], report["total"]["calls"]


async def test_y3_status_line_shows_the_session_cost_and_the_last_answers(start_gateway: StartGateway) -> None:
    live = start_gateway(config_extra=PRICED)
    app = make_app(live)
    async with app.run_test(size=(160, 30)) as pilot:
        await opened(app)
        assert "$" not in app.status.describe()  # nothing spent yet
        for sent, text in enumerate(("hello", "and again"), start=1):
            await type_text(pilot, text)
            await pilot.press("enter")
            await until(app, lambda n=sent: app.state.spend.calls >= n, TIMEOUT)  # type: ignore[misc]
            await until(app, lambda: not app.busy, TIMEOUT)
        total, calls = _cost(live, app.session_id)
        assert calls == 2
        last = app.state.spend.last
        assert last is not None
        assert f"{format_usd(total)} (last {format_usd(last)})" in app.status.describe()
        session_id = app.session_id

    reopened = make_app(live, session_id=session_id)
    async with reopened.run_test(size=(160, 30)):
        await opened(reopened)
        await until(reopened, lambda: reopened.state.spend.calls == 2, TIMEOUT)
        assert f"{format_usd(total)} (last {format_usd(last)})" in reopened.status.describe()
