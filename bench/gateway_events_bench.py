"""Events per second from a real Gateway to 100 subscribed WebSocket clients.

    .venv/bin/python -m bench.gateway_events_bench [--clients 100] [--executions 200]

A Gateway process is started on a fresh profile (the offline model). ``--clients`` WebSocket clients
subscribe to every session's events; one more client sends prompts to one session, one after the other,
waiting for each to complete. The figure is the events delivered to all clients per second (every
client receives every event). Clients and Gateway share this machine's 2 cores.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from typing import Any

import websockets

from bench.gateway_ws import offline_gateway, rpc


async def _run(url: str, clients: int, executions: int) -> dict[str, float]:
    listeners = [await websockets.connect(url, max_size=None) for _ in range(clients)]
    for ws in listeners:
        await rpc(ws, "events.subscribe", {}, 1)
    counts = [0] * clients

    async def listen(index: int, ws: Any) -> None:
        async for raw in ws:
            if b'"method":"event"' in (raw if isinstance(raw, bytes) else raw.encode()):
                counts[index] += 1

    tasks = [asyncio.create_task(listen(i, ws)) for i, ws in enumerate(listeners)]
    async with websockets.connect(url, max_size=None) as driver:
        session = await rpc(driver, "session.create", {"title": "events bench"}, 1)
        start = time.perf_counter()
        for i in range(executions):
            sub = await rpc(driver, "session.send", {"session_id": session["id"], "text": f"message {i}"}, 2 + 2 * i)
            await rpc(driver, "session.wait", {"submission_id": sub["id"], "timeout": 30}, 3 + 2 * i)
        produced_by = time.perf_counter()
        # Every client must have received every event: wait until they have all caught up.
        target = None
        while target is None or min(counts) < target:
            await asyncio.sleep(0.01)  # a measurement poll, not synchronisation of a test
            target = max(counts) if time.perf_counter() - produced_by > 0.2 else None
        elapsed = time.perf_counter() - start
    for task in tasks:
        task.cancel()
    for ws in listeners:
        await ws.close()
    delivered = sum(counts)
    return {
        "events_per_client": counts[0],
        "delivered": delivered,
        "elapsed_s": elapsed,
        "events_per_s": delivered / elapsed,
        "executions_per_s": executions / (produced_by - start),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clients", type=int, default=100)
    parser.add_argument("--executions", type=int, default=200)
    args = parser.parse_args()
    with offline_gateway("anyy-events-bench-") as gateway:
        result = asyncio.run(_run(gateway.url, args.clients, args.executions))
    print(
        f"{args.executions} executions ({result['executions_per_s']:.0f}/s while {args.clients} clients listened); "
        f"{result['events_per_client']} events each; {result['delivered']:,} delivered in {result['elapsed_s']:.2f} s"
    )
    print(f"events per second to {args.clients} subscribed clients: {result['events_per_s']:,.0f}/s (report)")


if __name__ == "__main__":
    main()
