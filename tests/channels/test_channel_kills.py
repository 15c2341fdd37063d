"""L3 end to end: a real Gateway process polls a Telegram channel (the loopback Bot API server) while a
paired sender writes, and is SIGKILLed at random moments: every message is answered, in order, and none
is given to the session twice.

Replies: one per message. A reply may be sent twice only when a kill lands between Telegram's answer to
``sendMessage`` and the record of its delivery (the Bot API has no idempotency key to tell); the test
bounds such repeats by the number of kills and checks that each repeat is the same reply again.
"""

from __future__ import annotations

import functools
import random
import re
from pathlib import Path

import pytest

from anyy.profiles import create_profile
from anyy.profiles.channels_file import ChannelSettings, save_channels
from tests.fakes.telegram_api import FakeTelegram, Sent
from tests.killtest.gateway_process import GatewayProcess

TOKEN = "424242:kill-test-token-abcdefgh"
OWNER = 77
MESSAGES = 30
KILLS = 8


def _answered(sent: list[Sent]) -> list[str]:
    """The message names the replies answer (or say were interrupted), in the order they were sent."""
    return [found[1] for found in (re.search(r"«(m\d{3})»", s.text) for s in sent) if found]


def _at_least(count: int, sent: list[Sent]) -> bool:
    return len(set(_answered(sent))) >= count


def test_l3_telegram_messages_answered_once_in_order_across_sigkills(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TG_TOKEN", TOKEN)
    home = tmp_path / "home"
    profile = create_profile(home, "default")
    telegram = FakeTelegram(TOKEN).start()
    gateway = GatewayProcess(home, "default", cwd=tmp_path, log=tmp_path / "gateway.log")
    try:
        gateway.start()
        session_id = gateway.client().call("session.create")["id"]
        settings = ChannelSettings(
            kind="telegram", token_env="TG_TOKEN", session=session_id, api_url=telegram.url, poll_seconds=5
        )
        save_channels(profile.path, {"tg": settings})
        gateway.client().call("channel.reload")
        telegram.say(OWNER, "hello")
        code = re.search(r"code is ([A-Z0-9]{8})", telegram.wait_sent(1)[0].text)
        assert code
        gateway.client().call("channel.pair", code=code[1])
        telegram.wait_sent(2)
        chance = random.Random(29)
        names = [f"m{n:03d}" for n in range(MESSAGES)]
        per_round = MESSAGES // KILLS
        said = 0
        for _ in range(KILLS):
            for name in names[said : said + per_round]:
                telegram.say(OWNER, name)
            said += per_round
            # Kill at once, or once some replies went out: the kill lands before, during or after the work.
            want = min(len(set(_answered(telegram.sent))) + chance.randint(0, per_round), said)
            telegram.wait_until(functools.partial(_at_least, want))
            gateway.kill()
            gateway.start()
        for name in names[said:]:
            telegram.say(OWNER, name)
        sent = telegram.wait_until(lambda sent: set(_answered(sent)) == set(names), timeout=120)
        answered = _answered(sent)
        assert list(dict.fromkeys(answered)) == names  # in order
        replies = [s.text for s in sent[2:]]
        assert len(replies) - len(set(replies)) <= KILLS  # only a kill between a send and its record repeats
        # A repeat is the reply just sent, sent again first thing after the restart (the outbox is in order).
        assert all(replies[i - 1] == text for i, text in enumerate(replies) if text in replies[:i])
        users = gateway.client().call("session.history", session_id=session_id, limit=500)["items"]
        given = [e["text"] for e in users if e["kind"] == "user"][::-1]
        assert given == names  # each message given to the session once, in order
    finally:
        gateway.stop()
        telegram.stop()
