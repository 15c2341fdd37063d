"""L1, L2 through ``anyy channel``: a channel added to the profile is kept in ``channels.toml`` (no token
in it, none on the command line), started by the running Gateway, listed, paired, and removed with what
the Gateway recorded of it. Bad input is refused with what to do, and changes nothing."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from anyy.profiles import get_profile
from anyy.profiles.channels_file import load_channels
from tests.fakes.gateways import StartGateway, run
from tests.fakes.telegram_api import FakeTelegram

TOKEN = "5555:cli-test-token-zyxwvut"


def test_l1_channel_add_refuses_bad_input_and_changes_nothing(home: Path) -> None:
    assert run(home, "profile", "create", "default").returncode == 0
    profile = get_profile(home, "default")
    bad = run(home, "channel", "add", "tg", "--token-env", "not a name", "--session", "ses_1")
    assert bad.returncode != 0
    assert "token_env must name an environment variable" in bad.stderr
    both = run(home, "channel", "add", "tg", "--token-env", "TG", "--session", "ses_1", "--resident", "inbox")
    assert "exactly one of 'session'" in both.stderr
    rights = run(home, "channel", "add", "tg", "--token-env", "TG", "--session", "ses_1", "--rights", "talk,admin")
    assert "choose among talk, answer, stop" in rights.stderr
    assert load_channels(profile.path) == {}
    assert run(home, "channel", "add", "tg", "--token-env", "TG", "--session", "ses_1").returncode == 0
    again = run(home, "channel", "add", "tg", "--token-env", "TG", "--session", "ses_2")
    assert "a channel named 'tg' exists" in again.stderr
    assert load_channels(profile.path)["tg"].session == "ses_1"
    assert "Traceback" not in bad.stderr + both.stderr + rights.stderr + again.stderr


def test_l1_channel_cli_add_list_pair_remove_with_a_running_gateway(
    home: Path, start_gateway: StartGateway, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TG_TOKEN", TOKEN)  # the Gateway's environment, not its command line
    telegram = FakeTelegram(TOKEN).start()
    try:
        gateway = start_gateway()
        with gateway.client() as client:
            session_id = client.call("session.create")["id"]
        added = run(
            home, "channel", "add", "tg", "--token-env", "TG_TOKEN", "--session", session_id, "--api-url", telegram.url
        )
        assert added.returncode == 0, added.stderr
        assert "started by the running Gateway" in added.stdout
        text = (home / "profiles" / "default" / "channels.toml").read_text()
        assert "TG_TOKEN" in text
        assert TOKEN not in text
        telegram.say(9, "hello", username="bob")
        code = re.search(r"code is ([A-Z0-9]{8})", telegram.wait_sent(1)[0].text)
        assert code
        listed = run(home, "channel", "list")
        assert re.search(r"^tg  telegram  polling  feeds session \S+  0 senders  1 codes waiting$", listed.stdout, re.M)
        paired = run(home, "channel", "pair", code[1].lower(), "--rights", "talk")
        assert paired.returncode == 0, paired.stderr
        assert "as the channel's owner: talk on session" in paired.stdout
        shown = run(home, "channel", "show", "tg")
        assert "sender 9 @bob (owner): talk on session" in shown.stdout
        wrong = run(home, "channel", "pair", "AAAAAAAA")
        assert "no pairing code 'AAAAAAAA' is waiting" in wrong.stderr
        removed = run(home, "channel", "remove", "tg")
        assert removed.returncode == 0, removed.stderr
        assert run(home, "channel", "list").stdout.startswith("no channels")
        assert "no channel 'tg'" in run(home, "channel", "show", "tg").stderr
        log = (home / "profiles" / "default" / "logs" / "gateway.log").read_text(errors="replace")
        assert "channel" in log or "gateway ready" in log
        assert TOKEN not in log
    finally:
        telegram.stop()
