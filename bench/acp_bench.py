"""Benchmark of ``anyy acp`` (issue 28 targets, E1/E2) against a running Gateway with the offline model.

    .venv/bin/python -m bench.acp_bench [--entries 10000] [--runs 5]

In a temporary anyy home: a profile, one session of ``--entries`` entries (user and assistant turns written
straight into the store before the Gateway starts), the Gateway started (``anyy gateway start``). Then,
each ``--runs`` times, with the ACP SDK's client side driving ``anyy acp`` as a process over its stdio:

1. start to ``initialize`` answered: from spawning ``anyy acp`` to the answer (the interpreter, the imports,
   the Gateway's WebSocket opened; target <= 300 ms);
2. ``session/load`` of the long session: from the request to its answer, which comes after the last
   replayed update (target <= 500 ms);
3. first ``agent_message_chunk`` after the model's first token: a client of the Gateway subscribed to the
   session beside the bridge notes when the first ``text_delta`` of a prompt reaches it, the editor when
   the first chunk reaches it; the difference is what the bridge adds (target <= 50 ms).
The Gateway is stopped at the end.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import acp
from acp.schema import ClientCapabilities, Implementation

from anyy.api.events import TextDeltaEvent
from anyy.client.aio import AsyncClient
from anyy.domain.entries import EntryKind, NewEntry
from anyy.domain.sessions import NewSession
from anyy.profiles import get_profile
from anyy.profiles.gateway_address import read_address
from anyy.storage.sqlite.store import SqliteStore

ANYY = str(Path(sys.executable).parent / "anyy")
INIT_TARGET_MS = 300.0
LOAD_TARGET_MS = 500.0
CHUNK_TARGET_MS = 50.0
BATCH = 500


def _run(argv: list[str], env: dict[str, str]) -> None:
    done = subprocess.run(argv, env=env, capture_output=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({done.returncode}): {done.stderr.decode()}")


def seed(profile_dir: Path, entries: int) -> str:
    store = SqliteStore.open_profile(profile_dir, profile="default")
    try:
        session = store.create_session(NewSession(title="huge", provider="offline", model="offline"))
        for start in range(0, entries, BATCH):
            batch = [
                NewEntry(kind=EntryKind.parse("user" if i % 2 == 0 else "assistant"), text=f"entry {i}: some words")
                for i in range(start, min(entries, start + BATCH))
            ]
            store.append_entries(session.id, batch)
        return session.id
    finally:
        store.close()


class Editor:
    def __init__(self) -> None:
        self.updates = 0
        self.first_chunk: asyncio.Future[float] | None = None

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates += 1
        chunk = update.session_update == "agent_message_chunk"
        if chunk and self.first_chunk is not None and not self.first_chunk.done():
            self.first_chunk.set_result(time.perf_counter())

    async def request_permission(self, **kwargs: Any) -> Any:
        raise acp.RequestError.method_not_found("session/request_permission")


def _children_cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


async def one_run(env: dict[str, str], home: Path, session_id: str) -> tuple[float, float, float, float]:
    editor = Editor()
    cpu = _children_cpu()
    began = time.perf_counter()
    async with acp.spawn_agent_process(editor, ANYY, "acp", env=env) as (conn, _):  # type: ignore[arg-type]
        await conn.initialize(
            protocol_version=acp.PROTOCOL_VERSION,
            client_capabilities=ClientCapabilities(),
            client_info=Implementation(name="bench", version="1"),
        )
        init_ms = (time.perf_counter() - began) * 1000
        began = time.perf_counter()
        await conn.load_session(session_id=session_id, cwd=str(home), mcp_servers=[])
        load_ms = (time.perf_counter() - began) * 1000

        fresh = (await conn.new_session(cwd=str(home), mcp_servers=[])).session_id
        address = read_address(get_profile(home, "default"))
        assert address is not None
        loop = asyncio.get_running_loop()
        first_delta: asyncio.Future[float] = loop.create_future()

        def on_event(event: Any) -> None:
            if isinstance(event, TextDeltaEvent) and not first_delta.done():
                first_delta.set_result(time.perf_counter())

        watcher = await AsyncClient.connect(address, on_event, lambda why: None, agent="bench")
        try:
            await watcher.call("events.subscribe", {"session_id": fresh})
            editor.first_chunk = loop.create_future()
            await conn.prompt(session_id=fresh, prompt=[acp.text_block("hello")])
            chunk_ms = (await editor.first_chunk - await first_delta) * 1000
        finally:
            await watcher.close()
    return init_ms, load_ms, chunk_ms, (_children_cpu() - cpu) * 1000  # the bridge's CPU, once it has exited


def _line(name: str, values: list[float], target: float) -> str:
    median, worst = statistics.median(values), max(values)
    verdict = "meets" if median <= target else "MISSES"
    ratio = median / target
    return f"{name}: median {median:.1f} ms, worst {worst:.1f} ms (target <= {target:g} ms: {verdict}, x{ratio:.2f})"


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.acp_bench")
    parser.add_argument("--entries", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="anyy-acp-bench-") as tmp:
        home = Path(tmp) / "home"
        env = {k: v for k, v in os.environ.items() if k != "ANYY_PROFILE"} | {"ANYY_HOME": str(home)}
        os.environ["ANYY_HOME"] = str(home)
        _run([ANYY, "profile", "create", "default"], env)
        session_id = seed(home / "profiles" / "default", args.entries)
        _run([ANYY, "gateway", "start"], env)
        try:
            runs = [asyncio.run(one_run(env, home, session_id)) for _ in range(args.runs)]
            before = _children_cpu()
            _run([sys.executable, "-c", "import anyy.acp.serve"], env)
            imports = (_children_cpu() - before) * 1000
        finally:
            _run([ANYY, "gateway", "stop"], env)
    print(f"anyy acp, {args.runs} runs, a session of {args.entries} entries, load average {os.getloadavg()[0]:.1f}")
    print(f"CPU time of an interpreter importing anyy.acp.serve (the SDK, the client): {imports:.0f} ms")
    print(_line("start to initialize answered", [r[0] for r in runs], INIT_TARGET_MS))
    print(_line(f"session/load of {args.entries} entries to the last update", [r[1] for r in runs], LOAD_TARGET_MS))
    cpu = statistics.median(r[3] for r in runs)
    print(f"CPU time of one anyy acp process (start, initialize, the load, one prompt): median {cpu:.0f} ms")
    print(_line("first agent_message_chunk after the first text_delta", [r[2] for r in runs], CHUNK_TARGET_MS))


if __name__ == "__main__":
    main()
