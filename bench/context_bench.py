"""Benchmark of a model call's context cost: the full rebuild beside the runtime's kept context (issue 12
item 9), per session size, on SQLite and PostgreSQL.

    .venv/bin/python -m bench.context_bench [--sizes 1000,10000,100000] [--backends sqlite,postgresql]
                                           [--calls 30] [--postgres-url URL]

For each backend and size, a session of that many entries (the store bench's workload: ~400-character
messages, 10% tool entries) is written, then:

- full rebuild: what every model call cost before: ``store.context`` plus the conversion of the whole
  context into messages (images looked up), median of a few calls; and that conversion alone
  (``context_to_messages`` of a context already read), median of a few;
- kept, extended: one pass's entries (an answer, a tool call and its result) are appended (untimed) and
  told to the cache as the runtime's Announcer does, then the timed part is what the runtime does before a
  model call: ``contexts.context`` (the session's head, the extension) and ``contexts.messages``; median
  over ``--calls`` calls (target: <= 1 ms at any size);
- kept, written elsewhere: the same, but the entries are not told (another process wrote them): the cache
  asks the store for the entries after its head (``history``), median;
- kept, unchanged: the same with nothing appended (a retry), median.

The PostgreSQL figures run in a database of their own, created for the run and dropped after it.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from anyy.domain.entries import AssistantData, EntryKind, NewEntry, ToolCallData, ToolResultData, Usage
from anyy.domain.model_io import context_to_messages
from anyy.domain.sessions import NewSession
from anyy.runtime.attachments import context_attachments
from anyy.runtime.contexts import ContextCache
from anyy.storage.protocol import SessionStore
from bench import workload
from bench.store.report import ms, say
from bench.store.stores import Workdir
from bench.store.versus import Backend, PostgresBackend, SqliteBackend

TARGET = 0.001  # seconds per model call, warm, at any size
BATCH = 1_000


def _median(call: Callable[[], Any], times: int) -> float:
    samples = []
    for _ in range(times):
        start = time.perf_counter()
        call()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def _pass(n: int) -> list[NewEntry]:
    call = f"bench_{n}"
    return [
        NewEntry(
            kind=EntryKind.ASSISTANT,
            text="",
            data=AssistantData(provider="offline", model="bench-model-1", usage=Usage(input=5_000 + n, output=40)),
        ),
        NewEntry(kind=EntryKind.TOOL_CALL, data=ToolCallData(call_id=call, name="shell", arguments={"command": "ls"})),
        NewEntry(
            kind=EntryKind.TOOL_RESULT, text="a.txt\nb.txt " * 20, data=ToolResultData(call_id=call, name="shell")
        ),
    ]


def measure(store: SessionStore, session_id: str, calls: int) -> dict[str, float]:
    def rebuild() -> None:
        context = store.context(session_id)
        context_to_messages(context, context_attachments(store, session_id, context))

    full = _median(rebuild, 3 if calls > 3 else calls)
    read = store.context(session_id)
    found = context_attachments(store, session_id, read)
    convert = _median(lambda: context_to_messages(read, found), 3 if calls > 3 else calls)
    cache = ContextCache(max_bytes=2**31)
    start = time.perf_counter()
    cache.messages(store, session_id, cache.context(store, session_id))
    first = time.perf_counter() - start
    told: list[float] = []
    asked: list[float] = []
    heads: list[float] = []
    for n in range(2 * calls):
        appended = store.append_entries(session_id, _pass(n))
        if n % 2 == 0:
            cache.appended(session_id, appended)  # the runtime wrote them: the Announcer tells the cache
        start = time.perf_counter()
        cache.messages(store, session_id, cache.context(store, session_id))
        (told if n % 2 == 0 else asked).append(time.perf_counter() - start)
        start = time.perf_counter()
        store.get_session(session_id)  # the store's head read alone, at the same moment
        heads.append(time.perf_counter() - start)
    unchanged = _median(lambda: cache.messages(store, session_id, cache.context(store, session_id)), calls)
    head_read = statistics.median(heads)  # the floor: the store's own head read, one round trip or two
    assert cache.stats.built == 1, cache.stats  # every call after the first extended the kept context
    assert cache.stats.told == calls, cache.stats
    return {
        "full": full,
        "convert": convert,
        "first": first,
        "extended": statistics.median(told),
        "extended_max": max(told),
        "asked": statistics.median(asked),
        "unchanged": unchanged,
        "head_read": head_read,
    }


def run(backend: Backend, work: workload.Workload, sizes: Sequence[int], calls: int) -> list[dict[str, Any]]:
    rows = []
    for size in sizes:
        store = backend.open(f"ctx{size}")
        session_id = store.create_session(NewSession(title=f"context {size}")).id
        for start in range(0, size, BATCH):
            store.append_entries(session_id, work.entries(start, min(start + BATCH, size)))
        got = measure(store, session_id, calls)
        store.close()
        say(
            f"  {backend.name} {size:>7,} entries: full rebuild {ms(got['full'])} (of which the conversion into "
            f"messages {ms(got['convert'])}), "
            f"first build kept {ms(got['first'])}; "
            f"kept + extended {ms(got['extended'])} (max {ms(got['extended_max'])}), written elsewhere "
            f"{ms(got['asked'])}, unchanged {ms(got['unchanged'])} (the store's get_session alone "
            f"{ms(got['head_read'])})"
            f" -> {got['extended'] / TARGET:.2f}x the 1 ms target"
        )
        rows.append({"backend": backend.name, "size": size, **got})
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.context_bench", description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--backends", default="sqlite,postgresql")
    parser.add_argument("--calls", type=int, default=30, help="model calls measured per size")
    parser.add_argument("--postgres-url", default=None, help="a server to create the bench database on")
    args = parser.parse_args(argv)
    sizes = sorted({int(s) for s in args.sizes.split(",")})
    say(f"model call context cost; load average at start {os.getloadavg()[0]:.2f} (2 cores shared: see docs)")
    work = workload.build(max(sizes))
    workdir = Workdir(None, keep=False)
    rows: list[dict[str, Any]] = []
    try:
        for name in args.backends.split(","):
            backend: Backend = SqliteBackend(workdir) if name == "sqlite" else PostgresBackend(_server(args))
            try:
                rows += run(backend, work, sizes, args.calls)
            finally:
                backend.close()
    finally:
        workdir.close()
    say(f"\n{'backend':<11} {'entries':>8} {'full rebuild':>13} {'kept+extended':>14} {'elsewhere':>10} target")
    for row in rows:
        verdict = "met" if row["extended"] <= TARGET else "MISSED"
        say(
            f"{row['backend']:<11} {row['size']:>8,} {ms(row['full']):>13} {ms(row['extended']):>14} "
            f"{ms(row['asked']):>10} <= 1 ms: {verdict} ({row['extended'] / TARGET:.2f}x)"
        )
    say(f"load average at the end {os.getloadavg()[0]:.2f}")
    return 0


def _server(args: argparse.Namespace) -> str:
    url: str | None = args.postgres_url or os.environ.get("ANYY_TEST_POSTGRES_URL")
    url_file = Path(__file__).resolve().parents[1] / ".cache" / "postgres-url"
    if not url:
        url = url_file.read_text().strip() if url_file.exists() else "postgresql://postgres@127.0.0.1:5432/test"
    return url


if __name__ == "__main__":
    raise SystemExit(main())
