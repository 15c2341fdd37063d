"""What TLS costs a JSON-RPC call (O1), and how long pairing takes to the first page (O2).

    .venv/bin/python -m bench.remote_bench [--calls 2000]

Two Gateway processes of one temporary home, one after the other: plain on 127.0.0.1, and with
``--tls`` (the profile's CA) on 127.0.0.2. On each, ``gateway.status`` is called ``--calls`` times, one
after the other, over one WebSocket and over one kept-alive HTTPS (or HTTP) connection; the figures are
the p50 and p95 of a call, and the difference TLS makes (target: at most 2 ms on the p50). Then a device
pairs with a short code on the TLS Gateway and loads the Dashboard's page: the time from the code to the
page. Clients and Gateways share this machine's cores.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import ssl
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import websockets

from bench.gateway_ws import rpc


@contextlib.contextmanager
def _gateway(home: str, *args: str) -> Iterator[dict[str, Any]]:
    env = {**os.environ, "ANYY_HOME": home}
    read_fd, write_fd = os.pipe()
    process = subprocess.Popen(
        [sys.executable, "-m", "anyy.gateway", "--profile", "bench", "--ready-fd", str(write_fd), *args],
        env=env,
        pass_fds=(write_fd,),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    os.close(write_fd)
    try:
        with os.fdopen(read_fd) as ready:
            yield json.loads(ready.readline())
    finally:
        process.terminate()
        process.wait(timeout=30)


def _quantiles(samples: list[float]) -> tuple[float, float]:
    cuts = statistics.quantiles(samples, n=100)
    return cuts[49] * 1000, cuts[94] * 1000


async def _ws_calls(url: str, token: str, trust: ssl.SSLContext | None, calls: int) -> list[float]:
    extra: dict[str, Any] = {"ssl": trust} if trust is not None else {}
    headers = {"Authorization": f"Bearer {token}"}
    async with websockets.connect(url, additional_headers=headers, proxy=None, compression=None, **extra) as ws:
        for i in range(50):
            await rpc(ws, "gateway.status", {}, i)
        samples = []
        for i in range(calls):
            start = time.perf_counter()
            await rpc(ws, "gateway.status", {}, 100 + i)
            samples.append(time.perf_counter() - start)
    return samples


def _http_calls(base: str, token: str, trust: ssl.SSLContext | bool, calls: int) -> list[float]:
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "gateway.status", "params": {}})
    headers = {"Authorization": f"Bearer {token}"}
    samples = []
    with httpx.Client(verify=trust, trust_env=False) as http:
        for _ in range(50):
            http.post(f"{base}/rpc", content=body, headers=headers)
        for _ in range(calls):
            start = time.perf_counter()
            http.post(f"{base}/rpc", content=body, headers=headers).raise_for_status()
            samples.append(time.perf_counter() - start)
    return samples


def _pairing(home: str, base: str, token: str, trust: ssl.SSLContext) -> float:
    """From the code typed on the device to the Dashboard's page loaded with its credential."""
    with httpx.Client(verify=trust, trust_env=False) as owner:
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "devices.pair", "params": {"name": "bench"}})
        code = owner.post(f"{base}/rpc", content=body, headers={"Authorization": f"Bearer {token}"}).json()
    start = time.perf_counter()
    with httpx.Client(verify=trust, trust_env=False, headers={"Origin": base}) as device:
        device.post(f"{base}/auth/pair", json={"code": code["result"]["code"]}).raise_for_status()
        device.get(f"{base}/").raise_for_status()
        listed = json.dumps({"jsonrpc": "2.0", "id": 2, "method": "session.list", "params": {}})
        device.post(f"{base}/rpc", content=listed).raise_for_status()
    return (time.perf_counter() - start) * 1000


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=2000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="anyy-remote-bench-") as home:
        anyy = Path(sys.executable).with_name("anyy")
        env = {**os.environ, "ANYY_HOME": home}
        subprocess.run([str(anyy), "profile", "create", "bench"], env=env, check=True, capture_output=True)
        figures: dict[str, tuple[float, float]] = {}
        with _gateway(home) as plain:
            base = f"http://{plain['host']}:{plain['port']}"
            figures["ws plain"] = _quantiles(
                asyncio.run(_ws_calls(f"ws://{plain['host']}:{plain['port']}/ws", plain["token"], None, args.calls))
            )
            figures["http plain"] = _quantiles(_http_calls(base, plain["token"], False, args.calls))
        with _gateway(home, "--host", "127.0.0.2", "--tls") as secure:
            trust = ssl.create_default_context(cafile=Path(home) / "profiles" / "bench" / "tls" / "ca.pem")
            base = f"https://{secure['host']}:{secure['port']}"
            ws_url = f"wss://{secure['host']}:{secure['port']}/ws"
            figures["ws tls"] = _quantiles(asyncio.run(_ws_calls(ws_url, secure["token"], trust, args.calls)))
            figures["http tls"] = _quantiles(_http_calls(base, secure["token"], trust, args.calls))
            pairing = statistics.median(_pairing(home, base, secure["token"], trust) for _ in range(5))
    for name, (p50, p95) in figures.items():
        print(f"{name:<11} gateway.status p50 {p50:.3f} ms  p95 {p95:.3f} ms")
    for transport in ("ws", "http"):
        added = figures[f"{transport} tls"][0] - figures[f"{transport} plain"][0]
        print(f"TLS adds {added:+.3f} ms to the {transport} p50 (target <= 2 ms: {added / 2:.2f} of it)")
    print(f"pairing: code -> credential -> first page -> first call, median of 5: {pairing:.1f} ms")
    print(f"load average: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
