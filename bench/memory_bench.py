"""D13: the Gateway's memory after rounds of busy sessions: is what they used returned?

    .venv/bin/python -m bench.memory_bench [--sessions 100] [--rounds 10] [--words 400]

A Gateway process runs on a fresh profile (the offline model). Each round, ``--sessions`` WebSocket clients
at once each subscribe to their own new session's events, send a prompt whose answer streams back as
``--words`` word deltas, and wait for it to complete; then they close. After each round the Gateway's RSS
(``/proc/PID/status``) is read once its CPU time stops moving (the work has settled). The figure is the
growth from the end of the first round to the end of the last: memory that every round keeps.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from pathlib import Path

import websockets

from bench.gateway_ws import offline_gateway, rpc

MIB = 1024 * 1024


def rss_bytes(pid: int, field: str = "VmRSS") -> int:
    """Resident memory of ``pid`` (``RssAnon``: its own, not file pages mapped in such as SQLite's mmap)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"no {field} for pid {pid}")


def cpu_ticks(pid: int) -> int:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime + stime


def settle(pid: int, quiet: int = 4) -> None:
    """Wait until the Gateway used no CPU for ``quiet`` half-seconds in a row: its upkeep and closes are
    done, and so is the heap trim it makes a second after its last session's work ends."""
    last = cpu_ticks(pid)
    still = 0
    while still < quiet:
        time.sleep(0.5)  # a measurement poll, not a test's synchronisation
        now = cpu_ticks(pid)
        still = still + 1 if now == last else 0
        last = now


async def _one_session(url: str, words: int) -> int:
    """One busy session: its events subscribed, a streamed answer; the deltas it received."""
    async with websockets.connect(url, max_size=None, open_timeout=120, ping_interval=None) as ws:
        session = await rpc(ws, "session.create", {"title": "memory bench"}, 1)
        await rpc(ws, "events.subscribe", {"session_id": session["id"]}, 2)
        prompt = "please answer at length " + " ".join(f"word{i}" for i in range(words))
        sub = await rpc(ws, "session.send", {"session_id": session["id"], "text": prompt}, 3)
        await rpc(ws, "session.wait", {"submission_id": sub["id"], "timeout": 120}, 4)
        return 1


async def _round(url: str, sessions: int, words: int) -> None:
    await asyncio.gather(*(_one_session(url, words) for _ in range(sessions)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sessions", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--words", type=int, default=400, help="words in each prompt (the answer quotes it)")
    args = parser.parse_args()
    with offline_gateway("anyy-memory-bench-") as gateway:
        settle(gateway.pid)
        start = rss_bytes(gateway.pid)
        print(f"idle Gateway: {start / MIB:.1f} MiB")
        after: list[int] = []
        anons: list[int] = []
        for round_ in range(args.rounds):
            began = time.perf_counter()
            asyncio.run(_round(gateway.url, args.sessions, args.words))
            took = time.perf_counter() - began
            settle(gateway.pid)
            after.append(rss_bytes(gateway.pid))
            anon, files = rss_bytes(gateway.pid, "RssAnon"), rss_bytes(gateway.pid, "RssFile")
            anons.append(anon)
            print(
                f"round {round_ + 1}: {args.sessions} sessions in {took:.1f} s; RSS {after[-1] / MIB:.1f} MiB "
                f"(anonymous {anon / MIB:.1f}, file pages {files / MIB:.1f})"
            )
    first, last = after[0], after[-1]
    per_round = (last - first) / max(len(after) - 1, 1)
    kib_each = (first - start) / args.sessions / 1024
    print(f"after round 1: +{(first - start) / MIB:.1f} MiB over idle ({kib_each:.0f} KiB a session)")
    print(f"rounds 2-{len(after)}: {(last - first) / MIB:+.1f} MiB RSS in all, {per_round / MIB:+.2f} MiB a round")
    warm = min(3, len(anons) - 1)  # the offline model's kept requests fill up (256) during round 3
    anon_growth = (anons[-1] - anons[warm]) / max(len(anons) - 1 - warm, 1)
    print(
        f"anonymous memory, rounds {warm + 1}-{len(anons)}: {(anons[-1] - anons[warm]) / MIB:+.1f} MiB in all, "
        f"{anon_growth / MIB:+.2f} MiB a round (target: flat; file pages follow the database's size, mapped)"
    )


if __name__ == "__main__":
    main()
