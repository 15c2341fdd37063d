"""What a Telegram channel costs (issue 29, L1/L3): the time from the library handing a message over to
its submission being committed, and the CPU an idle polling channel takes from its Gateway.

    .venv/bin/python -m bench.channels_bench [--messages 200] [--idle 30]

Latency: an in-process Gateway (the scripted offline model) polls the loopback Bot API server through
python-telegram-bot; a paired sender writes ``--messages`` messages, one after the other's answer. Each
is timed from the moment ``Channels.inbound`` receives it (what the link parsed from ``getUpdates``) to
the return of the submission's commit, and to the end of ``inbound`` (the inbox record with the read
position). Target: <= 100 ms to the submission.

Idle cost: a real Gateway process (``python -m anyy.gateway``) with one channel long polling the server
(30 s polls, nothing arriving), its CPU time (``/proc/PID/stat``) over ``--idle`` seconds, beside the
same Gateway without a channel. Target: <= 1% of a core.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from tests.fakes.gateways import LiveGateway
from tests.fakes.telegram_api import FakeTelegram
from tests.killtest.gateway_process import GatewayProcess

from anyy.channels.service import Channels
from anyy.profiles import create_profile
from anyy.profiles.channels_file import ChannelSettings, save_channels

TOKEN = "1000:bench-token-abcdefghijkl"


def _pair(call: Any, telegram: FakeTelegram) -> None:
    telegram.say(1, "hello")
    code = re.search(r"code is ([A-Z0-9]{8})", telegram.wait_sent(1)[0].text)
    assert code
    call("channel.pair", {"code": code[1]})
    telegram.wait_sent(2)


def latency(messages: int) -> dict[str, float]:
    timings: list[tuple[float, float, float]] = []  # handed over, submitted, recorded
    submitted: list[float] = []
    inbound, submit = Channels.inbound, None

    async def timed_inbound(self: Channels, running: Any, message: Any) -> None:
        start = time.perf_counter()
        await inbound(self, running, message)
        if message.text.startswith("m") and submitted:
            timings.append((start, submitted.pop(), time.perf_counter()))

    with tempfile.TemporaryDirectory() as tmp, FakeTelegram(TOKEN) as telegram:
        Channels.inbound = timed_inbound  # type: ignore[method-assign]
        live = LiveGateway(Path(tmp))
        live.channel_env = {"TG": TOKEN}
        try:
            with live:
                runtime = live.gateway.runtime if live.gateway else None
                assert runtime is not None
                submit = runtime.submit

                async def timed_submit(session_id: str, new: Any) -> Any:
                    done = await submit(session_id, new)
                    submitted.append(time.perf_counter())
                    return done

                runtime.submit = timed_submit  # type: ignore[method-assign]
                session_id = live.call("session.create")["id"]
                settings = ChannelSettings(kind="telegram", token_env="TG", session=session_id, api_url=telegram.url)
                save_channels(live.profile.path, {"tg": settings})
                live.call("channel.reload")
                _pair(live.call, telegram)
                for n in range(messages):
                    live.model.enqueue(f"answer {n}")
                    telegram.say(1, f"m{n}")
                    telegram.wait_sent(3 + n)
        finally:
            Channels.inbound = inbound  # type: ignore[method-assign]
    to_submission = sorted((s - h) * 1000 for h, s, _ in timings)
    to_record = sorted((r - h) * 1000 for h, _, r in timings)
    return {
        "messages": len(timings),
        "submission_median_ms": statistics.median(to_submission),
        "submission_p90_ms": to_submission[int(len(to_submission) * 0.9) - 1],
        "submission_max_ms": to_submission[-1],
        "recorded_median_ms": statistics.median(to_record),
        "recorded_p90_ms": to_record[int(len(to_record) * 0.9) - 1],
    }


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


def idle_cost(seconds: float, *, with_channel: bool) -> float:
    """The Gateway's CPU use while idle, in percent of one core."""
    with tempfile.TemporaryDirectory() as tmp, FakeTelegram(TOKEN) as telegram:
        home = Path(tmp) / "home"
        profile = create_profile(home, "default")
        os.environ["TG_BENCH_TOKEN"] = TOKEN
        gateway = GatewayProcess(home, "default", cwd=Path(tmp), log=Path(tmp) / "gateway.log")
        gateway.start()
        try:
            if with_channel:
                session_id = gateway.client().call("session.create")["id"]
                settings = ChannelSettings(
                    kind="telegram", token_env="TG_BENCH_TOKEN", session=session_id, api_url=telegram.url
                )
                save_channels(profile.path, {"tg": settings})
                gateway.client().call("channel.reload")
                _pair(lambda m, p: gateway.client().call(m, **p), telegram)
            time.sleep(2.0)  # the start's work settles before the window (a measurement, not a synchronisation)
            before, started = _cpu_seconds(gateway.pid), time.monotonic()
            time.sleep(seconds)
            used, elapsed = _cpu_seconds(gateway.pid) - before, time.monotonic() - started
        finally:
            gateway.stop()
    return used / elapsed * 100


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--messages", type=int, default=200)
    parser.add_argument("--idle", type=float, default=30.0)
    args = parser.parse_args()
    figures = latency(args.messages)
    print(f"inbound message -> submission, {figures['messages']:.0f} messages:")
    print(
        f"  median {figures['submission_median_ms']:.2f} ms, p90 {figures['submission_p90_ms']:.2f} ms, "
        f"max {figures['submission_max_ms']:.2f} ms (target <= 100 ms: "
        f"{'met' if figures['submission_p90_ms'] <= 100 else 'MISSED'})"
    )
    print(
        f"  with the inbox record and read position: median {figures['recorded_median_ms']:.2f} ms, "
        f"p90 {figures['recorded_p90_ms']:.2f} ms"
    )
    base = idle_cost(args.idle, with_channel=False)
    polling = idle_cost(args.idle, with_channel=True)
    print(f"idle Gateway CPU over {args.idle:.0f} s: without a channel {base:.3f}% of a core, with one polling channel")
    verdict = "met" if polling <= 1 else "MISSED"
    print(f"  {polling:.3f}% (the channel's share {polling - base:+.3f}%; target <= 1%: {verdict})")


if __name__ == "__main__":
    main()
