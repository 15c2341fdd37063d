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
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import websockets


async def _rpc(ws: Any, method: str, params: dict[str, Any], ident: int) -> Any:
    await ws.send(json.dumps({"jsonrpc": "2.0", "method": method, "params": params, "id": ident}))
    while True:
        message = json.loads(await ws.recv())
        if message.get("id") == ident:
            if "error" in message:
                raise RuntimeError(message["error"])
            return message["result"]


async def _run(url: str, clients: int, executions: int) -> dict[str, float]:
    listeners = [await websockets.connect(url, max_size=None) for _ in range(clients)]
    for ws in listeners:
        await _rpc(ws, "events.subscribe", {}, 1)
    counts = [0] * clients

    async def listen(index: int, ws: Any) -> None:
        async for raw in ws:
            if b'"method":"event"' in (raw if isinstance(raw, bytes) else raw.encode()):
                counts[index] += 1

    tasks = [asyncio.create_task(listen(i, ws)) for i, ws in enumerate(listeners)]
    async with websockets.connect(url, max_size=None) as driver:
        session = await _rpc(driver, "session.create", {"title": "events bench"}, 1)
        start = time.perf_counter()
        for i in range(executions):
            sub = await _rpc(driver, "session.send", {"session_id": session["id"], "text": f"message {i}"}, 2 + 2 * i)
            await _rpc(driver, "session.wait", {"submission_id": sub["id"], "timeout": 30}, 3 + 2 * i)
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
    with tempfile.TemporaryDirectory(prefix="anyy-events-bench-") as home:
        env = {**os.environ, "ANYY_HOME": home}
        anyy = Path(sys.executable).with_name("anyy")
        subprocess.run([str(anyy), "profile", "create", "bench"], env=env, check=True, capture_output=True)
        read_fd, write_fd = os.pipe()
        gateway = subprocess.Popen(
            [sys.executable, "-m", "anyy.gateway", "--profile", "bench", "--ready-fd", str(write_fd)],
            env=env,
            pass_fds=(write_fd,),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        os.close(write_fd)
        with os.fdopen(read_fd) as ready:
            address = json.loads(ready.readline())
        url = f"ws://{address['host']}:{address['port']}/ws?token={address['token']}"
        try:
            result = asyncio.run(_run(url, args.clients, args.executions))
        finally:
            gateway.terminate()
            gateway.wait(timeout=30)
    print(
        f"{args.executions} executions ({result['executions_per_s']:.0f}/s while {args.clients} clients listened); "
        f"{result['events_per_client']} events each; {result['delivered']:,} delivered in {result['elapsed_s']:.2f} s"
    )
    print(f"events per second to {args.clients} subscribed clients: {result['events_per_s']:,.0f}/s (report)")


if __name__ == "__main__":
    main()
