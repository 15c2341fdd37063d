"""Benchmark of the CLI against a running Gateway, with the offline model.

    .venv/bin/python -m bench.chat_bench [--runs 20] [--calls 2000]

In a temporary anyy home, creates a profile and starts its Gateway (``anyy gateway start``), then:
1. wall time of ``anyy chat "hi"`` (the console script, as a person runs it) from process start to exit,
   median of ``--runs`` runs (target: <= 250 ms), beside ``python -c pass`` measured in the same run;
2. the JSON-RPC round trip over one WebSocket for a read method (``gateway.status`` and
   ``session.get``), p50 and p99 over ``--calls`` calls each (target: p50 <= 1 ms).
The Gateway is stopped at the end (``anyy gateway stop``).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from anyy.client.sync import connect
from anyy.profiles import get_profile
from anyy.profiles.gateway_address import read_address

ANYY = str(Path(sys.executable).parent / "anyy")
CHAT_TARGET_MS = 250.0
RPC_TARGET_MS = 1.0


def _wall(argv: list[str], env: dict[str, str]) -> float:
    began = time.perf_counter()
    done = subprocess.run(argv, env=env, capture_output=True, check=False)
    elapsed = time.perf_counter() - began
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({done.returncode}): {done.stderr.decode()}")
    return elapsed * 1000


def _percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--calls", type=int, default=2000)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="anyy-chat-bench-") as tmp:
        home = Path(tmp) / "home"
        env = {k: v for k, v in os.environ.items() if k != "ANYY_PROFILE"}
        env["ANYY_HOME"] = str(home)
        _wall([ANYY, "profile", "create", "default"], env)
        _wall([ANYY, "gateway", "start"], env)
        try:
            address = read_address(get_profile(home, "default"))
            assert address is not None
            _wall([ANYY, "chat", "warm-up"], env)  # compiled bytecode, the page cache, the Gateway's imports
            python = [_wall([sys.executable, "-c", "pass"], env) for _ in range(args.runs)]
            chat = [_wall([ANYY, "chat", "hi"], env) for _ in range(args.runs)]

            rpc: dict[str, list[float]] = {}
            with connect(address) as client:
                session_id = client.call("session.create")["id"]
                for method, params in (("gateway.status", None), ("session.get", {"session_id": session_id})):
                    for _ in range(100):
                        client.call(method, params)
                    times = []
                    for _ in range(args.calls):
                        began = time.perf_counter()
                        client.call(method, params)
                        times.append((time.perf_counter() - began) * 1000)
                    rpc[method] = times
        finally:
            _wall([ANYY, "gateway", "stop"], env)

    chat_median = statistics.median(chat)
    python_median = statistics.median(python)
    print(f'anyy chat "hi" (offline model, running Gateway), {args.runs} runs:')
    print(
        f"  median {chat_median:.1f} ms (min {min(chat):.1f}, max {max(chat):.1f}); target <= {CHAT_TARGET_MS:.0f} ms "
        f"-> {chat_median / CHAT_TARGET_MS:.2f} of the target"
    )
    print(
        f"  python -c pass: median {python_median:.1f} ms; anyy chat is {chat_median / python_median:.1f}x that, "
        f"{chat_median - python_median:.1f} ms more"
    )
    for method, times in rpc.items():
        p50, p99 = _percentile(times, 0.50), _percentile(times, 0.99)
        print(
            f"JSON-RPC round trip over WebSocket, {method}, {len(times)} calls: p50 {p50:.3f} ms, p99 {p99:.3f} ms; "
            f"target p50 <= {RPC_TARGET_MS:.0f} ms -> {p50 / RPC_TARGET_MS:.2f} of the target"
        )


if __name__ == "__main__":
    main()
