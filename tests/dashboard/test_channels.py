"""L1, L2 in the Dashboard: the Background tab lists the profile's channels with their state, what they
feed and their senders; a pairing code waiting is approved with one click, and the sender is told."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import expect

from anyy.profiles.channels_file import ChannelSettings, save_channels
from tests.dashboard.conftest import Dashboard
from tests.fakes.telegram_api import FakeTelegram

TOKEN = "8080:dashboard-test-token-qwerty"


@pytest.fixture
def telegram(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeTelegram]:
    monkeypatch.setenv("TG_TOKEN", TOKEN)  # read by the channel when it starts, in the Gateway's process
    fake = FakeTelegram(TOKEN).start()
    yield fake
    fake.stop()


def test_l2_dashboard_background_tab_lists_channels_and_approves_a_pairing_code(
    dashboard: Dashboard, telegram: FakeTelegram
) -> None:
    live = dashboard.live
    session_id = live.call("session.create", {"title": "phone inbox", "kind": "background"})["id"]
    settings = ChannelSettings(kind="telegram", token_env="TG_TOKEN", session=session_id, api_url=telegram.url)
    save_channels(live.profile.path, {"phone": settings})
    live.call("channel.reload")
    telegram.say(31, "hello", username="<b>eve</b>")
    assert "pairing code" in telegram.wait_sent(1)[0].text

    page = dashboard.open()
    expect(page.locator("#channels")).to_be_hidden()  # the Chats tab
    page.get_by_role("tab", name="Background").click()
    channel = page.locator("#channels li.channel")
    expect(channel).to_have_count(1)
    expect(channel.locator(".state")).to_have_text("polling")
    expect(channel.locator(".meta")).to_have_text(f"feeds session {session_id} · 0 senders · 1 code waiting")
    code = channel.locator("li.code")
    expect(code).to_contain_text("@<b>eve</b> asks to pair")  # the platform's name, shown as text
    code.get_by_role("button", name="Approve").click()
    expect(channel.locator(".meta")).to_have_text(f"feeds session {session_id} · 1 sender · 0 codes waiting")
    assert "You are paired" in telegram.wait_sent(2)[1].text
    page.get_by_role("tab", name="Chats").click()
    expect(page.locator("#channels")).to_be_hidden()
