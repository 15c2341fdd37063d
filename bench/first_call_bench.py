"""Benchmark of the first model call after a Gateway starts, and what other sessions see meanwhile (G4).

    .venv/bin/python -m bench.first_call_bench [--rounds 5]

Each round starts a real Gateway process (``anyy gateway start``) on a profile whose default provider is an
OpenAI-compatible one, served by the fake model server on loopback: its SDK (``openai``, ``httpx2``) is
imported after the start, by the Gateway's warm-up thread or, on first use, by a worker thread. At once,
one thread calls ``session.get`` on another session over and over (one WebSocket, one call at a time)
while the main thread sends the first message to the remote model and waits for its answer. Reported:
the first call's time (send to completion) and the other session's round trips from the start to that
completion, p50 / p99 / max over every round (target: p99 <= 50 ms). The Gateway is stopped after each
round.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from tests.fakes.model_server import FakeModelServer, Reply

from anyy.client.sync import connect
from anyy.profiles import get_profile
from anyy.profiles.gateway_address import read_address

ANYY = str(Path(sys.executable).parent / "anyy")
P99_TARGET_MS = 50.0


def _run(argv: list[str], env: dict[str, str]) -> None:
    done = subprocess.run(argv, env=env, capture_output=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({done.returncode}): {done.stderr.decode()}")


def _percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def _round(home: Path, env: dict[str, str], server: FakeModelServer, *, idle: bool) -> tuple[float, list[float]]:
    """One start: the first call's milliseconds and the other session's round trips meanwhile (``idle``:
    no call, the round trips over 4 s)."""
    _run([ANYY, "gateway", "start"], env)
    try:
        address = read_address(get_profile(home, "default"))
        assert address is not None
        samples: list[float] = []
        done = threading.Event()
        with connect(address) as client:
            other = client.call("session.create")["id"]

        def probe() -> None:
            with connect(address) as prober:
                while not done.is_set():
                    began = time.perf_counter()
                    prober.call("session.get", {"session_id": other})
                    samples.append((time.perf_counter() - began) * 1000)

        prober = threading.Thread(target=probe, name="probe")
        prober.start()
        if idle:
            time.sleep(4.0)
            done.set()
            prober.join()
            return 0.0, samples
        server.enqueue(Reply(text=["hello ", "from the remote model"]))
        with connect(address) as client:
            began = time.perf_counter()
            session = client.call("session.create")["id"]
            sent = client.call("session.send", {"session_id": session, "text": "hi"})
            ended = client.call("session.wait", {"submission_id": sent["id"], "timeout": 120})
            first = (time.perf_counter() - began) * 1000
        done.set()
        prober.join()
        if ended["state"] != "completed":
            raise SystemExit(f"the first call ended {ended['state']}: {ended}")
        return first, samples
    finally:
        _run([ANYY, "gateway", "stop"], env)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument(
        "--idle",
        action="store_true",
        help="the offline model and no call: round trips over 4 s after the start (the noise floor)",
    )
    args = parser.parse_args()

    server = FakeModelServer()
    server.start()
    try:
        with tempfile.TemporaryDirectory(prefix="anyy-first-call-bench-") as tmp:
            home = Path(tmp) / "home"
            env = {k: v for k, v in os.environ.items() if k != "ANYY_PROFILE"}
            env.update(ANYY_HOME=str(home), NO_PROXY="*", no_proxy="*")
            _run([ANYY, "profile", "create", "default"], env)
            config = get_profile(home, "default").config_path
            text = config.read_text()
            if not args.idle:  # idle: nothing to import at all
                text = text.replace('provider = "offline"\nmodel = "offline"', 'provider = "remote"\nmodel = "m"')
            config.write_text(
                text + f'\n[providers.remote]\nkind = "openai"\nbase_url = "{server.openai_url}"\nmodels = ["m"]\n'
            )
            firsts: list[float] = []
            samples: list[float] = []
            for _ in range(args.rounds):
                first, round_samples = _round(home, env, server, idle=args.idle)
                firsts.append(first)
                samples += round_samples
    finally:
        server.stop()
    p99 = _percentile(samples, 0.99)
    print(f"first model call after start, median of {len(firsts)}: {_percentile(firsts, 0.5):.0f} ms")
    print(f"  each: {', '.join(f'{f:.0f}' for f in firsts)} ms")
    print(
        f"other session's session.get meanwhile ({len(samples)} calls): p50 {_percentile(samples, 0.5):.2f} ms, "
        f"p99 {p99:.2f} ms, max {max(samples):.1f} ms (target p99 <= {P99_TARGET_MS:g} ms: "
        f"{'met' if p99 <= P99_TARGET_MS else 'missed'})"
    )


if __name__ == "__main__":
    main()
