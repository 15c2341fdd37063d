"""L3 end to end by e-mail: a real Gateway process reads a real IMAP server (Dovecot) and answers through
a real SMTP server (aiosmtpd) while a paired sender writes, and is SIGKILLed at random moments: every mail
is answered, in order, and none is given to the session twice.

SMTP cannot tell whether a mail was already sent: a kill between the server's acceptance and the record
of it sends that reply again. The test bounds such repeats by the number of kills and checks that a
repeat carries the same Message-ID (the reader's client shows it once).
"""

from __future__ import annotations

import functools
import random
import re
import time
from pathlib import Path

import pytest

from anyy.profiles import create_profile
from anyy.profiles.channels_file import ChannelSettings, save_channels
from tests.channels.mail_servers import ADDRESS, PASSWORD, Dovecot, Received, SmtpSink
from tests.killtest.gateway_process import GatewayProcess

OWNER = "ann@people.test"
MESSAGES = 20
KILLS = 6


def _answered(received: list[Received]) -> list[str]:
    """The mails the replies answer (or say were interrupted), in the order they were sent."""
    return [found[1] for found in (re.search(r"«(m\d{3})»", r.text) for r in received) if found]


def _at_least(count: int, received: list[Received]) -> bool:
    return len(set(_answered(received))) >= count


def test_l3_email_mails_answered_once_in_order_across_sigkills(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MAIL_PASSWORD", PASSWORD)
    home = tmp_path / "home"
    profile = create_profile(home, "default")
    imap, smtp = Dovecot().start(), SmtpSink().start()
    gateway = GatewayProcess(home, "default", cwd=tmp_path, log=tmp_path / "gateway.log")
    try:
        gateway.start()
        session_id = gateway.client().call("session.create")["id"]
        settings = ChannelSettings(
            kind="email",
            token_env="MAIL_PASSWORD",
            session=session_id,
            address=ADDRESS,
            imap_url=imap.url,
            smtp_url=smtp.url,
            poll_seconds=1,
        )
        save_channels(profile.path, {"mail": settings})
        gateway.client().call("channel.reload")
        client = gateway.client()
        while client.call("channel.get", name="mail")["channel"]["state"] != "polling":  # its first read done
            assert client.call("channel.get", name="mail")["channel"]["state"] != "failed"
            time.sleep(0.05)
        imap.deliver(OWNER, "hello")
        smtp.wait_received(1)
        code = re.search(r"code is ([A-Z0-9]{8})", smtp.received[0].text)
        assert code
        gateway.client().call("channel.pair", code=code[1])
        paired = len(smtp.wait_received(len(smtp.received) + 1))
        chance = random.Random(29)
        names = [f"m{n:03d}" for n in range(MESSAGES)]
        per_round = MESSAGES // (KILLS + 1)
        said = 0
        for _ in range(KILLS):
            for name in names[said : said + per_round]:
                imap.deliver(OWNER, name, subject=name)
            said += per_round
            want = min(len(set(_answered(smtp.received))) + chance.randint(0, per_round), said)
            smtp.wait_until(functools.partial(_at_least, want))
            gateway.kill()
            gateway.start()
        for name in names[said:]:
            imap.deliver(OWNER, name, subject=name)
        received = smtp.wait_until(lambda received: set(_answered(received)) == set(names), timeout=240.0)
        answered = _answered(received)
        assert list(dict.fromkeys(answered)) == names  # in order
        replies = received[paired:]
        ids = [r["Message-ID"] for r in replies]
        assert len(ids) - len(set(ids)) <= KILLS  # only a kill between a send and its record repeats
        for i, reply in enumerate(replies):  # a repeat is the same mail: same Message-ID, same text
            first = ids.index(reply["Message-ID"])
            assert replies[first].text == reply.text, i
        assert all(r["In-Reply-To"] for r in replies)
        users = gateway.client().call("session.history", session_id=session_id, limit=500)["items"]
        given = [e["text"] for e in users if e["kind"] == "user"][::-1]
        assert given == names  # each mail given to the session once, in order
    finally:
        gateway.stop()
        smtp.stop()
        imap.stop()
