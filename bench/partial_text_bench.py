"""Benchmark of keeping streamed text across a kill (issue 17, D4): what fraction is kept, and what it costs.

    .venv/bin/python -m bench.partial_text_bench [--kills 30] [--seed 17] [--sessions 20] [--seconds 5] [--rounds 3]

1. **Kept fraction.** A real Gateway process (``python -m anyy.gateway``) talks to a model server on
   loopback that streams an OpenAI Chat Completions answer at a steady pace (20 characters every 25 ms,
   about 200 tokens/s). A WebSocket client counts the text it was shown; the Gateway is SIGKILLed at a
   random moment of the stream (seeded, 0.3 to 4.5 s after the first delta), started again, and the
   interrupted answer it recovered is read back. Kept fraction = characters recovered / characters the
   client was shown. By design the loss is at most what streamed since the last save (1 s or 4 KB).
2. **Cost.** In-process, on a real SQLite store: (a) one answer of 256 KiB in 16-character deltas with
   nothing pacing it, with the keeping on and off (time, writes, bytes written), and kept with its first
   half streamed as thinking (kept in the same writes: as many as text alone); (b) the store's append
   rate (one entry per call, as fast as it goes) while ``--sessions`` sessions stream paced answers, with
   the keeping on and off. Each ``--rounds`` times, off and on alternately; medians.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from tests.fakes.gateways import WsClient
from tests.fakes.wire import Reply, openai_events
from tests.killtest.gateway_process import GatewayProcess

from anyy.api.events import ExecutionStateChanged
from anyy.domain.entries import EntryKind, NewEntry
from anyy.domain.model_io import TextDelta, ThinkingDelta
from anyy.domain.queue import NewSubmission
from anyy.domain.sessions import NewSession, Session
from anyy.profiles import create_profile
from anyy.runtime import execution as execution_module
from anyy.runtime.stream_keeper import StreamKeeper
from bench.runtime_bench import _setup

PIECE = "a steady word stream "[:20]
INTERVAL = 0.025  # seconds between pieces
PIECES = 400  # 10 s of answer: never ends before the kill


class PacedModel(ThreadingHTTPServer):
    """An OpenAI-compatible endpoint that streams a long answer at a steady pace."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.thread = threading.Thread(target=self.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()
        try:
            for event in openai_events(Reply(text=[PIECE] * PIECES), "paced"):
                self.wfile.write(event)
                self.wfile.flush()
                time.sleep(INTERVAL)
        except OSError:
            return  # the Gateway went away (killed)

    def log_message(self, format: str, *args: Any) -> None:
        return


class Shown:
    """The text deltas a WebSocket client was shown, counted on a thread of its own."""

    def __init__(self, client: WsClient) -> None:
        self.client = client
        self.chars = 0
        self.first = threading.Event()
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        try:
            while True:
                message = self.client.receive(60)
                params = message.get("params") if isinstance(message, dict) else None
                if isinstance(params, dict) and params.get("type") == "text_delta":
                    self.chars += len(params["text"])
                    self.first.set()
        except Exception:
            return  # the connection ended with the Gateway


def _gateway(folder: Path, model_url: str) -> GatewayProcess:
    home = folder / "home"
    profile = create_profile(home, "bench")
    config = profile.config_path.read_text().replace(
        'provider = "offline"\nmodel = "offline"', 'provider = "paced"\nmodel = "paced"'
    )
    config += f'\n[providers.paced]\nkind = "openai"\nbase_url = "{model_url}"\napi_key_env = ""\n'
    config = config.replace("enabled = true", "enabled = false", 1)  # [retries]: a killed stream is not retried
    profile.config_path.write_text(config)
    (folder / "work").mkdir(exist_ok=True)
    return GatewayProcess(home, "bench", cwd=folder / "work", log=folder / "gateway.log")


def kept_fraction(kills: int, seed: int) -> dict[str, Any]:
    rng = random.Random(seed)
    model = PacedModel()
    fractions: list[float] = []
    shown_total = kept_total = nothing_kept = 0
    with tempfile.TemporaryDirectory(prefix="anyy-d4-") as tmp:
        gateway = _gateway(Path(tmp), model.url)
        gateway.start()
        session_id = gateway.client().call("session.create")["id"]
        for _ in range(kills):
            rpc = gateway.client()
            client = WsClient(f"ws://{gateway.host}:{gateway.port}/ws", gateway.token)
            client.call("events.subscribe", {"session_id": session_id})
            shown = Shown(client)
            rpc.call("session.send", session_id=session_id, text="tell me a long story")
            if not shown.first.wait(30):
                raise SystemExit("the model never streamed")
            time.sleep(rng.uniform(0.3, 4.5))  # a bench: the kill lands at a random moment of the stream
            seen = shown.chars
            gateway.kill()
            seen = max(seen, shown.chars)  # deltas already on their way when the kill came
            client.close()
            gateway.start()
            items = gateway.client().call("session.history", session_id=session_id, limit=3)["items"]
            answer = next((e for e in items if e["kind"] == "assistant" and e["data"].get("interrupted")), None)
            kept = len(answer["text"]) if answer is not None else 0
            nothing_kept += kept == 0
            shown_total += seen
            kept_total += kept
            fractions.append(kept / seen if seen else 1.0)
        gateway.stop()
    model.shutdown()
    return {
        "kills": kills,
        "kept_fraction_mean": round(statistics.mean(fractions), 3),
        "kept_fraction_median": round(statistics.median(fractions), 3),
        "kept_fraction_min": round(min(fractions), 3),
        "kills_keeping_nothing": nothing_kept,
        "characters_shown": shown_total,
        "characters_kept": kept_total,
        "characters_lost_mean": round((shown_total - kept_total) / kills),
    }


