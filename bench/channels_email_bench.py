"""What an e-mail channel costs (issue 29, L1/L3): the time from the link handing a mail over to its
submission being committed, and the CPU an idle e-mail channel takes from its Gateway.

    .venv/bin/python -m bench.channels_email_bench [--messages 50] [--idle 30] [--poll 30]

Real servers on loopback: Dovecot (IMAP, installed by scripts/setup-mail) and aiosmtpd (SMTP). Latency:
a paired sender mails ``--messages`` times, one after the other's answer; each is timed from the moment
``Channels.inbound`` receives it (what the link parsed from the mailbox) to the return of the submission's
commit. Target: <= 100 ms to the submission. Idle cost: a real Gateway process with one e-mail channel
reading an empty mailbox every ``--poll`` seconds, its CPU time over ``--idle`` seconds. Target: <= 1%.
"""

from __future__ import annotations

import argparse
import re
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from tests.channels.mail_servers import ADDRESS, PASSWORD, Dovecot, SmtpSink
from tests.fakes.gateways import LiveGateway
from tests.killtest.gateway_process import GatewayProcess

from anyy.channels.service import Channels
from anyy.profiles import create_profile
from anyy.profiles.channels_file import ChannelSettings, save_channels
from bench.channels_bench import _cpu_seconds

OWNER = "ann@people.test"


def _settings(imap: Dovecot, smtp: SmtpSink, session_id: str, poll: int) -> ChannelSettings:
    return ChannelSettings(
        kind="email",
        token_env="MAIL_BENCH_PASSWORD",
        session=session_id,
        address=ADDRESS,
        imap_url=imap.url,
        smtp_url=smtp.url,
        poll_seconds=poll,
    )


def _pair(call: Any, state: Any, imap: Dovecot, smtp: SmtpSink) -> None:
    while state() != "polling":  # its first read of the mailbox done
        time.sleep(0.05)
    imap.deliver(OWNER, "hello")
    code = re.search(r"code is ([A-Z0-9]{8})", smtp.wait_received(1)[0].text)
    assert code
    call("channel.pair", {"code": code[1]})
    smtp.wait_received(2)


def latency(messages: int) -> dict[str, float]:
    timings: list[float] = []
    submitted: list[float] = []
    inbound = Channels.inbound

    async def timed_inbound(self: Channels, running: Any, message: Any) -> None:
        start = time.perf_counter()
        await inbound(self, running, message)
        if message.text.startswith("m") and submitted:
            timings.append((submitted.pop() - start) * 1000)

    imap, smtp = Dovecot().start(), SmtpSink().start()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            Channels.inbound = timed_inbound  # type: ignore[method-assign]
            live = LiveGateway(Path(tmp))
            live.channel_env = {"MAIL_BENCH_PASSWORD": PASSWORD}
            with live:
                runtime = live.gateway.runtime if live.gateway else None
                assert runtime is not None
                assert live.gateway is not None
                assert live.gateway.channels is not None
                submit = runtime.submit

                async def timed_submit(session_id: str, new: Any) -> Any:
                    done = await submit(session_id, new)
                    submitted.append(time.perf_counter())
                    return done

                runtime.submit = timed_submit  # type: ignore[method-assign]
                session_id = live.call("session.create")["id"]
                save_channels(live.profile.path, {"mail": _settings(imap, smtp, session_id, 1)})
                live.call("channel.reload")
                channels = live.gateway.channels
                _pair(live.call, lambda: channels.running["mail"].state, imap, smtp)
                for n in range(messages):
                    live.model.enqueue(f"answer {n}")
                    imap.deliver(OWNER, f"m{n}")
                    smtp.wait_received(3 + n)
    finally:
        Channels.inbound = inbound  # type: ignore[method-assign]
        smtp.stop()
        imap.stop()
    timings.sort()
    return {
        "messages": len(timings),
        "median_ms": statistics.median(timings),
        "p90_ms": timings[int(len(timings) * 0.9) - 1],
        "max_ms": timings[-1],
    }


def idle_cost(seconds: float, poll: int) -> float:
    """The Gateway's CPU use with one idle e-mail channel, in percent of one core."""
    import os

    imap, smtp = Dovecot().start(), SmtpSink().start()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            home = Path(tmp) / "home"
            profile = create_profile(home, "default")
            os.environ["MAIL_BENCH_PASSWORD"] = PASSWORD
            gateway = GatewayProcess(home, "default", cwd=Path(tmp), log=Path(tmp) / "gateway.log")
            gateway.start()
            try:
                session_id = gateway.client().call("session.create")["id"]
                save_channels(profile.path, {"mail": _settings(imap, smtp, session_id, poll)})
                gateway.client().call("channel.reload")
                time.sleep(2.0)  # the start's work settles before the window (a measurement, not a synchronisation)
                before, started = _cpu_seconds(gateway.pid), time.monotonic()
                time.sleep(seconds)
                used, elapsed = _cpu_seconds(gateway.pid) - before, time.monotonic() - started
            finally:
                gateway.stop()
    finally:
        smtp.stop()
        imap.stop()
    return used / elapsed * 100


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--messages", type=int, default=50)
    parser.add_argument("--idle", type=float, default=30.0)
    parser.add_argument("--poll", type=int, default=30)
    args = parser.parse_args()
    figures = latency(args.messages)
    verdict = "met" if figures["p90_ms"] <= 100 else "MISSED"
    print(f"inbound mail -> submission, {figures['messages']:.0f} mails:")
    print(
        f"  median {figures['median_ms']:.2f} ms, p90 {figures['p90_ms']:.2f} ms, max {figures['max_ms']:.2f} ms "
        f"(target <= 100 ms: {verdict})"
    )
    cost = idle_cost(args.idle, args.poll)
    verdict = "met" if cost <= 1 else "MISSED"
    print(f"idle Gateway CPU over {args.idle:.0f} s, one e-mail channel read every {args.poll} s:")
    print(f"  {cost:.3f}% of a core (target <= 1%: {verdict})")


if __name__ == "__main__":
    main()
