"""L4 with real Gateway processes on one PostgreSQL database: two Gateways configure the same e-mail
channel (real Dovecot and aiosmtpd on loopback); one polls it, the other stands by; each mail is answered
once; the holder SIGKILLed, the other takes the channel over and answers the next mail."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest

from anyy.profiles.channels_file import ChannelSettings, save_channels
from tests.channels.mail_servers import ADDRESS, PASSWORD, Dovecot, Received, SmtpSink
from tests.distributed.service import BOUND, LEASE, Service, eventually
from tests.postgres.server import create_database, require_postgres

OWNER = "ann@people.test"


@pytest.fixture(scope="module")
def pair_of_gateways(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Service]:
    require_postgres()
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("MAIL_PASSWORD", PASSWORD)  # the Gateways' environment
        made = Service(root=tmp_path_factory.mktemp("channels"), database=create_database("anyy_chan"))
        try:
            made.add()
            made.add()
            yield made
        finally:
            made.close()


def _states(service: Service) -> list[str]:
    return [str(service.rpc(i).call("channel.get", name="mail")["channel"]["state"]) for i in (0, 1)]


def _settled(service: Service) -> list[str] | None:
    states = _states(service)
    return states if sorted(states) == ["polling", "standby"] else None


def _answers(received: list[Received]) -> list[str]:
    return [found[1] for found in (re.search(r"«(m\d)»", r.text) for r in received) if found]


def test_l4_one_gateway_polls_a_shared_channel_and_the_other_takes_it_over(pair_of_gateways: Service) -> None:
    service = pair_of_gateways
    imap, smtp = Dovecot().start(), SmtpSink().start()
    try:
        session_id = service.rpc(0).call("session.create")["id"]
        for i, gateway in enumerate(service.gateways):
            settings = ChannelSettings(
                kind="email",
                token_env="MAIL_PASSWORD",
                session=session_id,
                address=ADDRESS,
                imap_url=imap.url,
                smtp_url=smtp.url,
                poll_seconds=1,
            )
            save_channels(gateway.home / "profiles" / "default", {"mail": settings})
            service.rpc(i).call("channel.reload")
        states = eventually(lambda: _settled(service), 60.0, "one Gateway polling, the other standing by")
        holder = states.index("polling")
        imap.deliver(OWNER, "hello")
        code = re.search(r"code is ([A-Z0-9]{8})", smtp.wait_received(1)[0].text)
        assert code
        service.rpc(1 - holder).call("channel.pair", code=code[1])  # paired through either Gateway
        smtp.wait_received(2)
        imap.deliver(OWNER, "m1")
        imap.deliver(OWNER, "m2")
        smtp.wait_until(lambda received: _answers(received) == ["m1", "m2"])
        service.gateways[holder].kill()
        imap.deliver(OWNER, "m3")
        got: Any = smtp.wait_until(lambda received: "m3" in _answers(received), timeout=LEASE + BOUND + 60.0)
        # Each mail answered once. The kill may land between the SMTP server's acceptance of m2's answer and
        # its record: that answer goes again, as the same mail (same Message-ID), which the reader sees once.
        distinct = list({r["Message-ID"]: r for r in got}.values())
        assert _answers(distinct) == ["m1", "m2", "m3"]
        assert service.rpc(1 - holder).call("channel.get", name="mail")["channel"]["state"] == "polling"
        users = service.rpc(1 - holder).call("session.history", session_id=session_id)["items"]
        assert [e["text"] for e in users if e["kind"] == "user"][::-1] == ["m1", "m2", "m3"]
    finally:
        smtp.stop()
        imap.stop()