class _NotKept(StreamKeeper):
    """The keeping turned off, for the comparison."""

    def add(self, text: str) -> None:
        return

    def add_thinking(self, text: str) -> None:
        return


def _keeping(on: bool) -> None:
    setattr(execution_module, "StreamKeeper", StreamKeeper if on else _NotKept)  # noqa: B010 - swapped for the comparison


async def _wait_done(runtime_events: Any) -> None:
    while True:
        event = await runtime_events.get()
        if isinstance(event, ExecutionStateChanged) and event.state == "completed":
            return


async def _fast_answer(folder: Path, on: bool, *, thinking: bool = False) -> dict[str, float]:
    """One 256 KiB answer; with ``thinking``, its first half streamed as thinking (kept in the same writes)."""
    _keeping(on)
    runtime, deps, _timed, model = await _setup(folder)
    session: Session = await deps.owner.call(lambda s: s.create_session(NewSession()))
    events = deps.bus.subscribe(session.id)
    saves = 0
    original = StreamKeeper.close

    async def counting_close(self: StreamKeeper, *, save_rest: bool = False) -> None:
        nonlocal saves
        await original(self, save_rest=save_rest)
        saves += self.saves

    StreamKeeper.close = counting_close  # type: ignore[method-assign]
    model.stream_delay = 1e-6  # each delta yields to the loop, as one from the network does
    think = 8_192 if thinking else 0
    model.enqueue(
        [ThinkingDelta(text="0123456789abcdef") for _ in range(think)]
        + [TextDelta(text="0123456789abcdef") for _ in range(16_384 - think)]
    )
    start = time.perf_counter()
    await runtime.submit(session.id, NewSubmission(text="a long answer, please"))
    await _wait_done(events)
    elapsed = time.perf_counter() - start
    StreamKeeper.close = original  # type: ignore[method-assign]
    await runtime.aclose()
    await deps.owner.aclose()
    return {"seconds": round(elapsed, 3), "writes": saves}


async def _append_rate(folder: Path, on: bool, sessions: int, seconds: float) -> dict[str, float]:
    _keeping(on)
    runtime, deps, _timed, model = await _setup(folder)
    model.stream_delay = 0.002
    created = [await deps.owner.call(lambda s: s.create_session(NewSession())) for _ in range(sessions + 1)]
    writer, streamers = created[0], created[1:]
    deadline = time.perf_counter() + seconds
    appended = 0

    async def stream(session: Session) -> None:
        events = deps.bus.subscribe(session.id)
        while time.perf_counter() < deadline:
            model.enqueue([TextDelta(text=PIECE) for _ in range(500)])
            await runtime.submit(session.id, NewSubmission(text="go on"))
            await _wait_done(events)

    async def append() -> None:
        nonlocal appended
        entry = [NewEntry(kind=EntryKind.USER, text="an entry of ordinary size " * 4)]
        while time.perf_counter() < deadline:
            await deps.owner.call(lambda s: s.append_entries(writer.id, entry))
            appended += 1

    await asyncio.gather(append(), *(stream(s) for s in streamers))
    await runtime.aclose()
    await deps.owner.aclose()
    return {"appends_per_s": round(appended / seconds)}


def costs(sessions: int, seconds: float, rounds: int) -> dict[str, Any]:
    """Each measure ``rounds`` times, the keeping off and on alternately (a shared machine drifts): medians."""
    runs: dict[str, list[dict[str, float]]] = {}
    for _ in range(rounds):
        for on in (False, True):
            label = "kept" if on else "not_kept"
            with tempfile.TemporaryDirectory(prefix="anyy-d4-cost-") as tmp:
                runs.setdefault(f"fast_256KiB_{label}", []).append(asyncio.run(_fast_answer(Path(tmp), on)))
            if on:  # half of it thinking: the same writes, none of its own
                with tempfile.TemporaryDirectory(prefix="anyy-d4-cost-") as tmp:
                    runs.setdefault("fast_256KiB_half_thinking_kept", []).append(
                        asyncio.run(_fast_answer(Path(tmp), on, thinking=True))
                    )
            with tempfile.TemporaryDirectory(prefix="anyy-d4-cost-") as tmp:
                runs.setdefault(f"append_rate_{label}", []).append(
                    asyncio.run(_append_rate(Path(tmp), on, sessions, seconds))
                )
    _keeping(True)
    figures: dict[str, Any] = {
        name: {key: statistics.median(run[key] for run in found) for key in found[0]} for name, found in runs.items()
    }
    slow = figures["fast_256KiB_kept"]["seconds"] / figures["fast_256KiB_not_kept"]["seconds"]
    rate = figures["append_rate_kept"]["appends_per_s"] / max(1, figures["append_rate_not_kept"]["appends_per_s"])
    figures["fast_answer_time_ratio"] = round(slow, 3)
    figures["append_rate_ratio"] = round(rate, 3)
    return figures


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kills", type=int, default=30)
    parser.add_argument("--seed", type=int, default=17)
    parser.add_argument("--sessions", type=int, default=20)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--skip-kills", action="store_true", help="measure the cost only")
    args = parser.parse_args(None if argv is None else list(argv))
    print(json.dumps({"cost": costs(args.sessions, args.seconds, args.rounds)}, indent=2), flush=True)
    if not args.skip_kills:
        print(json.dumps({"kept": kept_fraction(args.kills, args.seed)}, indent=2), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
