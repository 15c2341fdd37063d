"""Benchmark of a Codemode script's inner tool calls: what each costs, now that each is recorded before it
starts (issue 17, D3).

    .venv/bin/python -m bench.codemode_bench [--calls 300] [--rounds 3]

A real Gateway process (default configuration: the sandbox on when the machine has one) talks to the fake
model server on loopback, which asks for one ``run_script`` whose script calls ``tools.read_file`` on a
small file ``--calls`` times in a loop and prints the mean time of one call as the script saw it (from the
script's ``tools.read_file(...)`` to its answer: the request over the channel, the runtime's gate, the
records in the store, the tool). Each round is a new turn in the same session; the median of the rounds.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from tests.fakes.model_server import FakeModelServer, Reply, ToolCall
from tests.killtest.gateway_process import GatewayProcess

from bench.partial_text_bench import _gateway as partial_text_gateway

SCRIPT = """import time
start = time.perf_counter()
for _ in range({calls}):
    tools.read_file(path="small.txt")
print(f"per call: {{(time.perf_counter() - start) / {calls} * 1000:.3f}} ms")
"""


def _gateway(folder: Path, server: FakeModelServer) -> GatewayProcess:
    gateway = partial_text_gateway(folder, server.openai_url)  # its sessions talk to the server
    (folder / "work" / "small.txt").write_text("a small file\n" * 10)
    return gateway


def measure(calls: int, rounds: int) -> dict[str, float]:
    server = FakeModelServer()
    server.start()
    per_call: list[float] = []
    try:
        with tempfile.TemporaryDirectory(prefix="anyy-codemode-bench-") as tmp:
            gateway = _gateway(Path(tmp), server)
            gateway.start()
            try:
                rpc = gateway.client()
                session_id = rpc.call("session.create")["id"]
                rpc.call("session.tools.configure", session_id=session_id, enabled=["read_file"], codemode=True)
                for _ in range(rounds):
                    script = SCRIPT.format(calls=calls)
                    server.enqueue(Reply(tool_calls=[ToolCall(name="run_script", arguments={"script": script})]))
                    server.enqueue(Reply(text=["done"]))
                    sent = rpc.call("session.send", session_id=session_id, text="script it")
                    state = rpc.call("session.wait", submission_id=sent["id"], timeout=600)["state"]
                    if state != "completed":
                        raise RuntimeError(f"the turn ended {state}")
                    items = rpc.call("session.history", session_id=session_id, limit=3)["items"]
                    result = next(item for item in items if item["kind"] == "tool_result")
                    line = next(ln for ln in result["text"].splitlines() if ln.startswith("per call: "))
                    per_call.append(float(line.split()[2]))
            finally:
                gateway.stop()
    finally:
        server.stop()
    return {"calls_per_script": calls, "rounds": rounds, "ms_per_inner_call_median": statistics.median(per_call)}


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(None if argv is None else list(argv))
    print(json.dumps(measure(args.calls, args.rounds), indent=2), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
